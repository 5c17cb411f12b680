"""Executors are found by the kind of job they run."""

from pathlib import Path

import pytest

from trainyard.domain.kinds import KINDS, JobKind
from trainyard.executors.base import LaunchError
from trainyard.executors.local import LocalExecutor
from trainyard.executors.registry import (
    BUILDERS,
    ExecutorSettings,
    build_backends,
    executor_for,
)


def test_every_kind_has_a_builder() -> None:
    assert set(BUILDERS) == set(KINDS)


def test_a_server_without_docker_settings_runs_local_processes_only(tmp_path: Path) -> None:
    backends = build_backends(ExecutorSettings(state_dir=tmp_path / "executor",
                                               local_max_jobs=3, local_gpu_ids=("0",)))
    assert set(backends) == {JobKind.LOCAL}
    pool = backends[JobKind.LOCAL].default_pool  # the pool of the kind's name
    assert (pool.name, pool.max_jobs, pool.gpu_ids) == (JobKind.LOCAL, 3, ("0",))
    executors = {kind: backend.executor for kind, backend in backends.items()}
    local = executor_for(executors, JobKind.LOCAL)
    assert isinstance(local, LocalExecutor) and local.state_dir == tmp_path / "executor"
    with pytest.raises(LaunchError, match="this server runs no docker executor"):
        executor_for(executors, JobKind.DOCKER)
