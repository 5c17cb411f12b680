"""Hostile jobs: a fork bomb, gigabytes of output, garbage and one enormous line in the metrics
file, a job that ignores TERM; as local processes and, where Docker runs, as containers. A
thread polls GetTrainingStatus all the while: the service must stay responsive (p99 under
100 ms) and each job must end with a message that says what happened.

Every hostile job is capped by itself, so a missing limit in the service shows in the figures
and cannot take the machine down: the bomb stops at a few thousand processes, the output at
2 GB (in the scenario's scratch dir, deleted after)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from benchlib import num, percentile

from chaos.fuzzing.live import LiveServer, wait_until
from trainyard.v1 import training_pb2 as pb

IMAGE = "trainyard/base:latest"
CANCEL_GRACE_S = 10.0  # the server's default grace between TERM and KILL
P99_GOAL_MS = 100.0

# Forks until fork fails or `cap` processes run, each child a `sleep`; says how far it got.
BOMB = """
import os, sys, time
cap, n, why = int(sys.argv[1]), 0, "its own cap"
while n < cap:
    try:
        pid = os.fork()
    except OSError as exc:
        why = exc.strerror
        break
    if pid == 0:
        try:
            os.execv("/bin/sleep", ["sleep", "900"])
        finally:
            os._exit(1)
    n += 1
print(f"forked {n} processes, stopped by {why}", flush=True)
time.sleep(900)
"""


@dataclass
class Hostile:
    name: str
    command: str
    expect: str  # the final state's name
    says: tuple[str, ...]  # what the final message must contain (any of them)
    image: str = ""
    cancel_when: str = ""  # cancel once the log holds this ("RUNNING": once it runs)
    job_id: str = ""
    figures: dict[str, Any] = field(default_factory=dict)


def _python(script: str, *args: object) -> str:
    return shlex.join(["python3", "-c", script, *map(str, args)])


def _jobs(quick: bool, marker_dir: Path, docker: bool) -> list[Hostile]:
    bomb_cap = 300 if quick else 5000  # past the executors' cap of 4096 at full size
    output_bytes = (100 if quick else 2000) * 1_000_000
    line_bytes = (10 if quick else 100) * 1_000_000
    garbage_bytes = (2 if quick else 20) * 1_000_000

    def marked(name: str, command: str) -> str:
        # The job's own count of its executions, beside the service's.
        return f"echo run >> {shlex.quote(str(marker_dir / name))}; {command}"

    term_ignorer = "trap '' TERM; while :; do sleep 1; done"
    out = [
        Hostile("fork-bomb", marked("fork-bomb", _python(BOMB, bomb_cap)), "CANCELLED",
                ("cancelled by request",), cancel_when="forked "),
        Hostile("big-output", marked("big-output",
                                     f"yes 'a line of output from a job that writes too much'"
                                     f" | head -c {output_bytes}"),
                "SUCCEEDED", ("exited with code 0",)),
        # Garbage, then a good line: ingestion goes on after it.
        Hostile("metrics-garbage", marked("metrics-garbage",
                                          f'head -c {garbage_bytes} /dev/urandom >> '
                                          f'"$METRICS_PATH"; printf \'\\n{{"step": 1, '
                                          f'"loss": 0.5}}\\n\' >> "$METRICS_PATH"'),
                "SUCCEEDED", ("exited with code 0",)),
        Hostile("metrics-long-line", marked("metrics-long-line",
                                            f"head -c {line_bytes} /dev/zero | tr '\\0' a >> "
                                            f'"$METRICS_PATH"; echo >> "$METRICS_PATH"; '
                                            f'echo \'{{"step": 2, "loss": 0.25}}\' >> '
                                            f'"$METRICS_PATH"'),
                "SUCCEEDED", ("exited with code 0",)),
        Hostile("ignores-term", marked("ignores-term", term_ignorer), "CANCELLED",
                ("cancelled by request",), cancel_when="RUNNING"),
    ]
    if docker:
        out += [
            Hostile("docker-fork-bomb", _python(BOMB, 6000 if not quick else 5000), "CANCELLED",
                    ("cancelled by request",), image=IMAGE, cancel_when="forked "),
            Hostile("docker-ignores-term", term_ignorer, "CANCELLED", ("cancelled by request",),
                    image=IMAGE, cancel_when="RUNNING"),
        ]
    return out


class StatusPoller(threading.Thread):
    """GetTrainingStatus of one job, again and again, timing each call."""

    def __init__(self, server: LiveServer, job_id: str) -> None:
        super().__init__(name="status-poller", daemon=True)
        self.server, self.job_id = server, job_id
        self.latencies_ms: list[float] = []
        self.errors = 0
        self.halt = threading.Event()

    def run(self) -> None:
        with self.server.channel() as channel:
            stub = self.server.training(channel)
            request = pb.GetTrainingStatusRequest(job_id=self.job_id)
            while not self.halt.is_set():
                start = time.perf_counter()
                try:
                    stub.GetTrainingStatus(request, metadata=self.server.metadata(), timeout=10)
                except grpc.RpcError:
                    self.errors += 1
                self.latencies_ms.append((time.perf_counter() - start) * 1000)
                self.halt.wait(0.02)


def _log_text(stub: Any, server: LiveServer, job_id: str,
              limit: int = 64_000) -> str:
    """The start of a job's log."""
    got = b""
    try:
        for chunk in stub.StreamLogs(pb.StreamLogsRequest(job_id=job_id),
                                     metadata=server.metadata(), timeout=10):
            got += chunk.data
            if len(got) >= limit:
                break
    except grpc.RpcError:
        pass
    return got.decode(errors="replace")


