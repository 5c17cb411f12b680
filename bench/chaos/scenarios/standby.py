"""Standby takeover: three servers over one PostgreSQL, sharing a data directory; while a
client with every address submits the run's jobs, the leader is SIGKILLed again and again
(restarted as a standby each time). Every acknowledged job must end SUCCEEDED, each attempt
must run exactly once (the job appends its id to a marker file), nothing may stay active,
and each takeover (from the kill to the next leader's lease acquisition) is timed."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
from benchlib import num, percentile, stop_process, wait_for_port

from trainyard.client import Client, TrainSpec
from trainyard.client.errors import TrainyardError

SERVERS = 3
MAX_CONCURRENT = 16
TAKEOVER_LIMIT_S = 30.0  # past this a takeover counts as failed
QUIET_TIMEOUT_S = 180.0  # for every job to end once the faults stop
FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Postgres:
    """A PostgreSQL of the scenario's own, in a temporary directory."""

    def __init__(self) -> None:
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
        initdb = str(found[0]) if found else shutil.which("initdb")
        if initdb is None:
            raise RuntimeError("PostgreSQL (initdb) is not installed")
        self.bindir = Path(initdb).parent
        self.dir = Path(tempfile.mkdtemp(prefix="chaos-standby-pg-"))
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *cmd: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *cmd], check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        data = str(self.dir / "data")
        self._run(str(self.bindir / "initdb"), "-D", data, "-A", "trust", "-U", "postgres",
                  "--no-sync")
        self._run(str(self.bindir / "pg_ctl"), "-D", data, "-w", "-l", str(self.dir / "log"),
                  "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                  "-c max_connections=400", "start")

    def stop(self) -> None:
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.dir / "data"), "-m",
                      "immediate", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class _Server:
    """One `trainyard server` process on fixed ports, so a restart keeps its address."""

    def __init__(self, workdir: Path, name: str, url: str) -> None:
        self.workdir, self.name, self.url = workdir, name, url
        self.port, self.http_port = _free_port(), _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        port_file = self.workdir / f"{self.name}.port"
        port_file.unlink(missing_ok=True)
        log_path = self.workdir / f"{self.name}.log"
        cmd = [sys.executable, "-m", "trainyard.cli.main", "server", "--port", str(self.port),
               "--http-port", str(self.http_port), "--port-file", str(port_file),
               "--data-dir", str(self.workdir / "data"), "--database-url", self.url,
               "--max-concurrent", str(MAX_CONCURRENT)]
        with log_path.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(self.proc, port_file, log_path)

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)


def _lease(url: str) -> tuple[int, str] | None:
    """The lease's token and holder ("host:pid:nonce"), or None before any was taken."""
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            row = conn.execute("SELECT token, holder FROM leader_lease "
                               "WHERE name = 'tracker'").fetchone()
    except psycopg.Error:
        return None
    return None if row is None else (int(row[0]), str(row[1]))


class _Submitter(threading.Thread):
    """Submits the jobs at a steady rate, each retried with its request id until one server
    acknowledges it."""

    def __init__(self, addresses: str, marker: Path, jobs: int, rate: float) -> None:
        super().__init__(name="submitter", daemon=True)
        self.addresses, self.marker, self.jobs, self.rate = addresses, marker, jobs, rate
        self.acknowledged: list[str] = []
        self.retries = 0
        self.latencies: list[float] = []

    def run(self) -> None:
        rng = random.Random(18)
        with Client(self.addresses, timeout=10) as client:
            for i in range(self.jobs):
                began = time.monotonic()
                sleep_s = rng.uniform(0.5, 3.0)
                spec = TrainSpec(name=f"standby-{i}", client_request_id=f"standby-{i}",
                                 command=f'echo "$JOB_ID" >> {self.marker}; sleep {sleep_s:.2f}')
                self.acknowledged.append(self._submit(client, spec))
                self.latencies.append(time.monotonic() - began)
                time.sleep(max(0.0, 1 / self.rate - (time.monotonic() - began)))

    def _submit(self, client: Client, spec: TrainSpec) -> str:
        while True:
            try:
                return client.train(spec).job_id
            except TrainyardError as exc:
                if exc.code not in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL"):
                    raise
                self.retries += 1
                time.sleep(0.2)


def _leader(servers: list[_Server], url: str) -> tuple[_Server, int] | None:
    lease = _lease(url)
    if lease is None:
        return None
    token, holder = lease
    for server in servers:
        if server.proc is not None and holder.split(":")[1:2] == [str(server.proc.pid)]:
            return server, token
    return None


