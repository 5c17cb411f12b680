"""The executors there are, by the kind of job each runs (domain.kinds). A new backend is its
own module and one entry in BUILDERS (with its settings in ExecutorSettings): the builder
makes the executor and the pool a server without a policy file runs that kind in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.domain.kinds import JobKind
from trainyard.domain.log_cap import DEFAULT_MAX_LOG_BYTES
from trainyard.domain.pools import PoolCapacity
from trainyard.executors.base import Executor, LaunchError
from trainyard.executors.local import LocalExecutor

if TYPE_CHECKING:  # the Docker SDK is loaded only by a server that runs containers
    from trainyard.executors.docker import DockerConfig
    from trainyard.executors.kubernetes.config import KubernetesConfig
    from trainyard.executors.slurm import SlurmConfig


@dataclass(frozen=True)
class ExecutorSettings:
    """What a server gives its executors."""

    state_dir: Path  # where local processes keep what a restarted service reads back
    local_max_jobs: int = 4  # local processes at once
    local_gpu_ids: tuple[str, ...] = ()  # the host's devices, for local processes
    docker: DockerConfig | None = None  # None: this server runs no containers
    slurm: SlurmConfig | None = None  # None: this server has no Slurm pools
    kubernetes: KubernetesConfig | None = None  # None: this server has no Kubernetes pools
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES  # each attempt's log, cut there (log_cap)


@dataclass(frozen=True)
class Backend:
    """One kind's executor, and the pool of that kind's name that serves it without a policy
    file."""

    executor: Executor
    default_pool: PoolCapacity


def _local(settings: ExecutorSettings) -> Backend:
    return Backend(LocalExecutor(settings.state_dir, settings.max_log_bytes),
                   PoolCapacity(JobKind.LOCAL, max_jobs=settings.local_max_jobs,
                                gpu_ids=settings.local_gpu_ids))


def _docker(settings: ExecutorSettings) -> Backend | None:
    docker = settings.docker
    if docker is None:
        return None
    from trainyard.executors.docker import DockerExecutor

    return Backend(DockerExecutor(docker, settings.max_log_bytes),
                   PoolCapacity(JobKind.DOCKER, max_jobs=docker.max_containers,
                                cpus=docker.cpus, memory_mb=docker.memory_mb,
                                gpu_ids=docker.gpu_ids))


def _slurm(settings: ExecutorSettings) -> Backend | None:
    """One executor for every Slurm pool of the policy file (LaunchRequest.pool picks the
    partition); Slurm pools come only from a policy file, so the default pool is nominal."""
    slurm = settings.slurm
    if slurm is None:
        return None
    from trainyard.executors.slurm import SlurmExecutor

    return Backend(SlurmExecutor(slurm), PoolCapacity(JobKind.SLURM, max_jobs=1000))


def _kubernetes(settings: ExecutorSettings) -> Backend | None:
    """One executor for every Kubernetes pool of the policy file (LaunchRequest.pool picks
    the cluster and namespace); like Slurm's, its pools come only from a policy file."""
    kubernetes = settings.kubernetes
    if kubernetes is None:
        return None
    from trainyard.executors.kubernetes.executor import KubernetesExecutor

    return Backend(KubernetesExecutor(kubernetes),
                   PoolCapacity(JobKind.KUBERNETES, max_jobs=1000))


# Each kind's builder; one returns None where the server is not set up to run that kind.
BUILDERS: Mapping[str, Callable[[ExecutorSettings], Backend | None]] = {
    JobKind.LOCAL: _local,
    JobKind.DOCKER: _docker,
    JobKind.SLURM: _slurm,
    JobKind.KUBERNETES: _kubernetes,
}


def build_backends(settings: ExecutorSettings) -> dict[str, Backend]:
    """The backends a server with these settings runs, by kind."""
    built = {kind: build(settings) for kind, build in BUILDERS.items()}
    return {kind: backend for kind, backend in built.items() if backend is not None}


def executor_for(executors_by_kind: Mapping[str, Executor], kind: str) -> Executor:
    """The executor that runs jobs of `kind`; LaunchError if this server runs none."""
    executor = executors_by_kind.get(kind)
    if executor is None:
        raise LaunchError(f"this server runs no {kind} executor")
    return executor
