"""The web dashboard's and the JSON API's reads with a full store: 100,000 jobs bulk-inserted
straight into the store's tables, then a real `trainyard server` (in its own process)
answering, one request at a time over one keep-alive connection on loopback:

  page      GET /                       the jobs page's HTML
  list      GET /api/v1/jobs            the first page, newest first
  filtered  GET /api/v1/jobs?states=SUCCEEDED&queue=Q   a filtered first page

With one client and nothing else running, a request's round trip is the server's time for
it plus a loopback hop; its p50 and p90 are reported, the goal is p50 <= 100 ms.

Usage: .venv/bin/python bench/web.py [--jobs 100000] [--requests 200] [--json PATH]
                                     [--database-url postgresql://...]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlib import (
    commit,
    goal_met,
    num,
    percentile,
    stop_process,
    verdict,
    wait_for_port,
    write_json,
)
from rich.console import Console
from rich.table import Table
from sqlalchemy import func, insert, select

from trainyard.store.db import open_database, sqlite_url
from trainyard.store.schema import job_events, job_labels, jobs

RESULTS = Path(__file__).resolve().parent / "results" / "web.json"
GOAL_P50_MS = 100.0
QUEUES = ("default", "gpu", "cpu", "batch", "research")
FINAL = ("SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "FAILED", "CANCELLED")
OWNERS = tuple(f"user{i}" for i in range(20))
BATCH = 5000
CALL_TIMEOUT_S = 30.0
console = Console(width=None if sys.stdout.isatty() else 120)


def fill(database_url: str, count: int, seed: int = 17) -> float:
    """`count` finished jobs (each with a label and its two events), as the store would
    have written them; the seconds it took. Finished, so the tracker has nothing to do."""
    rnd = random.Random(seed)
    db = open_database(database_url)
    started = time.monotonic()
    try:
        with db.engine.begin() as conn:
            if conn.execute(select(func.count()).select_from(jobs)).scalar_one():
                raise RuntimeError("the database already holds jobs; use an empty one")
        base = time.time() - count
        for start in range(0, count, BATCH):
            rows, labels, events = [], [], []
            for n in range(start, min(start + BATCH, count)):
                job_id = f"{int((base + n) * 1000):x}{n:08x}"
                state, at = rnd.choice(FINAL), base + n
                rows.append({
                    "id": job_id, "client_request_id": None, "owner": rnd.choice(OWNERS),
                    "name": f"train-{n}", "command": "true", "image": "", "kind": "local",
                    "framework": "", "dataset_name": None, "dataset_version": None,
                    "hyperparameters": {"LR": f"{rnd.random():.4f}"},
                    "labels": {"suite": f"s{n % 50}"}, "cpus": 1.0, "memory_mb": 1024,
                    "gpus": 0, "workers": 1, "queue": rnd.choice(QUEUES), "priority": 0,
                    "state": state, "attempt": 1, "message": "", "cancel_requested": False,
                    "exit_code": 0 if state == "SUCCEEDED" else 1, "pending_code": "",
                    "pending_message": "", "executor": "local", "handle": "", "gpu_ids": "",
                    "team": "", "pool": "local", "preempt_requested": False,
                    "started_at": at + 0.1, "held_s": 0.5, "sweep_id": "", "metrics_offset": 0,
                    "malformed_metric_lines": 0, "submitted_at": at, "updated_at": at + 0.6,
                    "git_commit": "", "model_name": "", "reproduced_from": ""})
                labels.append({"job_id": job_id, "key": "suite", "value": f"s{n % 50}"})
                events.append({"job_id": job_id, "from_state": None, "to_state": "WAITING",
                               "time": at, "reason": "submitted"})
                events.append({"job_id": job_id, "from_state": "RUNNING", "to_state": state,
                               "time": at + 0.6, "reason": "exited"})
            with db.engine.begin() as conn:
                conn.execute(insert(jobs), rows)
                conn.execute(insert(job_labels), labels)
                conn.execute(insert(job_events), events)
    finally:
        db.close()
    return time.monotonic() - started


@contextmanager
def server(workdir: Path, database_url: str) -> Iterator[int]:
    """A `trainyard server` on the store; yields its HTTP port; always stops it."""
    port_file, http_port_file = workdir / "port", workdir / "http-port"
    log_path = workdir / "server.log"
    cmd = [sys.executable, "-m", "trainyard.cli.main", "server", "--port", "0",
           "--http-port", "0", "--port-file", str(port_file), "--http-port-file",
           str(http_port_file), "--data-dir", str(workdir / "data"),
           "--database-url", database_url]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        wait_for_port(proc, port_file, log_path)
        yield wait_for_port(proc, http_port_file, log_path)
    finally:
        stop_process(proc)


@dataclass(frozen=True)
class Figures:
    name: str
    path: str
    requests: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    bytes: int  # of one reply
    items: int | None  # jobs in one reply, for the API's pages


def measure(port: int, name: str, path: str, requests: int, warmup: int = 5) -> Figures:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CALL_TIMEOUT_S)
    times: list[float] = []
    body = b""
    try:
        for i in range(warmup + requests):
            t0 = time.perf_counter()
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            elapsed = time.perf_counter() - t0
            if response.status != 200:
                raise RuntimeError(f"{path}: HTTP {response.status}: {body[:200]!r}")
            if i >= warmup:
                times.append(elapsed * 1000)
    finally:
        conn.close()
    times.sort()
    items = len(json.loads(body)["jobs"]) if path.startswith("/api/") else None
    return Figures(name, path, len(times), percentile(times, 50), percentile(times, 90),
                   percentile(times, 99), len(body), items)


def run(args: argparse.Namespace) -> tuple[list[Figures], float]:
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-web-") as tmp:
        workdir = Path(tmp)
        url = args.database_url or sqlite_url(workdir / "data")
        (workdir / "data").mkdir()
        console.log(f"inserting {args.jobs:,} jobs")
        fill_s = fill(url, args.jobs)
        console.log(f"   {fill_s:.1f} s; starting the server")
        with server(workdir, url) as port:
            figures = []
            for name, path in (("page", "/"), ("list", "/api/v1/jobs"),
                               ("filtered", "/api/v1/jobs?states=SUCCEEDED&queue=gpu")):
                console.log(f"{name}: GET {path}, {args.requests} requests")
                figures.append(measure(port, name, path, args.requests))
    return figures, fill_s


def results_dict(figures: list[Figures], fill_s: float,
                 args: argparse.Namespace) -> dict[str, Any]:
    return {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "config": {"jobs": args.jobs, "requests": args.requests,
                   "database": "postgresql" if args.database_url else "sqlite",
                   "clients": 1, "connection": "keep-alive, loopback"},
        "fill_s": num(fill_s, 1),
        "requests": {f.name: {"path": f.path, "p50_ms": num(f.p50_ms), "p90_ms": num(f.p90_ms),
                              "p99_ms": num(f.p99_ms), "reply_bytes": f.bytes,
                              "jobs_in_reply": f.items, "requests": f.requests}
                     for f in figures},
        "goals": {f"{f.name}_p50_ms_at_most": {
            "target": GOAL_P50_MS, "value": num(f.p50_ms),
            "pass": goal_met("at_most", GOAL_P50_MS, f.p50_ms)} for f in figures},
    }


def render(figures: list[Figures], results: dict[str, Any]) -> None:
    config = results["config"]
    table = Table(title=f"Trainyard web reads: {config['jobs']:,} jobs in {config['database']}, "
                        "one keep-alive client",
                  caption="round trip on loopback: the server's time plus one hop")
    goal_column = f"p50 <= {GOAL_P50_MS:g} ms"
    for col in ("request", "p50 ms", "p90 ms", "p99 ms", "bytes", "jobs", goal_column):
        table.add_column(col, justify="left" if col == "request" else "right", no_wrap=True)
    for f in figures:
        goal = results["goals"][f"{f.name}_p50_ms_at_most"]["pass"]
        table.add_row(f"GET {f.path}", f"{f.p50_ms:.2f}", f"{f.p90_ms:.2f}", f"{f.p99_ms:.2f}",
                      f"{f.bytes:,}", "" if f.items is None else str(f.items), verdict(goal))
    console.print(table)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--jobs", type=int, default=100_000, help="jobs in the store")
    p.add_argument("--requests", type=int, default=200, help="timed requests of each kind")
    p.add_argument("--json", type=Path, default=RESULTS, help="where to write the results")
    p.add_argument("--database-url", default="",
                   help="postgresql://... of an empty database, instead of SQLite")
    args = p.parse_args()
    if args.jobs < 1 or args.requests < 1:
        p.error("--jobs and --requests must be at least 1")
    return args


def main() -> int:
    args = parse_args()
    figures, fill_s = run(args)
    results = results_dict(figures, fill_s, args)
    render(figures, results)
    write_json(results, args.json)
    console.print(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
