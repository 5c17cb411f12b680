"""Soak: submits at a steady rate (200/s for 10 minutes) of trivial local jobs that complete,
with status polling beside them, while the server's resident memory (VmRSS) and open file
descriptors are sampled every 10 s. Reports memory growth after a warm-up, fd growth, the
status p99 of each minute and the submit rate reached; then checks every acknowledged job.

Load comes from several client processes (a Python gRPC client is bound by its own GIL), each
with a few paced threads, all on loopback; they share the machine's CPUs with the server, so
on a small machine the rate reached also tells what the machine allows."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import grpc
from benchlib import num, percentile

from chaos.fuzzing.live import LiveServer, wait_until
from trainyard.v1 import training_pb2 as pb

TARGET_RATE = 200.0  # submits per second, over all clients
SUBMIT_PROCESSES = 3
THREADS_PER_PROCESS = 3
POLL_RATE = 20.0  # GetTrainingStatus calls per second
SAMPLE_EVERY_S = 10.0
MEMORY_GOAL_PCT = 10.0
MAX_CONCURRENT = 16
DRAIN_WAIT_S = 120.0  # after the load, for the queue to empty; what still waits is reported


def _submitter(address: str, rate: float, seconds: float, command: str, out: str) -> None:
    """One client process: paced threads, each on its own channel; writes what it saw."""
    job_ids: list[str] = []
    failures: dict[str, int] = {}
    lock = threading.Lock()
    start = time.monotonic()
    per_thread = rate / THREADS_PER_PROCESS

    def work(index: int) -> None:
        with grpc.insecure_channel(address) as channel:
            train = channel.unary_unary(
                "/trainyard.v1.TrainingService/Train",
                request_serializer=pb.TrainRequest.SerializeToString,
                response_deserializer=pb.TrainResponse.FromString)
            sent = 0
            while True:
                due = start + sent / per_thread
                now = time.monotonic()
                if now - start >= seconds:
                    return
                if due > now:
                    time.sleep(due - now)
                elif now - due > 1.0:  # behind by more than a second: do not burst
                    sent = int((now - start) * per_thread)
                sent += 1
                try:
                    reply = train(pb.TrainRequest(name=f"soak-{index}", command=command),
                                  timeout=30)
                except grpc.RpcError as exc:
                    with lock:
                        failures[exc.code().name] = failures.get(exc.code().name, 0) + 1
                    continue
                with lock:
                    job_ids.append(reply.job_id)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS_PER_PROCESS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    Path(out).write_text(json.dumps({"job_ids": job_ids, "failures": failures,
                                     "seconds": time.monotonic() - start}))


class Poller(threading.Thread):
    """GetTrainingStatus of a few jobs at a steady rate, each call's latency by minute."""

    def __init__(self, address: str, job_ids: list[str], started: float) -> None:
        super().__init__(name="soak-poller", daemon=True)
        self.address, self.job_ids, self.started = address, job_ids, started
        self.by_minute: dict[int, list[float]] = {}
        self.errors = 0
        self.halt = threading.Event()

    def run(self) -> None:
        with grpc.insecure_channel(self.address) as channel:
            status = channel.unary_unary(
                "/trainyard.v1.TrainingService/GetTrainingStatus",
                request_serializer=pb.GetTrainingStatusRequest.SerializeToString,
                response_deserializer=pb.TrainingStatus.FromString)
            i = 0
            while not self.halt.wait(1 / POLL_RATE):
                i += 1
                t0 = time.perf_counter()
                try:
                    status(pb.GetTrainingStatusRequest(job_id=self.job_ids[i % len(self.job_ids)]),
                           timeout=30)
                except grpc.RpcError:
                    self.errors += 1
                ms = (time.perf_counter() - t0) * 1000
                minute = int((time.monotonic() - self.started) // 60)
                self.by_minute.setdefault(minute, []).append(ms)


def run(workdir: Path, quick: bool, rate: float = TARGET_RATE) -> dict[str, Any]:
    """`rate`: submits per second over all clients."""
    seconds = 60.0 if quick else 600.0
    warmup = 10.0 if quick else 60.0
    markers = workdir / "markers"
    markers.mkdir(parents=True, exist_ok=True)
    # Each execution leaves a line in its job's own marker file.
    command = f'echo run >> {markers}/"$JOB_ID"'
    server = LiveServer(workdir / "server", max_concurrent=MAX_CONCURRENT, auth=False)
    server.start()
    try:
        return _soak(server, workdir, command, markers, seconds, warmup, quick, rate)
    finally:
        server.stop()


def _soak(server: LiveServer, workdir: Path, command: str, markers: Path, seconds: float,
          warmup: float, quick: bool, rate: float) -> dict[str, Any]:
    with server.channel() as channel:
        train = server.training(channel)
        probes = [train.Train(pb.TrainRequest(name="probe", command=command), timeout=10).job_id
                  for _ in range(10)]
    started = time.monotonic()
    poller = Poller(server.address, probes, started)
    poller.start()
    ctx = mp.get_context("spawn")
    outs = [workdir / f"submitter-{i}.json" for i in range(SUBMIT_PROCESSES)]
    procs = [ctx.Process(target=_submitter, args=(server.address, rate / SUBMIT_PROCESSES,
                                                  seconds, command, str(out)))
             for out in outs]
    for p in procs:
        p.start()
    samples: list[dict[str, float]] = []
    cpu = CpuMeter(server.pid)
    while any(p.is_alive() for p in procs):
        samples.append(_sample(server, started, cpu))
        for p in procs:
            p.join(timeout=SAMPLE_EVERY_S / len(procs))
    load_s = time.monotonic() - started
    poller.halt.set()
    poller.join()
    results = [json.loads(out.read_text()) for out in outs if out.exists()]
    job_ids = [j for r in results for j in r["job_ids"]] + probes
    failures: dict[str, int] = {}
    for r in results:
        for code, n in r["failures"].items():
            failures[code] = failures.get(code, 0) + n
    drained = wait_until(lambda: _active(server) == 0, DRAIN_WAIT_S, 1.0)
    drain_s = time.monotonic() - started - load_s
    samples.append(_sample(server, started, cpu))
    report = _report(server, job_ids, failures, samples, poller, markers, load_s, drain_s,
                     drained, warmup, quick)
    report["target_submits_per_s"] = rate
    return report


class CpuMeter:
    """The server's CPU use (user and system) since the last reading, in % of one core."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.ticks = os.sysconf("SC_CLK_TCK")
        self.last = (time.monotonic(), self._cpu_s())

    def _cpu_s(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.ticks

    def percent(self) -> float:
        now, cpu = time.monotonic(), self._cpu_s()
        then, before = self.last
        self.last = (now, cpu)
        return round((cpu - before) / (now - then) * 100, 1) if now > then else 0.0


def _sample(server: LiveServer, started: float, cpu: CpuMeter) -> dict[str, float]:
    return {"t_s": round(time.monotonic() - started, 1),
            "rss_mib": round(server.rss_kib() / 1024, 1), "fds": server.open_fds(),
            "jobs": _count(server), "active": _active(server),
            "server_cpu_pct": cpu.percent(), "load_avg_1m": os.getloadavg()[0]}


def _db(server: LiveServer) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{server.data_dir / 'trainyard.db'}?mode=ro", uri=True,
                           timeout=30)


def _count(server: LiveServer) -> int:
    with _db(server) as db:
        return int(db.execute("SELECT count(*) FROM jobs").fetchone()[0])


def _active(server: LiveServer) -> int:
    with _db(server) as db:
        return int(db.execute("SELECT count(*) FROM jobs WHERE state IN "
                              "('WAITING', 'LAUNCHING', 'RUNNING', 'PREEMPTED')").fetchone()[0])


def _report(server: LiveServer, job_ids: list[str], failures: dict[str, int],
            samples: list[dict[str, float]], poller: Poller, markers: Path, load_s: float,
            drain_s: float, drained: bool, warmup: float, quick: bool) -> dict[str, Any]:
    with _db(server) as db:
        states = dict(db.execute("SELECT id, state FROM jobs").fetchall())
    lost = sum(1 for j in job_ids if j not in states)
    stuck = sum(1 for s in states.values() if s in ("LAUNCHING", "PREEMPTED"))
    executions = {}
    for path in markers.iterdir():
        executions[path.name] = len(path.read_text().splitlines())
    duplicated = sum(1 for n in executions.values() if n > 1)
    succeeded = sum(1 for s in states.values() if s == "SUCCEEDED")
    during = [s for s in samples[:-1] if s["t_s"] >= warmup] or samples
    base, last = during[0], during[-1]
    growth = (last["rss_mib"] - base["rss_mib"]) / base["rss_mib"] * 100
    p99s = {str(m): num(percentile(sorted(v), 99)) for m, v in sorted(poller.by_minute.items())}
    ran = [s["t_s"] for s in samples]
    completed_during = _completed_by(server, load_s)
    return {
        "jobs": len(job_ids),
        "lost": lost,
        "duplicated": duplicated,
        "stuck": stuck,
        "never_ran": sum(1 for j in job_ids if states.get(j) == "SUCCEEDED" and
                         j not in executions),
        "succeeded": succeeded,
        "submits_per_s": round((len(job_ids) - 10) / load_s, 1),
        "completions_per_s_during_load": round(completed_during / load_s, 1),
        "submit_failures": failures,
        "drained": drained,
        "active_at_end": samples[-1]["active"],
        "drain_s": round(drain_s, 1),
        "load_s": round(load_s, 1),
        "warmup_s": warmup,
        "rss_mib_after_warmup": base["rss_mib"],
        "rss_mib_at_end_of_load": last["rss_mib"],
        "rss_mib_after_drain": samples[-1]["rss_mib"],
        "memory_growth_pct": round(growth, 1),
        "memory_goal_met": growth < MEMORY_GOAL_PCT,
        "fds_after_warmup": base["fds"],
        "fds_at_end_of_load": last["fds"],
        "fds_after_drain": samples[-1]["fds"],
        "fd_growth": last["fds"] - base["fds"],
        "status_p99_ms_by_minute": p99s,
        "status_polls": sum(len(v) for v in poller.by_minute.values()),
        "status_errors": poller.errors,
        "samples": samples,
        "sampled_over_s": [ran[0], ran[-1]] if ran else [],
        "max_concurrent": MAX_CONCURRENT,
        "client_processes": SUBMIT_PROCESSES,
        "quick": quick,
    }


def _completed_by(server: LiveServer, load_s: float) -> int:
    """Jobs that reached a final state while the load ran (by their events' times)."""
    with _db(server) as db:
        first = db.execute("SELECT min(time) FROM job_events").fetchone()[0]
        if first is None:
            return 0
        return int(db.execute(
            "SELECT count(DISTINCT job_id) FROM job_events WHERE to_state = 'SUCCEEDED' "
            "AND time <= ?", (first + load_s,)).fetchone()[0])


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="chaos-soak-") as tmp:
        rate = next((float(a.split("=")[1]) for a in sys.argv if a.startswith("--rate=")),
                    TARGET_RATE)
        print(json.dumps(run(Path(tmp), quick="--quick" in sys.argv, rate=rate), indent=2))
