"""Executors are found by the kind of job they run."""

from pathlib import Path

import pytest

from trainyard.domain.kinds import KINDS, JobKind
from trainyard.executors.base import LaunchError
from trainyard.executors.local import LocalExecutor
from trainyard.executors.registry import (
    BUILDERS,
    ExecutorSettings,
    build_executors,
    executor_for,
)


def test_every_kind_has_a_builder() -> None:
    assert set(BUILDERS) == set(KINDS)


def test_a_server_without_docker_settings_runs_local_processes_only(tmp_path: Path) -> None:
    executors = build_executors(ExecutorSettings(state_dir=tmp_path / "executor"))
    assert set(executors) == {JobKind.LOCAL}
    local = executor_for(executors, JobKind.LOCAL)
    assert isinstance(local, LocalExecutor) and local.state_dir == tmp_path / "executor"
    with pytest.raises(LaunchError, match="this server runs no docker executor"):
        executor_for(executors, JobKind.DOCKER)
