"""The executors there are, by the kind of job each runs (domain.kinds). A new backend is its
own module and one entry in BUILDERS (with its settings in ExecutorSettings)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.domain.kinds import JobKind
from trainyard.executors.base import Executor, LaunchError
from trainyard.executors.local import LocalExecutor

if TYPE_CHECKING:  # the Docker SDK is loaded only by a server that runs containers
    from trainyard.executors.docker import DockerConfig


@dataclass(frozen=True)
class ExecutorSettings:
    """What a server gives its executors."""

    state_dir: Path  # where local processes keep what a restarted service reads back
    docker: DockerConfig | None = None  # None: this server runs no containers


def _local(settings: ExecutorSettings) -> Executor:
    return LocalExecutor(settings.state_dir)


def _docker(settings: ExecutorSettings) -> Executor | None:
    if settings.docker is None:
        return None
    from trainyard.executors.docker import DockerExecutor

    return DockerExecutor(settings.docker)


# Each kind's builder; one returns None where the server is not set up to run that kind.
BUILDERS: Mapping[str, Callable[[ExecutorSettings], Executor | None]] = {
    JobKind.LOCAL: _local,
    JobKind.DOCKER: _docker,
}


def build_executors(settings: ExecutorSettings) -> dict[str, Executor]:
    """The executors a server with these settings runs, by kind."""
    built = {kind: build(settings) for kind, build in BUILDERS.items()}
    return {kind: executor for kind, executor in built.items() if executor is not None}


def executor_for(executors_by_kind: Mapping[str, Executor], kind: str) -> Executor:
    """The executor that runs jobs of `kind`; LaunchError if this server runs none."""
    executor = executors_by_kind.get(kind)
    if executor is None:
        raise LaunchError(f"this server runs no {kind} executor")
    return executor
