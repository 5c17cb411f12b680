"""Trainyard as the benchmark runs it: `trainyard server` on its embedded defaults (SQLite
in a fresh data dir, the local-process executor, FIFO), driven through the Python SDK over
loopback. One setting differs: --max-concurrent is the host's CPU count (the default is 4),
so that Trainyard, like Slurm and Ray here, runs one one-CPU job per CPU at a time."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import grpc
from benchlib import wait_for_port
from grpc_health.v1 import health_pb2, health_pb2_grpc

from peers import figures as fig
from peers import procs
from peers.workloads import Stamps
from trainyard.client import Client, TrainSpec

UNFINISHED = ["WAITING", "LAUNCHING", "RUNNING"]
CALL_TIMEOUT_S = 30.0


class TrainyardSystem:
    name = "trainyard"

    def __init__(self, address: str) -> None:
        self.address = address
        self.client = Client(address, timeout=CALL_TIMEOUT_S)
        self.dataset = ""  # digits:<version>, once registered
        self.hyperparameters: dict[str, str] = {}

    def close(self) -> None:
        self.client.close()

    def submit(self, key: str, command: str) -> str:
        spec = TrainSpec(name=key, command=command)
        if key.startswith("train-"):
            spec = TrainSpec(name=key, command=command, dataset=self.dataset,
                             hyperparameters=self.hyperparameters)
        return self.client.train(spec).job_id

    def unfinished(self, ids: Sequence[str]) -> bool:
        # Every job on this server is the benchmark's; one is enough to say "not yet".
        jobs, _ = self.client.list_jobs(states=UNFINISHED, page_size=1)
        return bool(jobs)

    def cancel(self, ids: Sequence[str]) -> None:
        for job_id in ids:
            with contextlib.suppress(Exception):
                self.client.cancel(job_id)

    def cancel_unfinished(self) -> None:
        """Before the server stops: it leaves running jobs running, by design."""
        for _ in range(20):  # pages of 500: bounded
            jobs, _ = self.client.list_jobs(states=UNFINISHED, page_size=500)
            if not jobs:
                return
            self.cancel([j.job_id for j in jobs])
            time.sleep(0.2)

    def phases(self, ids: Sequence[str], stamps: Stamps, slots: int) -> dict[str, float]:
        """Where each job's time went, from its recorded transitions (one status call a
        job, after the workload, so that the figures do not pay for it)."""
        jobs: list[dict[str, float]] = []
        for job_id in ids:
            status = self.client.status(job_id)
            times = {t.to_state: datetime.fromisoformat(t.time).timestamp()
                     for t in status.transitions if t.time}
            record: dict[str, float] = {k: times[k] for k in ("LAUNCHING", "RUNNING")
                                        if k in times}
            if status.state in times:
                record["final"] = times[status.state]
            if (stamp := stamps.read(status.name, "start")) is not None:
                record["stamp"] = stamp / 1e9
            jobs.append(record)
        return fig.slot_cycle_ms(jobs, slots)

    def register_digits(self, path: Path) -> None:
        self.dataset = f"digits:{self.client.register_dataset('digits', str(path)).version}"


@contextmanager
def server(workdir: Path, slots: int) -> Iterator[TrainyardSystem]:
    """A server on a free loopback port, `slots` jobs at once; stopped on the way out."""
    workdir.mkdir(parents=True, exist_ok=True)
    port_file, log = workdir / "port", workdir / "server.log"
    proc = procs.spawn([sys.executable, "-m", "trainyard.cli.main", "server", "--port", "0",
                        "--http-port", "0",
                        "--port-file", str(port_file), "--data-dir", str(workdir / "data"),
                        # Explicit, so a TRAINYARD_DATABASE_URL around cannot leak in.
                        "--database-url", "", "--max-concurrent", str(slots)], log)
    system: TrainyardSystem | None = None
    try:
        port = wait_for_port(proc, port_file, log)
        system = TrainyardSystem(f"127.0.0.1:{port}")
        yield system
    finally:
        if system is not None:
            with contextlib.suppress(Exception):
                system.cancel_unfinished()
            system.close()
        procs.stop(proc)


@dataclass(frozen=True)
class Health:
    """Bare gRPC health checks: one client alone, and the same SUBMITTERS threads the
    submit figure uses."""

    p50_ms: float
    calls_per_s: float


def health_checks(system: TrainyardSystem, calls: int, threads: int) -> Health:
    channel = grpc.insecure_channel(system.address)
    stub = health_pb2_grpc.HealthStub(channel)
    request = health_pb2.HealthCheckRequest(service="")
    alone: list[float] = []
    for _ in range(calls):
        t0 = time.perf_counter()
        stub.Check(request, timeout=CALL_TIMEOUT_S)
        alone.append((time.perf_counter() - t0) * 1000)

    def loop() -> None:
        for _ in range(calls):
            stub.Check(request, timeout=CALL_TIMEOUT_S)

    pool = [threading.Thread(target=loop) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join(CALL_TIMEOUT_S * 2)
    elapsed = time.perf_counter() - t0
    channel.close()
    return Health(fig.pct(alone, 50), fig.rate(calls * threads, elapsed))
