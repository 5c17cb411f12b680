"""A registered algorithm's code directory through the real two-node Slurm cluster: the job
runtime stages it on the node (or, with shared staging, the job uses the service's copy), the
command runs in it with CODE_PATH set, and the model is the bytes a local run writes."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.algorithm_code import code_chunks, write_tree
from tests.executors.test_algorithm_code import TRAIN_PY
from tests.server.slurmserver import slurm_server, wait_state
from tests.services.conftest import ROOT
from trainyard.domain.spec import AlgorithmRef, DatasetRef, JobSpec
from trainyard.domain.states import JobState
from trainyard.services.algorithms import Registration
from trainyard.store.model_registry import ModelStore
from trainyard.testbed.slurm_cluster import SlurmCluster

FINAL = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
# Beside the Slurm pool, a local one: the same version run on the service's host.
HOST = """
[pools.host]
executor = "local"
cpus = 1
memory_mb = 1024
max_jobs = 1

[queues.host]
pools = ["host"]
"""
# Prints where it ran, then trains as the container test's trainer does.
WHERE = 'import os; print("CODE", os.environ["CODE_PATH"], "CWD", os.getcwd(), flush=True)\n'


@pytest.mark.parametrize("staging", ["pull", "shared"])
def test_a_code_job_on_the_cluster_writes_the_model_a_local_run_writes(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch,
        staging: str) -> None:
    with slurm_server(tmp_path, slurm_cluster, monkeypatch, staging,
                      policy={"tail": HOST}) as srv:
        with tempfile.TemporaryDirectory() as tmp:  # no image: command backends only
            code = write_tree(Path(tmp), {"train.py": WHERE + TRAIN_PY})
            version, _ = srv.services.algorithms.register(
                ROOT, Registration(name="hashy", code=True, command="python3 train.py",
                                   hyperparameters={"SEED": "7"}), code_chunks(code))
        data = write_tree(tmp_path / "rows", {"rows.csv": "1,2\n3,4\n"})
        dataset, _ = srv.services.datasets.register(ROOT, "rows", str(data))
        models, logs = {}, {}
        for queue in ("default", "host"):
            job_id, _ = srv.services.jobs.train(ROOT, JobSpec(
                name=f"on-{queue}", queue=queue, algorithm=AlgorithmRef("hashy"),
                dataset=DatasetRef("rows", dataset.version)))
            assert wait_state(srv, job_id, FINAL) is JobState.SUCCEEDED, \
                srv.jobs.get(job_id).message
            job = srv.jobs.get(job_id)
            assert job.spec.code_hash == version.code_hash
            model = ModelStore(srv.db).for_job(job_id)
            assert model is not None
            models[job.kind] = model.content_hash
            logs[job.kind] = srv.workspace.attempt(job_id, 1).log_path.read_text()
        assert set(models) == {"slurm", "local"}
        assert models["slurm"] == models["local"]  # the same model bytes
        stored = srv.workspace.code_of(version.code_hash)
        where = stored if staging == "shared" else \
            next((tmp_path / "nodes").glob(f"*/code/{version.code_hash}"))  # a node's cache
        assert f"CODE {where} CWD {where}" in logs["slurm"]
        assert f"CODE {stored} CWD {stored}" in logs["local"]