def _handle_processes(handle: str) -> int:
    """Processes on this host that carry the job's handle in their environment."""
    marker = f"TRAINYARD_HANDLE={handle}\0".encode()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if marker in Path(entry.path, "environ").read_bytes():
                    count += 1
            except OSError:
                continue
    return count


def _docker_available() -> bool:
    try:
        return subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True,
                              timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _largest_file(root: Path) -> tuple[str, int]:
    best = ("", 0)
    for path in root.rglob("*"):
        try:
            size = path.stat().st_size if path.is_file() else 0
        except OSError:
            continue
        if size > best[1]:
            best = (str(path.relative_to(root)), size)
    return best


def run(workdir: Path, quick: bool) -> dict[str, Any]:
    docker = _docker_available()
    markers = workdir / "markers"
    markers.mkdir(parents=True, exist_ok=True)
    jobs = _jobs(quick, markers, docker)
    server = LiveServer(workdir / "server", max_concurrent=len(jobs) + 1, docker=docker)
    server.start()
    try:
        return _drive(server, jobs, markers, docker, quick)
    finally:
        server.stop()
        shutil.rmtree(server.data_dir, ignore_errors=True)  # the gigabytes of output


def _drive(server: LiveServer, jobs: list[Hostile], markers: Path, docker: bool,
           quick: bool) -> dict[str, Any]:
    meta = server.metadata()
    with server.channel() as channel:
        stub = server.training(channel)

        def status(job_id: str) -> pb.TrainingStatus:
            found: pb.TrainingStatus = stub.GetTrainingStatus(
                pb.GetTrainingStatusRequest(job_id=job_id), metadata=meta, timeout=10)
            return found

        probe = stub.Train(pb.TrainRequest(name="probe", command="true"), metadata=meta,
                           timeout=10).job_id
        poller = StatusPoller(server, probe)
        poller.start()
        rss_before = server.rss_kib()
        peak_rss = [rss_before]
        halt = threading.Event()

        def sample_rss() -> None:
            while not halt.wait(0.5):
                try:
                    peak_rss[0] = max(peak_rss[0], server.rss_kib())
                except OSError:
                    return

        threading.Thread(target=sample_rss, daemon=True).start()
        started = time.monotonic()
        for job in jobs:
            job.job_id = stub.Train(pb.TrainRequest(name=job.name, command=job.command,
                                                    image=job.image), metadata=meta,
                                    timeout=30).job_id
            job.figures["submitted_s"] = time.monotonic() - started
        deadline = time.monotonic() + (240 if quick else 600)
        cancelled_at: dict[str, float] = {}
        pending = {job.job_id: job for job in jobs}
        while pending and time.monotonic() < deadline:
            for job_id, job in list(pending.items()):
                st = status(job_id)
                state = pb.JobState.Name(st.state)
                if state in ("SUCCEEDED", "FAILED", "CANCELLED"):
                    job.figures["ran_s"] = round(time.monotonic() - started
                                                 - job.figures["submitted_s"], 1)
                    if job_id in cancelled_at:
                        job.figures["cancel_to_end_s"] = round(
                            time.monotonic() - cancelled_at[job_id], 1)
                    del pending[job_id]
                    continue
                if job.cancel_when and job_id not in cancelled_at and state == "RUNNING":
                    ready = job.cancel_when == "RUNNING" or \
                        job.cancel_when in _log_text(stub, server, job_id)
                    if ready:
                        if job.cancel_when == "RUNNING":
                            time.sleep(1.0)  # let it reach its loop and its trap
                        else:
                            job.figures["log"] = _log_text(stub, server, job_id).strip()[-200:]
                            job.figures["processes_before_cancel"] = \
                                _handle_processes(f"trainyard-{job_id}-1") if not job.image \
                                else None
                        stub.CancelJob(pb.CancelJobRequest(job_id=job_id), metadata=meta,
                                       timeout=10)
                        cancelled_at[job_id] = time.monotonic()
            time.sleep(0.5)
        halt.set()
        wait_until(lambda: all(_handle_processes(f"trainyard-{j.job_id}-1") == 0
                               for j in jobs if not j.image), 15)
        poller.halt.set()
        poller.join()
        rows = [_judge(job, status(job.job_id), markers, stub, meta) for job in jobs]
        largest = _largest_file(server.data_dir)
        lat = sorted(poller.latencies_ms)
        p99 = percentile(lat, 99)
        return {
            "jobs": len(jobs),
            "lost": 0,  # every submit above was acknowledged and is read back by id
            "duplicated": sum(1 for r in rows if (r["executions"] or 0) > 1),
            "stuck": sum(1 for r in rows if r["state"] not in ("SUCCEEDED", "FAILED",
                                                                "CANCELLED")),
            "untrue_messages": sum(1 for r in rows if not r["message_true"]),
            "status_polls": len(lat),
            "status_errors": poller.errors,
            "status_p50_ms": num(percentile(lat, 50)),
            "status_p99_ms": num(p99),
            "status_max_ms": num(max(lat) if lat else None),
            "status_p99_goal_met": p99 < P99_GOAL_MS,
            "server_rss_mib_before": round(rss_before / 1024, 1),
            "server_rss_mib_peak": round(peak_rss[0] / 1024, 1),
            "largest_file_in_data_dir": {"path": largest[0],
                                         "mib": round(largest[1] / 2**20, 1)},
            "docker": docker,
            "quick": quick,
            "hostile": rows,
        }


