"""Finished jobs written straight into a store's tables, as the store itself would have left
them, for bench/scale.py: each job submitted, admitted, run once and ended SUCCEEDED, FAILED
or CANCELLED, with its label, its four events, its run, its budget row and a few metric
points (a loss at each step; half of the runs also an accuracy at their last), with each
run's last value of each metric.

Fast, and not through the API: on SQLite one connection of its own with
`synchronous=OFF` and no foreign-key checks for the load only (set back to the server's
FULL and ON after; the server's own connections set theirs at connect), one executemany per
table and chunk, one transaction per chunk; on PostgreSQL one COPY per table and chunk, one
transaction per chunk, then VACUUM ANALYZE, which autovacuum would run on its own soon
after such a load. Either way the load ends on the disk (a checkpoint, a sync), as a store
that has held its history for a while would be."""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from sqlalchemy import Table, func, select
from sqlalchemy.engine import make_url

from trainyard.store.db import Database, open_database
from trainyard.store.schema import (
    budget_usage,
    job_events,
    job_labels,
    jobs,
    metrics,
    run_final_metrics,
    runs,
)

CHUNK = 50_000  # jobs per transaction
QUEUES = ("default", "gpu", "cpu", "batch", "research")
TEAMS = ("vision", "speech", "nlp", "ranking", "infra")
OWNERS = tuple(f"user{i:02d}" for i in range(20))
FINAL = ("SUCCEEDED",) * 7 + ("FAILED",) * 2 + ("CANCELLED",)
SPAN_S = 90 * 86400.0  # the history covers three months...
QUIET_S = 3 * 3600.0  # ...ending this long ago, so every job ended before now
SORT_METRIC = "accuracy"  # what half of the runs report at their last step


@dataclass
class Rows:
    """One chunk's rows, each table's in its column order."""

    jobs: list[tuple[Any, ...]] = field(default_factory=list)
    labels: list[tuple[Any, ...]] = field(default_factory=list)
    events: list[tuple[Any, ...]] = field(default_factory=list)
    runs: list[tuple[Any, ...]] = field(default_factory=list)
    usage: list[tuple[Any, ...]] = field(default_factory=list)
    metrics: list[tuple[Any, ...]] = field(default_factory=list)
    finals: list[tuple[Any, ...]] = field(default_factory=list)

    def tables(self) -> list[tuple[Table, list[tuple[Any, ...]]]]:
        return [(jobs, self.jobs), (job_labels, self.labels), (job_events, self.events),
                (runs, self.runs), (budget_usage, self.usage), (metrics, self.metrics),
                (run_final_metrics, self.finals)]


JOB_COLUMNS = (
    "id", "client_request_id", "owner", "name", "command", "image", "kind", "framework",
    "dataset_name", "dataset_version", "hyperparameters", "labels", "cpus", "memory_mb",
    "gpus", "workers", "queue", "priority", "state", "attempt", "message", "exit_code",
    "cancel_requested", "pending_code", "pending_message", "executor", "handle", "gpu_ids",
    "team", "pool", "preempt_requested", "started_at", "held_s", "sweep_id",
    "metrics_offset", "malformed_metric_lines", "submitted_at", "updated_at", "git_commit",
    "model_name", "reproduced_from", "max_attempts", "retry_on_failure", "retry_exit_codes",
    "time_limit_s", "pending_timeout_s", "retries", "retry_after", "end_reason",
    "notice_at", "checkpoint_at", "work_lost_s", "checkpoints", "preemptions",
    "algorithm_name", "algorithm_version", "code_hash")
COLUMNS: dict[str, tuple[str, ...]] = {
    "jobs": JOB_COLUMNS,
    "job_labels": ("job_id", "key", "value"),
    "job_events": ("job_id", "from_state", "to_state", "time", "reason"),
    "runs": ("job_id", "attempt", "state", "executor", "pool", "handle", "gpu_ids",
             "image_id", "exit_code", "message", "launched_at", "started_at", "ended_at",
             "metric_points", "dropped_metric_points", "notice_at", "checkpoint_at",
             "work_lost_s"),
    "budget_usage": ("job_id", "attempt", "team", "queue", "gpus", "cpus", "started_at",
                     "ended_at"),
    "metrics": ("job_id", "attempt", "step", "key", "value", "time"),
    "run_final_metrics": ("job_id", "attempt", "key", "value", "step"),
}
ENDINGS = {"SUCCEEDED": (0, "", "exited with code 0"),
           "FAILED": (1, "exited with code 1", "exited with code 1"),
           "CANCELLED": (143, "cancelled by request", "cancelled by request")}


def check_columns() -> None:
    """Every column a row must carry is written: a table that grew a required column
    stops the load here rather than in the middle of it."""
    for table in (jobs, job_labels, job_events, runs, budget_usage, metrics,
                  run_final_metrics):
        given = set(COLUMNS[table.name])
        for column in table.columns:
            required = not column.nullable and column.server_default is None and not (
                column.primary_key and column.autoincrement in (True, "auto")
                and column.name in ("seq", "id"))
            if required and column.name not in given:
                raise RuntimeError(f"bench/scale_fill.py writes no {table.name}.{column.name}")


