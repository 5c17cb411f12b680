"""The physical limits, measured in the same run: what no scheduler can beat on this machine.

- fork/exec: the very command a trivial job runs (`date ... > stamp; true` under /bin/sh),
  started by this process, timed like the systems (before the spawn -> the command's own
  start stamp), and 500 of them two at a time for the end-to-end ceiling;
- the trainer run alone, and `slots` runs at a time for the ideal makespan of the training
  workload: the workload runs that many at once, and on a machine whose every CPU then
  trains, each run may be slower than one alone (shared caches and memory bandwidth), which
  no scheduler can win back;
- a SQLite commit (WAL, synchronous=FULL, as Trainyard's store): the floor of a durable
  submit;
- a shell moving itself into a fresh pids cgroup, as a local job's wrapper does to enter its
  process cap, against the same shell without the move: what the kernel makes every local
  job's start wait (on cgroup v1, an RCU grace period per move);
- the bare gRPC call and the raw `docker run` are measured where their servers run
  (trainyard_sys.health_checks, docker_start)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from peers import figures as fig
from peers import procs
from peers.workloads import Stamps, timed_command, trivial_command
from trainyard.executors.pids_limit import PidsLimit


def _sh(command: str, timeout: float = 60.0) -> None:
    subprocess.run(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, check=True,
                   timeout=timeout, env=procs.env())


@dataclass(frozen=True)
class ForkExec:
    start_ms: list[float]
    e2e_jobs_per_s: float


def fork_exec(stamps: Stamps, samples: int, jobs: int, slots: int) -> ForkExec:
    starts: list[float] = []
    for i in range(samples):
        key = f"fork-{i}"
        t0 = time.time_ns()
        _sh(trivial_command(stamps, key))
        started = stamps.read(key, "start")
        if started is not None:
            starts.append((started - t0) / 1e6)
    keys = [f"fork-e2e-{i}" for i in range(jobs)]
    began = time.perf_counter()
    with ThreadPoolExecutor(slots) as pool:
        list(pool.map(lambda k: _sh(trivial_command(stamps, k)), keys))
    return ForkExec(starts, fig.rate(jobs, time.perf_counter() - began))


def trainer_runs(stamps: Stamps, body: Callable[[str], str], runs: int, slots: int,
                 tag: str) -> list[float]:
    """Seconds per run of the training command (`body` of a run's key), from its own stamps,
    `slots` runs at a time, started straight from this process."""
    keys = [f"trainer-{tag}-{i}" for i in range(runs)]
    with ThreadPoolExecutor(slots) as pool:
        list(pool.map(lambda k: _sh(timed_command(stamps, k, body(k))), keys))
    out = []
    for key in keys:
        start, end = stamps.read(key, "start"), stamps.read(key, "end")
        if start is not None and end is not None:
            out.append((end - start) / 1e9)
    return out


@dataclass(frozen=True)
class Commits:
    p50_ms: float
    per_s: float


def sqlite_commits(path: Path, commits: int) -> Commits:
    """One small row and one commit at a time, WAL and synchronous=FULL."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, spec TEXT NOT NULL)")
        times: list[float] = []
        t_all = time.perf_counter()
        for i in range(commits):
            t0 = time.perf_counter()
            db.execute("BEGIN")
            db.execute("INSERT INTO jobs (spec) VALUES (?)", (f"job {i}: true",))
            db.execute("COMMIT")
            times.append((time.perf_counter() - t0) * 1000)
        return Commits(fig.pct(times, 50), fig.rate(commits, time.perf_counter() - t_all))
    finally:
        db.close()


CAP_SPACING_S = 0.02  # between moves: about as far apart as consecutive jobs' starts


@dataclass(frozen=True)
class CapMove:
    move_p50_ms: float  # the shell that moved itself, less the same shell alone
    shell_p50_ms: float


def cap_move(samples: int) -> CapMove | None:
    """None where this process may make no pids cgroup (local jobs then run uncapped)."""
    base = PidsLimit().base
    if base is None:
        return None
    moved: list[float] = []
    alone: list[float] = []
    for i in range(samples):
        group = base / f"bench-cap-move-{os.getpid()}-{i}"
        group.mkdir()
        try:
            alone.append(_timed_sh("true"))
            time.sleep(CAP_SPACING_S)
            moved.append(_timed_sh(f'printf "%s\\n" "$$" > {group}/cgroup.procs'))
            time.sleep(CAP_SPACING_S)
        finally:
            _remove_when_empty(group)
    shell = fig.pct(alone, 50)
    return CapMove(fig.pct(moved, 50) - shell, shell)


def _timed_sh(command: str) -> float:
    t0 = time.perf_counter()
    _sh(command)
    return (time.perf_counter() - t0) * 1000


def _remove_when_empty(group: Path) -> None:
    for _ in range(100):  # its shell is gone once reaped: bounded, a second at most
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.01)


def median(values: Sequence[float]) -> float:
    return fig.pct(list(values), 50)
