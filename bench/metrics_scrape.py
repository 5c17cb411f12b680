"""/metrics scrape benchmark: a Prometheus scrape of a server whose store holds 100,000 jobs
under a policy of 100 teams.

The store: 100,000 jobs written straight into it with SQLAlchemy (one multi-row insert per
chunk, as no submit path would be faster), spread over 100 queues and 100 teams: --running
jobs RUNNING in the one pool (each team holding some of its quota), --waiting WAITING, the
rest finished (SUCCEEDED, FAILED, CANCELLED), the table's history, which a scrape must never
read. The policy file: one pool, 100 queues, 100 teams each with a quota in the pool.

The server: `TrainyardServer` in-process with its HTTP port on 127.0.0.1, the tracker not
started (it would launch the loaded jobs; a scrape reads the same store either way).

What is timed, after --warmup untimed scrapes, --repeat times each:
  http     GET /metrics over loopback, from the request's first byte to the body's last
           (the caller check, every series rendered, the transfer): the figure the goal is on
  collect  the registry rendered in-process (generate_latest), the server's share of it
Also printed: the query plan of the live-jobs count (it must name the state index).
Goal: p50 of http <= 50 ms.

Usage: .venv/bin/python bench/metrics_scrape.py [--jobs 100000] [--teams 100]
           [--repeat 200] [--database-url URL] [--json PATH]
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib import commit, goal_met, num, percentile, verdict, write_json
from prometheus_client import generate_latest
from rich.console import Console
from rich.table import Table
from sqlalchemy import insert

from trainyard.auth.policy import LOCAL_USER
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.store.schema import jobs

GOAL_P50_MS = 50.0
CHUNK = 5000
FINISHED = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)
RESULTS = Path(__file__).parent / "results" / "metrics_scrape.json"
console = Console(width=None if sys.stdout.isatty() else 110)


def policy_text(teams: int) -> str:
    lines = ["max_running = 100000", "", "[pools.cpu]", f"cpus = {teams * 16}",
             f"memory_mb = {teams * 65536}", "max_jobs = 100000", ""]
    for t in range(teams):
        lines += [f"[queues.q{t:03d}]", 'pools = ["cpu"]', f'teams = ["t{t:03d}"]', "",
                  f"[teams.t{t:03d}]", f'members = ["{LOCAL_USER}", "user{t:03d}"]',
                  f"[teams.t{t:03d}.quota.cpu]", "cpus = 16", "memory_mb = 65536", ""]
    return "\n".join(lines)


def load_jobs(srv: TrainyardServer, total: int, teams: int, running: int, waiting: int,
              rng: random.Random) -> dict[str, int]:
    """Bulk rows straight into the jobs table; returns how many of each state."""
    now = time.time()
    counts: dict[str, int] = {}

    def row(i: int) -> dict[str, Any]:
        if i < running:
            state = JobState.RUNNING
        elif i < running + waiting:
            state = JobState.WAITING
        else:
            state = FINISHED[i % len(FINISHED)]
        counts[state.value] = counts.get(state.value, 0) + 1
        team = i % teams
        submitted = now - rng.uniform(60, 30 * 86400)
        return {"id": f"bench{i:010d}", "owner": f"user{team:03d}", "name": f"job{i}",
                "command": "true", "hyperparameters": {}, "labels": {}, "cpus": 1.0,
                "memory_mb": 1024, "gpus": 0, "queue": f"q{team:03d}", "priority": 0,
                "state": state.value, "team": f"t{team:03d}",
                "pool": "cpu" if state is JobState.RUNNING else "",
                "executor": "local" if state is JobState.RUNNING else "",
                "started_at": submitted + 30 if state is JobState.RUNNING else None,
                "submitted_at": submitted, "updated_at": submitted + 30}

    for start in range(0, total, CHUNK):
        rows = [row(i) for i in range(start, min(total, start + CHUNK))]
        with srv.db.write() as conn:
            conn.execute(insert(jobs), rows)
    with srv.db.write() as conn:
        conn.exec_driver_sql("ANALYZE" if srv.db.is_sqlite else "ANALYZE jobs")
    return counts


def live_plan(srv: TrainyardServer) -> str:
    from trainyard.store.jobs import _LIVE_COUNTS

    with srv.db.read() as conn:
        sql = str(_LIVE_COUNTS.compile(conn, compile_kwargs={"literal_binds": True}))
        if srv.db.is_sqlite:
            rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}").all()
            return "; ".join(str(r[-1]) for r in rows)
        return "; ".join(str(r[0]).strip() for r in conn.exec_driver_sql(f"EXPLAIN {sql}"))


def timed(call: Callable[[], object], warmup: int, repeat: int) -> list[float]:
    for _ in range(warmup):
        call()
    out = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        out.append((time.perf_counter() - began) * 1000)
    return sorted(out)


def figures(ms: list[float]) -> dict[str, float | None]:
    return {"p50": num(percentile(ms, 50), 3), "p90": num(percentile(ms, 90), 3),
            "p99": num(percentile(ms, 99), 3), "min": num(ms[0], 3),
            "mean": num(statistics.fmean(ms), 3)}


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    policy = work / "policy.toml"
    policy.write_text(policy_text(args.teams))
    srv = TrainyardServer(ServerConfig(data_dir=work / "data", database_url=args.database_url,
                                       port=0, http_port=0, policy_file=policy))
    assert srv.http is not None and srv.metrics is not None
    try:
        began = time.perf_counter()
        counts = load_jobs(srv, args.jobs, args.teams, args.running, args.waiting,
                           random.Random(17))
        load_s = time.perf_counter() - began
        port = srv.http.bind("127.0.0.1", 0)
        srv.http.start()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        body = b""

        def scrape() -> None:
            nonlocal body
            conn.request("GET", "/metrics")
            reply = conn.getresponse()
            body = reply.read()
            assert reply.status == 200, body[:500]

        registry = srv.metrics.registry
        http_ms = timed(scrape, args.warmup, args.repeat)
        collect_ms = timed(lambda: generate_latest(registry), args.warmup, args.repeat)
        conn.close()
        plan = live_plan(srv)
        text = body.decode()
        series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
        srv.http.stop()
    finally:
        srv.db.close()
    p50 = percentile(http_ms, 50)
    return {
        "benchmark": "metrics_scrape",
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit(),
        "config": {"jobs": args.jobs, "teams": args.teams, "queues": args.teams,
                   "running": args.running, "waiting": args.waiting,
                   "repeat": args.repeat, "warmup": args.warmup,
                   "database": "sqlite" if not args.database_url else "postgresql"},
        "states": counts,
        "load_seconds": num(load_s, 2),
        "scrape_bytes": len(body),
        "scrape_series": series,
        "http_ms": figures(http_ms),
        "collect_ms": figures(collect_ms),
        "live_jobs_plan": plan,
        "live_jobs_plan_uses_state_index": "ix_jobs_state_queue_seq" in plan,
        "goals": {"scrape_p50_ms_at_most": {"target": GOAL_P50_MS, "value": num(p50, 3),
                                            "pass": goal_met("at_most", GOAL_P50_MS, p50)}},
    }


def render(results: dict[str, Any]) -> None:
    config = results["config"]
    table = Table(title=f"/metrics scrape: {config['jobs']:,} jobs ({config['running']:,} "
                        f"running, {config['waiting']:,} waiting), {config['teams']} teams, "
                        f"{config['database']}, {config['repeat']} scrapes")
    for col in ("what", "p50 ms", "p90 ms", "p99 ms", "min ms"):
        table.add_column(col, no_wrap=True)
    for key, what in (("http_ms", "GET /metrics over loopback"),
                      ("collect_ms", "registry rendered in-process")):
        f = results[key]
        table.add_row(what, *(f"{f[k]:.2f}" for k in ("p50", "p90", "p99", "min")))
    console.print(table)
    console.print(f"{results['scrape_series']:,} samples, {results['scrape_bytes']:,} bytes; "
                  f"live-jobs plan: {results['live_jobs_plan']}")
    goal = results["goals"]["scrape_p50_ms_at_most"]
    console.print(f"goal: scrape p50 <= {goal['target']:.0f} ms: {goal['value']:.2f} ms "
                  f"{verdict(goal['pass'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--teams", type=int, default=100)
    parser.add_argument("--running", type=int, default=1000)
    parser.add_argument("--waiting", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainyard-metrics-bench-") as tmp:
        results = run(args, Path(tmp))
    render(results)
    write_json(results, args.json)
    console.print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
