"""Flat as the store grows: the same figures on an empty store and on one holding 1,000,000
finished jobs with their runs, events and metric points, in one run, each store behind a
real `trainyard server` process of its own (SQLite in a fresh data dir; PostgreSQL with
--postgresql or --database-url), driven over gRPC on loopback by the SDK's Client.

The full store is filled first (bench/scale_fill.py: bulk-loaded, not through the API);
then both servers run side by side and take turns, round after round, so that what else
runs on the machine weighs on both alike. Each figure's ratio is the full store's against
the empty one's (for the submit rate, empty over full; for the figures measured in rounds,
the median of the rounds' ratios); the goal is <= 1.2x for each.

  start-up   process start until the gRPC port answers a health check; the median of 5
             starts of each store's server, the two alternating
  history    on each store, 120 short jobs (queue batch, one in five failing) run to their
             end, each writing a loss and an accuracy: finished jobs of its own that every
             figure below can count on finding in both stores; then 4 `sleep` jobs running
             and 4 waiting behind them, until the end
Then --rounds rounds (3), each of the first two on one store and then on the other:
  pass       the tracker's pass as the server's own histogram trainyard_tracker_pass_seconds
             measures it, read from /metrics before and after a 5 s window: its mean (the
             median of the rounds'), its admission part beside
  submit     --submits Train calls (1,000) from 16 clients in 2 processes (bench/submit.py's
             load), jobs that stay waiting behind the running ones; the rate over the busy
             window, the median of the rounds' (and the server's CPU time per submit, from
             /proc/PID/stat, beside it)
and then the reads, one call at a time, the two stores' calls taking turns one by one:
  status     300 GetTrainingStatus calls, each of a job picked at random among the store's
             history jobs and its submitted ones; p50 and p99 of all rounds' calls shown,
             the ratio the median of the rounds' ratios (each round's p50 and p99)
  lists      30 each of: ListJobs' first page; ListJobs of SUCCEEDED or FAILED jobs (the
             loaded history's states too); ListRuns sorted by accuracy, descending; the p50
             of each, shown and compared as the status calls' are
And at the end each server's VmRSS (/proc/PID/status); then every job not ended is
cancelled and the servers stopped.

For each missed goal, bench/scale_explain.py runs the call behind the figure in this
process on the full store and prints its slowest statements with their plans and its
profile (the tracker's pass in-process has no running jobs: its statements still show what
a pass reads of the history).

Usage: .venv/bin/python bench/scale.py [--jobs 1000000] [--submits 1000] [--rounds 3]
           [--postgresql | --database-url postgresql://...] [--json PATH]

--database-url names an empty database for the full store; the empty store is a database
made beside it (its name with `_scale_empty`), dropped at the end.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from benchlib import commit, num, percentile, stop_process, verdict, wait_for_port, write_json
from chaos.servers import Postgres, find_pg_bindir, free_port
from grpc_health.v1 import health_pb2, health_pb2_grpc
from rich.console import Console
from rich.table import Table
from scale_explain import Context, where_time_goes
from scale_fill import QUEUES, SORT_METRIC, counts, fill
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from submit import Endpoint, Load, run_load, server_cpu_s

from trainyard.client import Client, TrainSpec
from trainyard.store.db import normalize_url, open_database, sqlite_url

RESULTS_DIR = Path(__file__).resolve().parent / "results"
GOAL_RATIO = 1.2
MAX_CONCURRENT = 4
RUNNING_JOBS = 4
HISTORY_JOBS = 120
HISTORY_QUEUE = "batch"
FINISHED_STATES = ("SUCCEEDED", "FAILED")
STARTS = 5
ROUNDS = 3
PASS_WINDOW_S = 5.0
STATUS_CALLS = 300
LIST_CALLS = 30
WARMUP_CALLS = 5
CLIENTS, PROCESSES = 16, 2
CALL_TIMEOUT_S = 60.0
READY_TIMEOUT_S = 60.0
SETTLE_TIMEOUT_S = 180.0
NOT_ENDED = ["WAITING", "LAUNCHING", "RUNNING", "PREEMPTED"]
console = Console(width=None if sys.stdout.isatty() else 130)


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    higher_is_better: bool = False


FIGURES = (
    Figure("submit_per_s", "submit throughput", "jobs/s", higher_is_better=True),
    Figure("status_p50_ms", "GetTrainingStatus p50", "ms"),
    Figure("status_p99_ms", "GetTrainingStatus p99", "ms"),
    Figure("list_first_page_ms", "ListJobs, first page, p50", "ms"),
    Figure("list_filtered_page_ms", "ListJobs, SUCCEEDED or FAILED, p50", "ms"),
    Figure("runs_by_metric_ms", f"ListRuns sorted by {SORT_METRIC}, p50", "ms"),
    Figure("tracker_pass_ms", f"tracker pass, {RUNNING_JOBS} jobs running (mean)", "ms"),
    Figure("startup_s", f"server start-up (median of {STARTS})", "s"),
    Figure("rss_mib", "resident memory after", "MiB"),
)


def ratio(figure: Figure, empty: dict[str, Any], full: dict[str, Any]) -> float:
    """How many times worse the full store's figure is (1: the same). A figure measured in
    rounds is the median of the rounds' own ratios, each of two rounds run back to back, so
    that a burst of other work during one round weighs on one ratio, not on the result."""
    pairs = list(zip(empty["rounds"].get(figure.key, [empty[figure.key]]),
                     full["rounds"].get(figure.key, [full[figure.key]]), strict=True))
    return statistics.median(_worse(figure, e, f) for e, f in pairs)


def _worse(figure: Figure, empty: float, full: float) -> float:
    if figure.higher_is_better:
        return empty / full if full else float("inf")
    return full / empty if empty else float("inf")


# --- one server --------------------------------------------------------------------------------


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    address: str
    http_port: int
    startup_s: float


@contextmanager
def server(workdir: Path, database_url: str) -> Iterator[Running]:
    """A `trainyard server` on the store; yields it once its gRPC port answers a health
    check, with the seconds from its start until then; always stops it."""
    port = free_port()
    http_port_file = workdir / "http-port"
    http_port_file.unlink(missing_ok=True)
    log_path = workdir / "server.log"
    cmd = [sys.executable, "-m", "trainyard.cli.main", "server", "--port", str(port),
           "--http-port", "0", "--http-port-file", str(http_port_file),
           "--data-dir", str(workdir / "data"), "--max-concurrent", str(MAX_CONCURRENT),
           # Always explicit, so a TRAINYARD_DATABASE_URL in the environment cannot leak in.
           "--database-url", database_url]
    with log_path.open("ab") as log:
        began = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        address = f"127.0.0.1:{port}"
        startup = _answers(proc, address, began)
        yield Running(proc, address, wait_for_port(proc, http_port_file, log_path), startup)
    finally:
        stop_process(proc)


def _answers(proc: subprocess.Popen[bytes], address: str, began: float) -> float:
    """Seconds from `began` until a health check on `address` is answered; a fresh channel
    for each try, so no reconnect back-off delays the answer."""
    request = health_pb2.HealthCheckRequest(service="")
    while time.monotonic() - began < READY_TIMEOUT_S:
        if proc.poll() is not None:
            break
        with grpc.insecure_channel(address) as channel:
            try:
                health_pb2_grpc.HealthStub(channel).Check(request, timeout=0.5)
                return time.monotonic() - began
            except grpc.RpcError:
                pass
        time.sleep(0.01)
    raise RuntimeError(f"the server did not answer on {address} (exit {proc.poll()})")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc")


def histogram_sums(http_port: int, names: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    """(sum, count) of each of these histograms, from the server's /metrics."""
    conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=CALL_TIMEOUT_S)
    try:
        conn.request("GET", "/metrics")
        body = conn.getresponse().read().decode()
    finally:
        conn.close()
    values: dict[str, float] = {}
    for line in body.splitlines():
        name, _, value = line.partition(" ")
        if name.endswith(("_sum", "_count")):
            values[name] = float(value)
    return {n: (values.get(f"{n}_sum", 0.0), values.get(f"{n}_count", 0.0)) for n in names}


