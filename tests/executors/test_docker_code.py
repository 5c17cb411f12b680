"""Containers and code directories beside the key test (test_algorithm_code.py), on both
store dialects: a container of a job without code starts where its image says and has no
CODE_PATH, and a code directory without an image is refused for a queue of containers."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.algorithm_code import code_chunks, write_tree
from tests.dockerenv import TRAINER_IMAGE, Engine, engine, final, remove_containers
from tests.executors.test_algorithm_code import POLICY
from tests.liveserver import FAST
from tests.services.conftest import ROOT
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import AlgorithmRef, JobSpec
from trainyard.domain.states import JobState
from trainyard.executors.docker import CODE_MOUNT, DockerConfig
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.services.algorithms import Registration

__all__ = ["engine"]


def test_containers_with_and_without_code(engine: Engine, tmp_path: Path,
                                          database_url: str) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    srv = TrainyardServer(ServerConfig(
        data_dir=tmp_path / "data", database_url=database_url, port=0, policy_file=policy,
        docker=DockerConfig(instance="", cpus=2, memory_mb=2048, max_containers=2),
        tracker=FAST))
    srv.start()
    try:
        srv.access.bootstrap("root")
        workdir = engine.client.images.get(TRAINER_IMAGE).attrs["Config"].get("WorkingDir") \
            or "/"
        job_id, _ = srv.services.jobs.train(ROOT, JobSpec(
            name="plain", queue="box", image=TRAINER_IMAGE,
            command='echo "[${CODE_PATH-unset}] $(pwd)"'))
        assert final(srv, job_id, timeout=120).state is JobState.SUCCEEDED
        log = srv.workspace.attempt(job_id, 1).log_path.read_text()
        assert log == f"[unset] {workdir}\n" and workdir != CODE_MOUNT
        # Without an image the code runs only on a command backend: refused at submit.
        with tempfile.TemporaryDirectory() as tmp:
            code = write_tree(Path(tmp), {"train.py": "print(1)\n"})
            srv.services.algorithms.register(
                ROOT, Registration(name="bare", code=True, command="python3 train.py"),
                code_chunks(code))
        with pytest.raises(InvalidArgument) as refused:
            srv.services.jobs.train(ROOT, JobSpec(name="bare", queue="box",
                                                  algorithm=AlgorithmRef("bare")))
        assert refused.value.field == "command" and "runs no commands" in str(refused.value)
        # The same version in a queue of local processes is taken.
        taken, _ = srv.services.jobs.train(ROOT, JobSpec(name="bare", queue="host",
                                                         algorithm=AlgorithmRef("bare")))
        assert srv.jobs.get(taken).kind == "local"
        assert final(srv, taken, timeout=60).state is JobState.SUCCEEDED
    finally:
        srv.stop(grace=0)
        remove_containers(srv.workspace.data_dir)