def chunk_rows(start: int, stop: int, total: int, now: float, rnd: random.Random) -> Rows:
    """The rows of jobs start..stop-1 of `total`, oldest first."""
    rows = Rows()
    first = now - QUIET_S - SPAN_S
    for n in range(start, stop):
        submitted = first + SPAN_S * n / total
        job_id = f"{int(submitted * 1000):x}{n:08x}"
        owner = OWNERS[n % len(OWNERS)]
        team = TEAMS[n % len(TEAMS)]
        queue = rnd.choice(QUEUES)
        state = rnd.choice(FINAL)
        exit_code, message, reason = ENDINGS[state]
        launched = submitted + rnd.uniform(0.2, 120.0)
        started = launched + rnd.uniform(0.05, 2.0)
        ended = started + rnd.uniform(20.0, 7200.0)
        handle = f"trainyard-{job_id}-1"
        cpus = float(rnd.choice((1, 2, 4)))
        suite = f"s{n % 50}"
        lr = f"{rnd.uniform(1e-4, 1e-1):.5f}"
        steps = rnd.randint(2, 4)
        reports_accuracy = n % 2 == 0
        points = steps + (1 if reports_accuracy else 0)
        rows.jobs.append((
            job_id, None, owner, f"train-{suite}-{n}", "python train.py", "", "local", "",
            None, None, json.dumps({"LR": lr}), json.dumps({"suite": suite}), cpus, 4096, 0,
            1, queue, 0, state, 1, message, exit_code, state == "CANCELLED", "", "",
            "local", handle, "", team, "local", False, started, ended - started, "", 0, 0,
            submitted, ended, "", "", "", 0, False, "[]", 0.0, 0.0, 0, None, "", None, None,
            0.0, 0, 0, None, None, ""))
        rows.labels.append((job_id, "suite", suite))
        rows.events += [
            (job_id, None, "WAITING", submitted, "submitted"),
            (job_id, "WAITING", "LAUNCHING", launched, "admitted to pool local"),
            (job_id, "LAUNCHING", "RUNNING", started, "started"),
            (job_id, "RUNNING", state, ended, reason)]
        rows.runs.append((job_id, 1, state, "local", "local", handle, "", "", exit_code,
                          message, launched, started, ended, points, 0, None, None, 0.0))
        rows.usage.append((job_id, 1, team, queue, 0, cpus, started, ended))
        loss = rnd.uniform(1.0, 3.0)
        for step in range(1, steps + 1):
            loss *= rnd.uniform(0.5, 0.95)
            at = started + (ended - started) * step / steps
            rows.metrics.append((job_id, 1, step, "loss", loss, at))
        rows.finals.append((job_id, 1, "loss", loss, steps))
        if reports_accuracy:
            accuracy = rnd.uniform(0.5, 0.99)
            rows.metrics.append((job_id, 1, steps, SORT_METRIC, accuracy, ended))
            rows.finals.append((job_id, 1, SORT_METRIC, accuracy, steps))
    return rows


def _chunks(count: int, seed: int) -> Iterator[Rows]:
    rnd = random.Random(seed)
    now = time.time()
    for start in range(0, count, CHUNK):
        yield chunk_rows(start, min(start + CHUNK, count), count, now, rnd)


def fill(url: str, count: int, seed: int = 23) -> float:
    """Write `count` finished jobs into the store at `url` (its schema migrated first);
    returns the seconds it took."""
    check_columns()
    db = open_database(url)
    began = time.monotonic()
    try:
        if db.is_sqlite:
            _fill_sqlite(db, count, seed)
        else:
            _fill_postgresql(db, count, seed)
    finally:
        db.close()
    return time.monotonic() - began


def _insert_sql(table: Table, marker: str) -> str:
    names = COLUMNS[table.name]
    return (f"INSERT INTO {table.name} ({', '.join(names)}) "
            f"VALUES ({', '.join([marker] * len(names))})")


def _fill_sqlite(db: Database, count: int, seed: int) -> None:
    raw = db.engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute("PRAGMA foreign_keys=OFF")
        cur.execute("PRAGMA synchronous=OFF")
        cur.execute("PRAGMA cache_size=-262144")  # 256 MiB, for this connection's load
        for rows in _chunks(count, seed):
            for table, values in rows.tables():
                cur.executemany(_insert_sql(table, "?"), values)
            raw.commit()
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA foreign_keys=ON")
        # Everything into the database file, and that file onto the disk: a server started
        # next must not pay for syncing what the load left in the page cache.
        cur.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cur.close()
    finally:
        raw.close()
    path = make_url(db.engine.url).database
    if path:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fill_postgresql(db: Database, count: int, seed: int) -> None:
    raw = db.engine.raw_connection()
    try:
        conn: Any = raw.driver_connection  # psycopg's own, for COPY
        for rows in _chunks(count, seed):
            with conn.cursor() as cur:
                for table, values in rows.tables():
                    names = ", ".join(COLUMNS[table.name])
                    with cur.copy(f"COPY {table.name} ({names}) FROM STDIN") as copy:
                        for row in values:
                            copy.write_row(row)
            conn.commit()
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("VACUUM ANALYZE")
            # The load's dirty buffers written out now, not by a checkpoint spread over the
            # minutes the figures are measured in (a role without the right skips it).
            with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
                cur.execute("CHECKPOINT")
        conn.autocommit = False
    finally:
        raw.close()


def counts(db: Database, tables: Sequence[Table] = (jobs, runs, job_events, metrics)
           ) -> dict[str, int]:
    """How many rows each of these tables holds."""
    with db.engine.connect() as conn:
        return {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one())
                for t in tables}