# --- one store's figures ------------------------------------------------------------------------


def timed_turns(calls: list[Callable[[], object]], count: int) -> list[list[float]]:
    """Milliseconds of `count` calls of each, after a few untimed ones, the calls taking
    turns one by one (which goes first alternating)."""
    times: list[list[float]] = [[] for _ in calls]
    for n in range(WARMUP_CALLS + count):
        order = range(len(calls)) if n % 2 else range(len(calls) - 1, -1, -1)
        for i in order:
            t0 = time.perf_counter()
            calls[i]()
            if n >= WARMUP_CALLS:
                times[i].append((time.perf_counter() - t0) * 1000)
    return times


def settle(client: Client, queue: str = "", timeout_s: float = SETTLE_TIMEOUT_S) -> None:
    """Until no job (of `queue`, if given) is on its way."""
    deadline = time.monotonic() + timeout_s
    while client.list_jobs(states=NOT_ENDED, queue=queue, page_size=1)[0]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"jobs still on their way after {timeout_s:.0f} s")
        time.sleep(0.2)


def run_history(client: Client) -> list[str]:
    """The store's own finished jobs: short jobs that write a loss and an accuracy and end,
    one in five failing; their ids once all have ended."""
    ids = []
    for n in range(HISTORY_JOBS):
        accuracy = 0.5 + n / (2 * HISTORY_JOBS)
        command = (f"printf '{{\"step\": 1, \"loss\": 0.9}}\\n{{\"step\": 2, \"loss\": 0.5, "
                   f"\"{SORT_METRIC}\": {accuracy:.4f}}}\\n' >> \"$METRICS_PATH\""
                   + ("; exit 1" if n % 5 == 4 else ""))
        ids.append(client.train(TrainSpec(name=f"history-{n}", command=command,
                                          queue=HISTORY_QUEUE)).job_id)
    settle(client, HISTORY_QUEUE)
    return ids


