"""The service through a real two-node Slurm cluster: jobs run as Slurm jobs whose tasks run
the job runtime, which brings the dataset and takes the metrics, log and model back."""

from __future__ import annotations

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