def _judge(job: Hostile, st: pb.TrainingStatus, markers: Path,
           stub: Any, meta: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    state = pb.JobState.Name(st.state)
    marker = markers / job.name
    executions = len(marker.read_text().splitlines()) if marker.exists() else None
    if job.image:  # a container cannot reach the marker dir: count its runs instead
        runs = stub.ListRuns(pb.ListRunsRequest(job_id=job.job_id), metadata=meta, timeout=10)
        executions = sum(1 for r in runs.runs if r.HasField("started_at"))
    row: dict[str, Any] = {
        "name": job.name, "job_id": job.job_id, "kind": "docker" if job.image else "local",
        "state": state, "message": st.message, "executions": executions,
        "message_true": state == job.expect and any(s in st.message for s in job.says),
        "malformed_metric_lines": st.malformed_metric_lines,
        "latest_metrics": {k: v.value for k, v in st.latest_metrics.items()},
    }
    try:
        run_ = stub.GetRun(pb.GetRunRequest(run_id=job.job_id), metadata=meta, timeout=10)
        row["log_size_mib"] = round(run_.log_size_bytes / 2**20, 1)
    except grpc.RpcError as exc:
        row["log_size_mib"] = f"GetRun: {exc.code().name}"
    if not job.image:
        row["processes_left"] = _handle_processes(f"trainyard-{job.job_id}-1")
    row.update(job.figures)
    return row


if __name__ == "__main__":
    import json
    import tempfile

    with tempfile.TemporaryDirectory(prefix="chaos-hostile-") as tmp:
        print(json.dumps(run(Path(tmp), quick="--quick" in sys.argv), indent=2))
