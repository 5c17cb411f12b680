"""Containers, where a Docker engine runs: Trainyard's submit->RUNNING of a trivial
container job against a raw `docker run -d` of the same image and command, sampled in
alternation on an empty engine. This is bench/launch.py's start-latency loop, run here with
fewer rounds so that its figures sit in the same run as the others."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import launch

from trainyard.executors.docker import DockerConfig, DockerExecutor

IMAGE = "trainyard/demo-trainer"
CONCURRENCY = 2  # containers at once: the host's CPUs, as for the other systems


def unavailable(image: str = IMAGE) -> str | None:
    """Why the container figures cannot be measured here, or None."""
    if shutil.which("docker") is None:
        return "no docker CLI"
    try:
        done = subprocess.run(["docker", "image", "inspect", image], capture_output=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker: {exc}"
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip()[-200:]
        return f"the engine is not running or lacks {image} (make demo-docker builds it): {err}"
    return None


@dataclass(frozen=True)
class DockerStart:
    docker_run_ms: list[float]  # raw `docker run -d`, CLI spawn -> return
    trainyard_ms: list[float]  # before the Train call -> recorded RUNNING
    failures: int


def measure(samples: int, warmup: int, cap_s: float, image: str = IMAGE) -> DockerStart:
    engine = launch.Engine(launch.DOCKER_SOCKET, secrets.token_hex(4))
    exec_instance = f"bench-{engine.token}"
    engine.own(exec_instance)
    try:
        with tempfile.TemporaryDirectory(prefix="trainyard-bench-peers-docker-") as tmp:
            workdir = Path(tmp, "server")
            workdir.mkdir()
            executor = DockerExecutor(DockerConfig(
                instance=exec_instance, cpus=CONCURRENCY * launch.JOB_CPUS,
                memory_mb=CONCURRENCY * launch.JOB_MEMORY_MB, max_containers=CONCURRENCY,
                base_url=engine.socket))
            try:
                with launch.trainyard_server(workdir, engine, CONCURRENCY) as server:
                    ty = launch.Trainyard(server, image)
                    try:
                        run = launch.LatencyRun(engine, ty, executor, Path(tmp, "executor"),
                                                image)
                        out = launch.measure_start_latency(run, samples, warmup, cap_s)
                    finally:
                        ty.close()
            finally:
                executor.close()
    finally:
        with contextlib.suppress(Exception):
            engine.sweep()
    return DockerStart(out.cli.values_ms, out.trainyard.values_ms,
                       out.cli.failures + out.trainyard.failures)
