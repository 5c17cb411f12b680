"""The service through a real two-node Slurm cluster: jobs run as Slurm jobs whose tasks run
the job runtime, which brings the dataset and takes the metrics, log and model back."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.server.slurmserver import slurm_server, wait_state
from tests.services.conftest import ROOT
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.testbed.slurm_cluster import SlurmCluster

FINAL = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}


def test_a_job_runs_on_the_cluster_and_its_results_come_back(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "rows"
    data.mkdir()
    (data / "rows.csv").write_text("1\n2\n3\n")
    with slurm_server(tmp_path, slurm_cluster, monkeypatch) as srv:
        version = srv.datasets.register(ROOT, "rows", str(data))[0].version
        command = ('n=$(wc -l < "$TRAINING_DATA_PATH/rows.csv"); '
                   'echo "rows=$n on $SLURMD_NODENAME"; '
                   'echo "{\\"step\\": 1, \\"rows\\": $n}" >> "$METRICS_PATH"; '
                   'echo weights > "$MODEL_SAVE_PATH/w"')
        job_id, _ = srv.service.train(ROOT, JobSpec(name="rows", command=command,
                                                    dataset=DatasetRef("rows", version)))
        assert srv.jobs.get(job_id).kind == "slurm"
        assert wait_state(srv, job_id, FINAL) is JobState.SUCCEEDED, srv.jobs.get(job_id).message
        job = srv.jobs.get(job_id)
        paths = srv.workspace.attempt(job_id, 1)
        assert "rows=3 on n" in paths.log_path.read_text()
        assert srv.service.status(ROOT, job_id).latest_metrics["rows"] == (3.0, 1)
        assert "model rows version 1" in job.message


def test_a_job_larger_than_any_node_is_refused_at_submit(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    with slurm_server(tmp_path, slurm_cluster, monkeypatch) as srv:
        with pytest.raises(InvalidArgument) as refused:
            srv.service.train(ROOT, JobSpec(name="big", command="true",
                                            resources=Resources(cpus=3)))
        assert refused.value.field == "resources.cpus"
        assert "largest node" in str(refused.value)
        assert srv.jobs.in_states({JobState.WAITING}) == []


REPO = Path(__file__).resolve().parents[2]


def test_a_two_worker_ddp_job_trains_across_the_two_nodes(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch,
        digits: Path) -> None:
    with slurm_server(tmp_path, slurm_cluster, monkeypatch) as srv:
        version = srv.datasets.register(ROOT, "digits", str(digits))[0].version
        command = ('echo "node=$SLURMD_NODENAME rank=$RANK"; '
                   f"exec {sys.executable} {REPO}/examples/ddp_trainer.py")
        job_id, _ = srv.service.train(ROOT, JobSpec(
            name="ddp", command=command, dataset=DatasetRef("digits", version),
            hyperparameters={"EPOCHS": "2", "SEED": "0"}, resources=Resources(cpus=2),
            workers=2, framework="pytorch"))
        assert wait_state(srv, job_id, FINAL) is JobState.SUCCEEDED, srv.jobs.get(job_id).message
        paths = srv.workspace.attempt(job_id, 1)
        log = paths.log_path.read_text()
        assert "node=n1 rank=0" in log and "node=n2 rank=1" in log, log
        digests = json.loads((paths.model_dir / "weights-sha256.json").read_text())
        assert digests["identical"] and set(digests["ranks"]) == {"0", "1"}, digests
        assert len(set(digests["ranks"].values())) == 1
        assert (paths.model_dir / "model.pt").stat().st_size > 0
        latest = srv.service.status(ROOT, job_id).latest_metrics
        assert latest["loss"][1] == 2 and latest["test_accuracy"][1] == 2, latest
        assert latest["test_accuracy"][0] > 0.7, latest
        assert "model ddp version 1" in srv.jobs.get(job_id).message


def test_shared_staging_brings_the_output_metrics_and_model(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "rows"
    data.mkdir()
    (data / "rows.csv").write_text("1\n2\n")
    with slurm_server(tmp_path, slurm_cluster, monkeypatch, staging="shared") as srv:
        version = srv.datasets.register(ROOT, "rows", str(data))[0].version
        command = ('n=$(wc -l < "$TRAINING_DATA_PATH/rows.csv"); '
                   'echo "shared rows=$n on $SLURMD_NODENAME"; '
                   'echo "{\\"step\\": 1, \\"rows\\": $n}" >> "$METRICS_PATH"; '
                   'echo weights > "$MODEL_SAVE_PATH/w"')
        job_id, _ = srv.service.train(ROOT, JobSpec(name="shared", command=command,
                                                    dataset=DatasetRef("rows", version)))
        assert wait_state(srv, job_id, FINAL) is JobState.SUCCEEDED, srv.jobs.get(job_id).message
        paths = srv.workspace.attempt(job_id, 1)
        assert "shared rows=2 on n" in paths.log_path.read_text()
        assert (paths.model_dir / "w").read_text() == "weights\n"
        assert srv.service.status(ROOT, job_id).latest_metrics["rows"] == (2.0, 1)
        assert "model shared version 1" in srv.jobs.get(job_id).message


def test_a_job_slurm_holds_pending_is_launching_until_it_runs_on_a_node(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    # Work from outside Trainyard fills both nodes, so Slurm queues the job it is handed.
    outside = slurm_cluster.command(["sbatch", "--parsable", "--ntasks=2", "--cpus-per-task=2",
                                     "--output=/dev/null", "--wrap", "sleep 6"]).strip()
    try:
        with slurm_server(tmp_path, slurm_cluster, monkeypatch) as srv:
            job_id, _ = srv.service.train(ROOT, JobSpec(name="queued", command="true"))
            wait_state(srv, job_id, {JobState.LAUNCHING})
            time.sleep(2)  # Slurm has it, pending behind the outside job
            assert srv.jobs.get(job_id).state is JobState.LAUNCHING
            assert wait_state(srv, job_id, FINAL) is JobState.SUCCEEDED
            reasons = {e.to_state: e.reason for e in srv.jobs.events(job_id)}
            # Recorded when it was seen to run (or to have run), not when sbatch took it.
            assert reasons[JobState.RUNNING] != "process started"
    finally:
        slurm_cluster.command(["scancel", outside.split(";")[0]])
