"""Where the time of a figure goes, for bench/scale.py: the call behind it run in this process
against the same store (the server stopped), every SQL statement it sent recorded with its
time, the slowest shown with their plan (EXPLAIN QUERY PLAN on SQLite; EXPLAIN ANALYZE of a
SELECT, plain EXPLAIN of a write, on PostgreSQL), and a profile of the call's own functions."""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

from trainyard.auth.policy import LOCAL
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.services.runs import RunQuery

SHOWN_STATEMENTS = 3
PROFILE_LINES = 12


@dataclass
class Statement:
    sql: str
    params: Any
    calls: int = 0
    seconds: float = 0.0


@dataclass
class Recorder:
    """Each distinct statement an engine ran, with its first parameters, calls and time."""

    statements: dict[str, Statement] = field(default_factory=dict)
    _began: float = 0.0

    def before(self, _conn: Any, _cursor: Any, sql: str, params: Any, _ctx: Any,
               many: bool) -> None:
        self._began = time.perf_counter()

    def after(self, _conn: Any, _cursor: Any, sql: str, params: Any, _ctx: Any,
              many: bool) -> None:
        found = self.statements.get(sql)
        if found is None:
            first = params[0] if many and params else params
            found = self.statements[sql] = Statement(sql, first)
        found.calls += 1
        found.seconds += time.perf_counter() - self._began

    def slowest(self, count: int) -> list[Statement]:
        return sorted(self.statements.values(), key=lambda s: -s.seconds)[:count]


@contextmanager
def recording() -> Iterator[Recorder]:
    """What every engine runs meanwhile (a server made inside the call has one of its own)."""
    recorder = Recorder()
    event.listen(Engine, "before_cursor_execute", recorder.before)
    event.listen(Engine, "after_cursor_execute", recorder.after)
    try:
        yield recorder
    finally:
        event.remove(Engine, "before_cursor_execute", recorder.before)
        event.remove(Engine, "after_cursor_execute", recorder.after)


def plan(engine: Engine, statement: Statement) -> list[str]:
    """The statement's plan, one line a step."""
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        if engine.dialect.name == "sqlite":
            cur.execute(f"EXPLAIN QUERY PLAN {statement.sql}", statement.params or ())
            return [f"{'  ' * _depth(rows, r)}{r[3]}" for rows in [cur.fetchall()] for r in rows]
        reads = statement.sql.lstrip().upper().startswith("SELECT")
        prefix = "EXPLAIN (ANALYZE, BUFFERS) " if reads else "EXPLAIN "
        cur.execute(prefix + statement.sql, statement.params or None)
        return [str(r[0]) for r in cur.fetchall()]
    finally:
        raw.rollback()
        raw.close()


def _depth(rows: list[Any], row: Any) -> int:
    """How deep a row of SQLite's plan sits: its parents' chain."""
    parents = {r[0]: r[1] for r in rows}
    depth, parent = 0, row[1]
    while parent in parents:
        depth, parent = depth + 1, parents[parent]
    return depth


def profiled(call: Callable[[], object], repeat: int) -> tuple[float, list[str]]:
    """The call's mean seconds over `repeat` runs, and its profile's top entries by
    cumulative time, trainyard's functions only."""
    profile = cProfile.Profile()
    began = time.perf_counter()
    profile.enable()
    for _ in range(repeat):
        call()
    profile.disable()
    mean = (time.perf_counter() - began) / repeat
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out).sort_stats("cumulative")
    stats.print_stats("trainyard", PROFILE_LINES)
    lines = [line.rstrip() for line in out.getvalue().splitlines()
             if "trainyard" in line or line.lstrip().startswith("ncalls")]
    return mean, lines


@dataclass(frozen=True)
class Context:
    """What the calls below need of the run: the store, and jobs of its own in it."""

    data_dir: Path
    database_url: str
    finished_job: str  # a job of the run that ended, with its metrics
    states: tuple[str, ...]  # of the filtered page
    sort_metric: str


def calls(server: TrainyardServer, ctx: Context) -> dict[str, Callable[[], object]]:
    """The server-side call behind each figure, by figure key."""
    jobs, runs = server.service, server.runs
    states = [JobState(s) for s in ctx.states]

    def submit() -> object:
        return jobs.train(LOCAL, JobSpec(name="explain", command="true"))

    def tracker_pass() -> object:
        return server.tracker.run_once()

    def start() -> object:
        """What a start reads of the store before it serves: the assembly, the check of
        the active jobs' executors, fair share's usage and recovery."""
        again = TrainyardServer(server.config)
        try:
            again.tracker.missing_executors()
            again.tracker.fair_share.load()
            again.tracker.recover()
        finally:
            close(again)
        return again

    return {
        "submit_per_s": submit,
        "status_p50_ms": lambda: jobs.status(LOCAL, ctx.finished_job),
        "status_p99_ms": lambda: jobs.status(LOCAL, ctx.finished_job),
        "list_first_page_ms": lambda: jobs.list_jobs(LOCAL),
        "list_filtered_page_ms": lambda: jobs.list_jobs(LOCAL, states=states),
        "runs_by_metric_ms": lambda: runs.list_runs(LOCAL, RunQuery(
            sort_metric=ctx.sort_metric, descending=True)),
        "tracker_pass_ms": tracker_pass,
        "startup_s": start,
    }


def where_time_goes(ctx: Context, keys: list[str], repeat: int = 5) -> dict[str, Any]:
    """For each figure key: the call's mean time in-process, its slowest statements with
    their plans, and its profile."""
    config = ServerConfig(data_dir=ctx.data_dir, database_url=ctx.database_url, port=0)
    server = TrainyardServer(config)
    found: dict[str, Any] = {}
    try:
        behind = calls(server, ctx)
        # The submits last, so that the tracker's pass here finds none of them to run.
        for key in sorted(keys, key=lambda k: k == "submit_per_s"):
            call = behind.get(key)
            if call is None:
                continue
            call()  # once first: caches warm, as in the server
            with recording() as recorder:
                mean, profile = profiled(call, repeat)
            found[key] = {
                "call_ms": round(mean * 1000, 2),
                "statements": [{
                    "sql": " ".join(s.sql.split())[:600], "calls": s.calls,
                    "ms_per_call": round(s.seconds * 1000 / s.calls, 3),
                    "plan": plan(server.db.engine, s)} for s in recorder.slowest(
                        SHOWN_STATEMENTS)],
                "profile": profile,
            }
    finally:
        close(server)
    return found


def close(server: TrainyardServer) -> None:
    """A server that was never started: its executors and its store."""
    for executor in server.executors.values():
        executor.close()
    server.db.close()
