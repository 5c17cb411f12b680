"""Launch requests and waits for the Slurm executor's tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from trainyard.domain.pools import SlurmPool
from trainyard.domain.spec import Resources
from trainyard.executors.base import JobFiles, LaunchRequest, Observation, Phase
from trainyard.executors.slurm import SlurmConfig, SlurmExecutor
from trainyard.testbed.slurm_cluster import SlurmCluster

TOKEN = "tyjob_j1_1_" + "s" * 43
POOL = "hpc"


def executor(cluster: SlurmCluster, instance: str = "test-a") -> SlurmExecutor:
    return SlurmExecutor(SlurmConfig(
        instance=instance, env=cluster.env, reconcile_interval_s=0.5, agent=False,
        pools={POOL: SlurmPool(partition=cluster.partition, staging="shared")}))


def request(root: Path, job: str, command: str, *, workers: int = 1, cpus: float = 1.0,
            attempt: int = 1, token: str = TOKEN) -> LaunchRequest:
    where = root / job / f"attempt-{attempt}"
    files = JobFiles(data=where / "data", model=where / "model",
                     metrics=where / "metrics.jsonl", checkpoint=where / "checkpoint",
                     workdir=where, log=where / "log.txt")
    return LaunchRequest(job_id=job, attempt=attempt, handle=f"trainyard-{job}-{attempt}",
                         command=command, image="", env={"PYTHONUNBUFFERED": "1"},
                         hyperparameters={"lr": "0.1"}, resources=Resources(cpus, 256, 0),
                         gpu_ids=(), files=files, workers=workers, job_token=token, pool=POOL)


def wait_for(look: Callable[[], Observation], done: Callable[[Observation], bool],
             timeout: float = 30.0) -> Observation:
    deadline = time.monotonic() + timeout
    seen = look()
    while not done(seen):
        if time.monotonic() > deadline:
            raise AssertionError(f"still {seen} after {timeout:g} s")
        time.sleep(0.2)
        seen = look()
    return seen


def ended(observation: Observation) -> bool:
    return observation.phase in (Phase.EXITED, Phase.LOST, Phase.NOT_FOUND)


def running(observation: Observation) -> bool:
    return observation.phase is Phase.RUNNING or ended(observation)


def wait_file(path: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout:g} s")
        time.sleep(0.1)
    return path.read_text()
