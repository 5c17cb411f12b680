"""Dependencies restarting under a running workload: PostgreSQL stopped and started again
(submits during the outage must be refused with UNAVAILABLE and a retry hint, none
acknowledged lost), the Docker engine restarted while containers run (dockerd stops them:
their attempts are lost and run again), and the data directory's disk filling up (a clear
refusal, the store intact, service back once there is room). Quick: fewer jobs, shorter
outages."""

from __future__ import annotations

import contextlib
import random
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchlib import num

from chaos.checks import FINAL, GaveUp, Verdict, retried, verify, wait_quiet
from chaos.servers import (
    Dockerd,
    Postgres,
    Server,
    find_pg_bindir,
    remove_containers,
    stop_jobs,
)
from chaos.workload import MARKER, RAN, mixed, spec
from trainyard.client import Client, TrainSpec
from trainyard.client.errors import TrainyardError

QUIET_TIMEOUT_S = 300.0
SUBMIT_PAUSE_S = 0.2
DISK_MB = 64
RETRY_HINT = "retry"  # what an UNAVAILABLE refusal's sentence must say


class Submitter:
    """Submits jobs one after another with request ids, each until acknowledged, and notes
    every refusal: its code, and whether an UNAVAILABLE one says to retry."""

    def __init__(self, client: Client, run_id: str, make: Any) -> None:
        self.client = client
        self.run_id = run_id
        self.make = make  # index -> TrainSpec
        self.acknowledged: set[str] = set()
        self.refusals: Counter[str] = Counter()
        self.without_hint = 0
        self.examples: dict[str, str] = {}
        self.stopping = threading.Event()
        self.count = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.error: BaseException | None = None

    def submit(self, job: TrainSpec, deadline_s: float = 120.0) -> str | None:
        deadline = time.monotonic() + deadline_s
        while True:
            try:
                job_id = self.client.train(job).job_id
                self.acknowledged.add(job_id)
                return job_id
            except TrainyardError as exc:
                self.refusals[exc.code] += 1
                self.examples.setdefault(exc.code, exc.message[:300])
                if exc.code == "UNAVAILABLE" and RETRY_HINT not in exc.message.lower():
                    self.without_hint += 1
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.3)

    def _loop(self) -> None:
        try:
            while not self.stopping.is_set():
                self.submit(self.make(self.count))
                self.count += 1
                time.sleep(SUBMIT_PAUSE_S)
        except BaseException as exc:  # reported by the scenario
            self.error = exc

    def __enter__(self) -> Submitter:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        self.thread.join(timeout=180)
        if self.error is not None:
            raise self.error

    def figures(self) -> dict[str, Any]:
        return {"submits": self.count, "refused": dict(self.refusals),
                "unavailable_without_retry_hint": self.without_hint,
                "internal_errors": self.refusals.get("INTERNAL", 0),
                "refusal_examples": self.examples}


def finish(server: Server, acknowledged: set[str]) -> dict[str, Any]:
    with server.client(timeout=20) as client:
        quiet_s = wait_quiet(client, QUIET_TIMEOUT_S)
        verdict: Verdict = verify(client, server.data_dir, acknowledged)
    return {**verdict.figures(), "quiet_after_s": num(quiet_s)}


def postgres_restart(workdir: Path, quick: bool) -> dict[str, Any]:
    bindir = find_pg_bindir()
    if bindir is None:
        return {"error": "PostgreSQL is not installed (initdb not found)"}
    pg = Postgres(bindir).create()
    server = Server(workdir, database_url=pg.url, args=["--max-concurrent", "4"])
    rng = random.Random(3)
    try:
        server.start()
        outage_s = 3.0 if quick else 10.0
        with server.client() as client, \
                Submitter(client, "pg", lambda i: mixed("pg", i, rng, queue="default")) as sub:
            time.sleep(3.0)
            pg.stop("fast")
            down = time.monotonic()
            time.sleep(outage_s)
            during = dict(sub.refusals)
            pg.start()
            up = time.monotonic()
            before = len(sub.acknowledged)
            while len(sub.acknowledged) == before and time.monotonic() - up < 120:
                time.sleep(0.05)
            back_s = time.monotonic() - up
            time.sleep(3.0)
        crashed = not server.alive
        if crashed:
            server.start()
        return {**finish(server, sub.acknowledged), **sub.figures(),
                "outage_s": num(up - down), "refused_during_outage": sum(during.values()),
                "service_back_s": num(back_s), "server_died": crashed}
    finally:
        server.kill()
        stop_jobs(server.data_dir)
        pg.destroy()


def _fill(path: Path) -> int:
    """Write zeros to `path` until the disk is full; returns the MiB written."""
    written = 0
    chunk = b"\0" * (1 << 20)
    with contextlib.suppress(OSError), path.open("wb") as out:
        for _ in range(DISK_MB * 4):  # bounded: more than the disk holds
            out.write(chunk)
            out.flush()
            written += 1
    return written