def hold_slots(client: Client) -> list[str]:
    """Jobs that run until cancelled in every slot, and as many waiting behind them."""
    ids = [client.train(TrainSpec(name=f"hold-{n}", command="sleep 600")).job_id
           for n in range(2 * RUNNING_JOBS)]
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while len(client.list_jobs(states=["RUNNING"], page_size=RUNNING_JOBS)[0]) < RUNNING_JOBS:
        if time.monotonic() > deadline:
            raise TimeoutError("the holding jobs did not start")
        time.sleep(0.1)
    return ids


def tracker_pass(run: Running) -> dict[str, float]:
    """The mean of the tracker's passes, and of their admission part, over a quiet window."""
    names = ("trainyard_tracker_pass_seconds", "trainyard_scheduling_pass_seconds")
    before = histogram_sums(run.http_port, names)
    time.sleep(PASS_WINDOW_S)
    after = histogram_sums(run.http_port, names)
    out = {}
    for name, key in zip(names, ("tracker_pass_ms", "admission_pass_ms"), strict=True):
        total, passes = (a - b for a, b in zip(after[name], before[name], strict=True))
        out[key] = total * 1000 / passes if passes else float("nan")
        out[key.replace("_ms", "es")] = passes
    return out


def cancel_all(client: Client, endpoint: Endpoint) -> None:
    """Every job not ended is cancelled (the running ones stop), and ends."""
    ids: list[str] = []
    token = ""
    for _ in range(100):
        page, token = client.list_jobs(states=NOT_ENDED, page_size=1000, page_token=token)
        ids += [j.job_id for j in page]
        if not token:
            break
    if ids:
        run_load(Load("cancel", endpoint, 0, CALL_TIMEOUT_S, tuple(ids)), CLIENTS, PROCESSES)
    settle(client)


@dataclass
class Side:
    """One of the two stores, and its server while it runs."""

    name: str  # "empty" or "full"
    workdir: Path
    url: str
    submits: int  # in each round
    starts: list[float] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    submitted: list[str] = field(default_factory=list)
    rounds: dict[str, list[float]] = field(default_factory=dict)  # per round
    calls: dict[str, list[float]] = field(default_factory=dict)  # every timed call, ms

    def add(self, into: dict[str, list[float]], key: str, values: list[float]) -> None:
        into.setdefault(key, []).extend(values)