def _kill_leaders(servers: list[_Server], url: str, kills: int, gap_s: float,
                  takeovers: list[float], failed: list[str]) -> None:
    for _ in range(kills):
        time.sleep(gap_s)
        deadline = time.monotonic() + TAKEOVER_LIMIT_S
        found = _leader(servers, url)
        while found is None and time.monotonic() < deadline:
            time.sleep(0.1)
            found = _leader(servers, url)
        if found is None:
            failed.append("no leader to kill")
            continue
        victim, token = found
        victim.kill()
        killed = time.monotonic()
        while time.monotonic() - killed < TAKEOVER_LIMIT_S:
            lease = _lease(url)
            if lease is not None and lease[0] > token:
                takeovers.append(time.monotonic() - killed)
                break
            time.sleep(0.05)
        else:
            failed.append(f"no takeover within {TAKEOVER_LIMIT_S:g} s of kill")
        victim.start()  # back as a standby


def _final_states(url: str) -> dict[str, tuple[str, int]]:
    with psycopg.connect(url) as conn:
        return {r[0]: (r[1], int(r[2])) for r in
                conn.execute("SELECT id, state, attempt FROM jobs").fetchall()}


def _wait_quiet(url: str, ids: list[str]) -> dict[str, tuple[str, int]]:
    deadline = time.monotonic() + QUIET_TIMEOUT_S
    while True:
        states = _final_states(url)
        if all(states.get(i, ("", 0))[0] in FINAL for i in ids) or \
                time.monotonic() > deadline:
            return states
        time.sleep(0.5)


def run(workdir: Path, quick: bool) -> dict[str, Any]:
    jobs, kills = (40, 3) if quick else (300, 10)
    gap_s = 3.0  # between a takeover and the next kill
    workdir.mkdir(parents=True, exist_ok=True)
    marker = workdir / "executions"
    marker.unlink(missing_ok=True)
    pg = _Postgres()
    pg.start()
    servers = [_Server(workdir, f"server-{i}", pg.url) for i in range(SERVERS)]
    try:
        for server in servers:
            server.start()
        addresses = ",".join(s.address for s in servers)
        # Spread the submits over the kills: about 8 s per kill (takeover and the gap).
        rate = jobs / (kills * (gap_s + 6.0))
        submitter = _Submitter(addresses, marker, jobs, rate)
        began = time.monotonic()
        submitter.start()
        takeovers: list[float] = []
        failed: list[str] = []
        _kill_leaders(servers, pg.url, kills, gap_s, takeovers, failed)
        submitter.join(timeout=QUIET_TIMEOUT_S)
        states = _wait_quiet(pg.url, submitter.acknowledged)
        elapsed = time.monotonic() - began
    finally:
        for server in servers:
            server.stop()
    try:
        return _report(jobs, kills, submitter, states, marker, takeovers, failed, elapsed)
    finally:
        pg.stop()


def _report(jobs: int, kills: int, submitter: _Submitter,
            states: dict[str, tuple[str, int]], marker: Path, takeovers: list[float],
            failed: list[str], elapsed: float) -> dict[str, Any]:
    ran = Counter(marker.read_text().split()) if marker.exists() else Counter[str]()
    acknowledged = submitter.acknowledged
    lost = sum(1 for j in acknowledged if states.get(j, ("", 0))[0] != "SUCCEEDED")
    duplicated = sum(max(0, ran[j] - states.get(j, ("", 0))[1]) for j in acknowledged)
    stuck = sum(1 for state, _ in states.values() if state not in FINAL | {"WAITING"})
    return {
        "jobs": len(acknowledged), "lost": lost, "duplicated": duplicated, "stuck": stuck,
        "jobs_planned": jobs, "servers": SERVERS, "kills": kills,
        "takeovers": len(takeovers), "takeover_failures": failed,
        "takeover_s": [num(t) for t in takeovers],
        "takeover_p50_s": num(percentile(sorted(takeovers), 50)) if takeovers else None,
        "takeover_max_s": num(max(takeovers)) if takeovers else None,
        "executions": sum(ran.values()),
        "extra_jobs": len(states) - len(set(acknowledged)),  # submits that made two jobs
        "still_waiting": sum(1 for state, _ in states.values() if state == "WAITING"),
        "submit_retries": submitter.retries,
        "submit_p99_s": num(percentile(sorted(submitter.latencies), 99), 3)
        if submitter.latencies else None,
        "elapsed_s": num(elapsed, 1),
    }