def disk_full(workdir: Path, quick: bool) -> dict[str, Any]:
    disk = workdir / "disk"
    disk.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(disk)],
                   check=True, capture_output=True, timeout=30)
    server = Server(disk / "server", args=["--max-concurrent", "2"])
    server.log_path = workdir / "server.log"  # the log outside: it must say what happened
    filler = disk / "filler"
    gate = workdir / "gate"  # outside: the jobs holding both slots end once it exists
    jobs = 4 if quick else 12
    try:
        server.start()
        with server.client() as client:
            sub = Submitter(client, "disk", lambda i: None)
            holders = [sub.submit(replace(spec(f"hold-{i}", "disk", seconds=0,
                                               request_id=f"disk-hold-{i}"),
                                          command=_held(gate)))
                       for i in range(2)]
            for job_id in holders:
                assert job_id is not None
                _wait_state(client, job_id, {"RUNNING"})
            filled_mb = _fill(filler)
            full_at = time.monotonic()
            waiting = [spec(f"wait-{i}", "disk", seconds=0.2, request_id=f"disk-wait-{i}")
                       for i in range(jobs)]
            during = [sub.submit(job, deadline_s=0) for job in waiting]
            refused_full = sum(1 for job_id in during if job_id is None)
            reads_ok = _reads_answer(client)
            time.sleep(2.0)  # the tracker's own writes meet the full disk meanwhile
            alive_while_full = server.alive
            if not alive_while_full:
                server.start()
            filler.unlink()
            freed = time.monotonic()
            retried_ids = [sub.submit(job) for job in waiting]
            back_s = time.monotonic() - freed
            gate.touch()
        result = finish(server, sub.acknowledged)
        server.stop()
        integrity = _integrity(server.data_dir / "trainyard.db")
        return {**result, **sub.figures(), "filled_mb": filled_mb,
                "refused_while_full": refused_full, "reads_while_full": reads_ok,
                "server_alive_while_full": alive_while_full,
                "full_s": num(freed - full_at), "service_back_s": num(back_s),
                "submitted_after_space_returned": sum(1 for j in retried_ids if j),
                "sqlite_integrity": integrity}
    finally:
        gate.touch()
        server.kill()
        stop_jobs(server.data_dir)
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=30)


def _held(gate: Path) -> str:
    return (f'echo x >> "$CHECKPOINT_PATH/{MARKER}" && echo x >> {RAN}; i=0; '
            f"while [ ! -e {gate} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done")


def _reads_answer(client: Client) -> bool:
    try:
        client.list_jobs(page_size=5)
        return True
    except TrainyardError:
        return False


def _wait_state(client: Client, job_id: str, states: set[str], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while (state := retried(lambda: client.status(job_id).state)) not in states:
        if time.monotonic() > deadline:
            raise GaveUp(f"{job_id} stayed {state}")
        time.sleep(0.1)
    return state


def _integrity(path: Path) -> str:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def dockerd_restart(workdir: Path, quick: bool) -> dict[str, Any]:
    engine = Dockerd()
    server = Server(workdir, args=["--max-concurrent", "4", "--docker", "--docker-cpus", "2",
                                   "--docker-memory", "2048", "--docker-max-containers", "2",
                                   "--docker-gpu-ids", "none"])
    containers = 4 if quick else 8
    try:
        server.start()
        with server.client(timeout=20) as client:
            sub = Submitter(client, "engine", lambda i: None)
            jobs = [spec(f"box-{i}", "engine", seconds=3.0, container=True,
                         request_id=f"engine-box-{i}") for i in range(containers)]
            jobs += [spec(f"local-{i}", "engine", seconds=1.0, request_id=f"engine-local-{i}")
                     for i in range(containers)]
            ids = [sub.submit(job) for job in jobs[:2]]
            for job_id in ids:
                assert job_id is not None
                _wait_state(client, job_id, {"RUNNING"} | FINAL)
            for job in jobs[2:]:
                sub.submit(job)
            stop_s = engine.stop()
            down = time.monotonic()
            during = [sub.submit(spec(f"during-{i}", "engine", seconds=1.0, container=True,
                                      request_id=f"engine-during-{i}"), deadline_s=0)
                      for i in range(2)]
            time.sleep(2.0)
            start_s = engine.start()
            outage_s = time.monotonic() - down + stop_s
        crashed = not server.alive
        if crashed:
            server.start()
        result = finish(server, sub.acknowledged)
        return {**result, **sub.figures(), "engine_stop_s": num(stop_s),
                "engine_start_s": num(start_s), "engine_outage_s": num(outage_s),
                "submitted_during_outage": sum(1 for j in during if j),
                "server_died": crashed}
    finally:
        if not Dockerd.answers():
            engine.start()  # never leave the machine without its engine
        server.kill()
        stop_jobs(server.data_dir)
        remove_containers(server.data_dir)


PARTS = {"postgresql": postgres_restart, "dockerd": dockerd_restart, "disk_full": disk_full}


def run(workdir: Path, quick: bool) -> dict[str, Any]:
    parts: dict[str, dict[str, Any]] = {}
    for name, part in PARTS.items():
        try:
            parts[name] = part(workdir / name, quick)
        except Exception as exc:  # the other parts still run
            parts[name] = {"error": f"{type(exc).__name__}: {exc}"}
    total: dict[str, Any] = {key: sum(int(p.get(key, 0)) for p in parts.values())
                             for key in ("jobs", "lost", "duplicated", "stuck", "wrong_state",
                                         "unexecuted", "internal_errors")}
    errors = [f"{name}: {p['error']}" for name, p in parts.items() if "error" in p]
    if errors:
        total["error"] = "; ".join(errors)
    return {**total, **parts}