def submit_round(side: Side, run: Running) -> None:
    """The tracker's passes over a quiet window, then a round of submits, on one store."""
    passes = tracker_pass(run)
    side.add(side.rounds, "tracker_pass_ms", [passes["tracker_pass_ms"]])
    side.add(side.rounds, "admission_pass_ms", [passes["admission_pass_ms"]])
    side.add(side.rounds, "tracker_passes", [passes["tracker_passes"]])
    cpu_before = server_cpu_s(run.proc.pid) or 0.0
    load = run_load(Load("submit", Endpoint(run.address), side.submits // CLIENTS, 600.0),
                    CLIENTS, PROCESSES)
    cpu = (server_cpu_s(run.proc.pid) or 0.0) - cpu_before
    if load.errors:
        raise RuntimeError(f"{load.errors} submits failed: {load.first_error}")
    side.add(side.rounds, "submit_per_s", [load.per_s])
    side.add(side.rounds, "submit_p50_ms", [load.p50_ms])
    side.add(side.rounds, "submit_server_cpu_ms", [cpu * 1000 / max(1, load.calls)])
    side.submitted += load.job_ids


def read_round(sides: tuple[Side, Side], clients: list[Client], rnd: random.Random) -> None:
    """The reads, the two stores' calls alternating one by one."""
    def status(side: Side, client: Client) -> Callable[[], object]:
        return lambda: client.status(rnd.choice(rnd.choice((side.history, side.submitted))))

    def first_page(_side: Side, client: Client) -> Callable[[], object]:
        return lambda: client.list_jobs()

    def filtered(_side: Side, client: Client) -> Callable[[], object]:
        return lambda: client.list_jobs(states=list(FINISHED_STATES))

    def by_metric(_side: Side, client: Client) -> Callable[[], object]:
        return lambda: client.list_runs(sort=SORT_METRIC, descending=True)

    for key, make, count in (("status", status, STATUS_CALLS),
                             ("list_first_page", first_page, LIST_CALLS),
                             ("list_filtered_page", filtered, LIST_CALLS),
                             ("runs_by_metric", by_metric, LIST_CALLS)):
        calls = [make(side, client) for side, client in zip(sides, clients, strict=True)]
        for side, times in zip(sides, timed_turns(calls, count), strict=True):
            keep_round(side, key, times)


def keep_round(side: Side, key: str, times: list[float]) -> None:
    """One round's calls of one read: kept with every round's (the figures shown), and the
    round's own figures beside (the ratio is the median of the rounds' ratios)."""
    side.add(side.calls, key, times)
    ordered = sorted(times)
    for figure, q in READ_FIGURES[key]:
        side.add(side.rounds, figure, [percentile(ordered, q)])


# Each read's figures and their percentiles: of all rounds' calls, and of each round's.
READ_FIGURES = {"status": (("status_p50_ms", 50), ("status_p99_ms", 99)),
                "list_first_page": (("list_first_page_ms", 50),),
                "list_filtered_page": (("list_filtered_page_ms", 50),),
                "runs_by_metric": (("runs_by_metric_ms", 50),)}


def figures_of(side: Side, rss: float) -> dict[str, float]:
    calls = side.calls
    figures = {key: statistics.median(values) for key, values in side.rounds.items()}
    figures.update({
        "tracker_passes": sum(side.rounds["tracker_passes"]),
        "status_p50_ms": percentile(sorted(calls["status"]), 50),
        "status_p99_ms": percentile(sorted(calls["status"]), 99),
        "startup_s": statistics.median(side.starts),
        "rss_mib": rss,
    })
    for key in ("list_first_page", "list_filtered_page", "runs_by_metric"):
        figures[f"{key}_ms"] = percentile(sorted(calls[key]), 50)
        figures[f"{key}_p99_ms"] = percentile(sorted(calls[key]), 99)
    return figures


def measure(sides: tuple[Side, Side], rounds: int, seed: int) -> dict[str, dict[str, Any]]:
    """Every figure of both stores, their servers taking turns in each round so that what
    else runs on the machine meanwhile weighs on both alike."""
    for n in range(STARTS):
        for side in sides[::-1] if n % 2 else sides:
            with server(side.workdir, side.url) as started:
                side.starts.append(started.startup_s)
    console.log("start-up: " + "; ".join(
        f"{s.name} {', '.join(f'{t:.2f}' for t in s.starts)} s" for s in sides))
    rnd = random.Random(seed)
    with ExitStack() as stack:
        runs = [stack.enter_context(server(s.workdir, s.url)) for s in sides]
        clients = [stack.enter_context(Client(r.address, timeout=CALL_TIMEOUT_S))
                   for r in runs]
        for side, client in zip(sides, clients, strict=True):
            console.log(f"{side.name}: {HISTORY_JOBS} history jobs, then {RUNNING_JOBS} "
                        "running and as many waiting")
            side.history = run_history(client)
            hold_slots(client)
        for n in range(rounds):
            for i in [1, 0] if n % 2 else [0, 1]:
                console.log(f"round {n + 1} of {rounds}, {sides[i].name}: the tracker's "
                            f"passes for {PASS_WINDOW_S:.0f} s, {sides[i].submits:,} submits")
                submit_round(sides[i], runs[i])
            console.log(f"round {n + 1} of {rounds}: {STATUS_CALLS} statuses and the lists "
                        f"x{LIST_CALLS} of each store, in turns")
            read_round(sides, clients, rnd)
        rss = [rss_mib(r.proc.pid) for r in runs]
        for run, client in zip(runs, clients, strict=True):
            cancel_all(client, Endpoint(run.address))
    return {s.name: {**figures_of(s, m), "rounds": s.rounds, "starts": s.starts}
            for s, m in zip(sides, rss, strict=True)}


# --- the run -------------------------------------------------------------------------------------


@contextmanager
def stores(args: argparse.Namespace, workdir: Path) -> Iterator[tuple[str, str, str]]:
    """(the database, the empty store's URL, the one to fill), both empty."""
    for name in ("empty", "full"):  # each server's data dir, whatever the database
        (workdir / name / "data").mkdir(parents=True)
    if not args.postgresql and not args.database_url:
        yield ("sqlite", sqlite_url(workdir / "empty" / "data"),
               sqlite_url(workdir / "full" / "data"))
        return
    pg = None
    url = args.database_url
    if not url:
        bindir = find_pg_bindir()
        if bindir is None:
            raise SystemExit("PostgreSQL is not installed (initdb not found)")
        pg = Postgres(bindir).create()
        url = pg.url
    # The empty store: a database of its own beside the one given, dropped at the end.
    beside = make_url(url)
    empty_name = f"{beside.database}_scale_empty"
    admin = create_engine(normalize_url(url), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{empty_name}"')
        try:
            yield ("postgresql",
                   beside.set(database=empty_name).render_as_string(hide_password=False), url)
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{empty_name}" WITH (FORCE)')
    finally:
        admin.dispose()
        if pg is not None:
            pg.destroy()


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-scale-") as tmp:
        workdir = Path(tmp)
        with stores(args, workdir) as (database, empty_url, full_url):
            for url in (empty_url, full_url):
                db = open_database(url)
                try:
                    if counts(db)["jobs"]:
                        raise SystemExit("the database already holds jobs; give an empty one")
                finally:
                    db.close()
            console.log(f"filling the full store ({database}) with {args.jobs:,} finished jobs")
            fill_s = fill(full_url, args.jobs, args.seed)
            db = open_database(full_url)
            try:
                rows = counts(db)
            finally:
                db.close()
            console.log(f"  {fill_s:.0f} s: " + ", ".join(f"{n:,} {t}" for t, n in
                                                          rows.items()))
            sides = (Side("empty", workdir / "empty", empty_url, args.submits),
                     Side("full", workdir / "full", full_url, args.submits))
            figures = measure(sides, args.rounds, args.seed)
            empty, full = figures["empty"], figures["full"]
            missed = [f.key for f in FIGURES
                      if ratio(f, empty, full) > GOAL_RATIO]
            explained: dict[str, Any] = {}
            if missed:
                console.log(f"where the time goes: {', '.join(missed)}")
                explained = where_time_goes(Context(
                    sides[1].workdir / "data", full_url, sides[1].history[0],
                    FINISHED_STATES, SORT_METRIC), missed)
            return results_dict(args, database, empty, full, fill_s, rows, explained)


def results_dict(args: argparse.Namespace, database: str, empty: dict[str, Any],
                 full: dict[str, Any], fill_s: float, rows: dict[str, int],
                 explained: dict[str, Any]) -> dict[str, Any]:
    goals = {}
    for f in FIGURES:
        r = ratio(f, empty, full)
        goals[f.key] = {"label": f.label, "unit": f.unit, "empty": num(empty[f.key], 3),
                        "full": num(full[f.key], 3), "ratio": num(r, 3),
                        "target": GOAL_RATIO, "pass": r <= GOAL_RATIO}
    return {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "config": {"database": database, "jobs": args.jobs, "submits_per_round": args.submits,
                   "rounds": args.rounds,
                   "submit_clients": CLIENTS, "submit_processes": PROCESSES,
                   "history_jobs": HISTORY_JOBS, "running_jobs": RUNNING_JOBS,
                   "status_calls_per_round": STATUS_CALLS,
                   "list_calls_per_round": LIST_CALLS,
                   "pass_window_s": PASS_WINDOW_S, "starts": STARTS,
                   "max_concurrent": MAX_CONCURRENT, "queues": list(QUEUES)},
        "fill_s": num(fill_s, 1),
        "rows": rows,
        "empty": _rounded(empty),
        "full": _rounded(full),
        "goals": goals,
        "where_the_time_goes": explained,
    }


def _rounded(figures: dict[str, Any]) -> dict[str, Any]:
    """Each figure rounded, and each round's and start's value kept beside them."""
    out: dict[str, Any] = {}
    for key, value in figures.items():
        if key == "rounds":
            out[key] = {name: [num(v, 3) for v in values] for name, values in value.items()}
        elif key == "starts":
            out[key] = [num(v, 3) for v in value]
        else:
            out[key] = num(value, 3)
    return out


def render(results: dict[str, Any]) -> None:
    config = results["config"]
    table = Table(title=f"Trainyard on an empty store and with {config['jobs']:,} finished "
                        f"jobs ({config['database']})",
                  caption="ratio: how many times worse on the full store (rates: empty/full); "
                          "for all but start-up and memory the median of the rounds' ratios")
    for col in ("figure", "empty", "full", "ratio", f"goal <= {GOAL_RATIO}x"):
        table.add_column(col, justify="left" if col == "figure" else "right", no_wrap=True)
    for goal in results["goals"].values():
        table.add_row(f"{goal['label']} ({goal['unit']})", _shown(goal["empty"]),
                      _shown(goal["full"]), f"{goal['ratio']:.2f}x", verdict(goal["pass"]))
    console.print(table)
    for key, found in results["where_the_time_goes"].items():
        console.rule(f"{results['goals'][key]['label']}: {found['call_ms']} ms in-process")
        for statement in found["statements"]:
            console.print(f"[bold]{statement['calls']} x {statement['ms_per_call']} ms[/] "
                          f"{statement['sql'][:300]}", highlight=False)
            for line in statement["plan"]:
                console.print(f"    {line}", highlight=False)
        for line in found["profile"]:
            console.print(line, highlight=False, soft_wrap=True)


def _shown(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--jobs", type=int, default=1_000_000, help="finished jobs in the full store")
    p.add_argument("--submits", type=int, default=1000,
                   help="Train calls in each of the rounds timed on each store")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--postgresql", action="store_true",
                       help="a throwaway PostgreSQL of its own instead of SQLite")
    where.add_argument("--database-url", default="",
                       help="postgresql://... of an empty database, instead of SQLite")
    p.add_argument("--json", type=Path, default=None, help="where to write the results "
                   "[default: bench/results/scale.json, scale-postgresql.json]")
    p.add_argument("--rounds", type=int, default=ROUNDS,
                   help="rounds of the figures, the two stores taking turns")
    p.add_argument("--seed", type=int, default=23)
    args = p.parse_args()
    if args.jobs < 1 or args.submits < CLIENTS or args.rounds < 1:
        p.error(f"--jobs and --rounds must be at least 1, --submits at least {CLIENTS}")
    if args.json is None:
        pg = args.postgresql or args.database_url
        args.json = RESULTS_DIR / ("scale-postgresql.json" if pg else "scale.json")
    return args


def main() -> int:
    args = parse_args()
    results = run(args)
    render(results)
    write_json(results, args.json)
    console.print(f"results: {args.json}")
    return 0 if all(g["pass"] for g in results["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
