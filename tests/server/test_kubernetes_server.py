"""The service through a real Kubernetes API server with the Kubeflow CRDs, the operator's
part played by tests/kubeflow_operator.py: each replica a real local process on a node of its
own, running the job runtime, which brings the dataset and takes the results back."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.kubeflow_operator import KubeflowOperator
from tests.liveserver import make_server
from tests.server.kubeserver import custom, ensure_training_runtime, get_object, kube_server
from tests.server.slurmserver import wait_state
from tests.services.conftest import ROOT
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer
from trainyard.store.db import sqlite_url
from trainyard.testbed.kube_apiserver import KubeApiServer

FINAL = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
REPO = Path(__file__).resolve().parents[2]
IMAGE = "trainyard/base:latest"


def test_a_two_replica_pytorchjob_trains_ddp_and_its_results_arrive(
        tmp_path: Path, kube_api: KubeApiServer, kubeflow_operator: KubeflowOperator,
        kube_namespace: str, digits: Path) -> None:
    with kube_server(tmp_path, kube_api, kube_namespace) as srv:
        command = f"exec {sys.executable} {REPO}/examples/ddp_trainer.py"
        job_id, log = train_ddp(srv, digits, IMAGE, command)
        # One replica per node, each staging the dataset into its node's own directory.
        assert "node=node-0 rank=0 world=2" in log and "node=node-1 rank=1 world=2" in log, log
        assert {p.name for p in (tmp_path / "nodes").iterdir()} == {"node-0", "node-1"}


def train_ddp(srv: TrainyardServer, digits: Path, image: str, command: str
              ) -> tuple[str, str]:
    """A 2-worker DDP job on the digits data; its results checked; (job id, its log)."""
    version = srv.datasets.register(ROOT, "digits", str(digits))[0].version
    job_id, _ = srv.service.train(ROOT, JobSpec(
        name="ddp", image=image, dataset=DatasetRef("digits", version),
        command='echo "node=$TRAINYARD_NODE_NAME rank=$RANK world=$WORLD_SIZE"; ' + command,
        hyperparameters={"EPOCHS": "2", "SEED": "0"}, resources=Resources(cpus=1),
        workers=2, framework="pytorch"))
    wait_state(srv, job_id, {JobState.RUNNING, *FINAL}, timeout=600)
    job = srv.jobs.get(job_id)
    assert job.kind == "kubernetes"
    assert wait_state(srv, job_id, FINAL, timeout=600) is JobState.SUCCEEDED, \
        srv.jobs.get(job_id).message
    paths = srv.workspace.attempt(job_id, 1)
    digests = json.loads((paths.model_dir / "weights-sha256.json").read_text())
    assert digests["identical"] and set(digests["ranks"]) == {"0", "1"}, digests
    latest = srv.service.status(ROOT, job_id).latest_metrics
    assert latest["test_accuracy"][1] == 2 and latest["test_accuracy"][0] > 0.7, latest
    assert "model ddp version 1" in srv.jobs.get(job_id).message
    return job_id, paths.log_path.read_text()


# The same job on a real cluster with the training operator, when one is named: its pods
# must reach this server, listening on 127.0.0.1:TRAINYARD_TEST_SERVICE_PORT, at
# TRAINYARD_TEST_SERVICE_ADDRESS (a tunnel the tester sets up), and run an image with
# Trainyard, PyTorch and examples/ddp_trainer.py at TRAINYARD_TEST_TRAINER.
REAL = os.environ.get("TRAINYARD_TEST_KUBECONFIG", "")


@pytest.mark.skipif(not REAL, reason="TRAINYARD_TEST_KUBECONFIG names no real cluster")
def test_the_ddp_job_on_a_real_cluster(tmp_path: Path, digits: Path) -> None:
    env = os.environ
    policy = f"""
max_running = 2
[pools.k8s]
executor = "kubernetes"
[pools.k8s.kubernetes]
kubeconfig = "{REAL}"
namespace = "{env.get("TRAINYARD_TEST_NAMESPACE", "default")}"
token_delivery = "secret"
service_address = "{env["TRAINYARD_TEST_SERVICE_ADDRESS"]}"
[queues.default]
pools = ["k8s"]
"""
    srv = make_server(tmp_path, sqlite_url(tmp_path), policy)
    srv.config = replace(srv.config, port=int(env.get("TRAINYARD_TEST_SERVICE_PORT", "50151")))
    srv.start()
    try:
        train_ddp(srv, digits, env["TRAINYARD_TEST_IMAGE"],
                  f"exec python3 {env.get('TRAINYARD_TEST_TRAINER', '/opt/ddp_trainer.py')}")
    finally:
        for job in srv.jobs.in_states({JobState.WAITING, JobState.LAUNCHING,
                                       JobState.RUNNING}):
            srv.service.cancel(ROOT, job.id)
        srv.stop(grace=0)


def test_a_tfjob_and_a_trainjob_pass_the_upstream_schemas_and_run(
        tmp_path: Path, kube_api: KubeApiServer, kubeflow_operator: KubeflowOperator,
        kube_namespace: str) -> None:
    ensure_training_runtime(kube_api)
    # Which operator ran it shows in what it was told: TF_CONFIG, or a TrainJob's PET_*.
    command = 'echo "rank=$RANK of $WORLD_SIZE tf=${TF_CONFIG:+yes} pet=${PET_NNODES:+yes}"'
    with kube_server(tmp_path, kube_api, kube_namespace) as srv:
        tf_id, _ = srv.service.train(ROOT, JobSpec(name="tf", image=IMAGE, command=command,
                                                   workers=2, framework="tensorflow"))
        # The pool creates PyTorchJobs first: a TensorFlow job becomes its TFJob, whose
        # workers take their ranks from TF_CONFIG alone.
        assert wait_state(srv, tf_id, FINAL) is JobState.SUCCEEDED, srv.jobs.get(tf_id).message
        log = srv.workspace.attempt(tf_id, 1).log_path.read_text()
        assert "rank=0 of 2 tf=yes pet=" in log and "rank=1 of 2 tf=yes pet=" in log, log
    with kube_server(tmp_path / "trainjob", kube_api, kube_namespace,
                     kinds='"TrainJob"') as srv:
        tj_id, _ = srv.service.train(ROOT, JobSpec(name="tj", image=IMAGE, command=command,
                                                   workers=2))
        assert wait_state(srv, tj_id, FINAL) is JobState.SUCCEEDED, srv.jobs.get(tj_id).message
        log = srv.workspace.attempt(tj_id, 1).log_path.read_text()
        assert "rank=0 of 2 tf= pet=yes" in log and "rank=1 of 2 tf= pet=yes" in log, log
        events = [e.to_state for e in srv.jobs.events(tj_id)]
        assert JobState.RUNNING in events  # from its runtime's first call


def test_bad_input_is_refused_at_submit(
        tmp_path: Path, kube_api: KubeApiServer, kube_namespace: str) -> None:
    with kube_server(tmp_path, kube_api, kube_namespace,
                     kinds='"TrainJob"') as srv:
        with pytest.raises(InvalidArgument) as refused:
            srv.service.train(ROOT, JobSpec(name="big", image=IMAGE, command="true",
                                            resources=Resources(cpus=9)))
        assert refused.value.field == "resources.cpus"
        with pytest.raises(InvalidArgument) as no_command:
            srv.service.train(ROOT, JobSpec(name="bare", image=IMAGE))
        assert no_command.value.field == "command"
        with pytest.raises(InvalidArgument) as no_kind:
            srv.service.train(ROOT, JobSpec(name="tf", image=IMAGE, command="true",
                                            framework="tensorflow"))
        assert no_kind.value.field == "framework" and "TrainJob" in str(no_kind.value)
        assert srv.jobs.in_states({JobState.WAITING}) == []


def test_with_kueue_admitting_the_job_waits_suspended_naming_the_queue(
        tmp_path: Path, kube_api: KubeApiServer, kubeflow_operator: KubeflowOperator,
        kube_namespace: str) -> None:
    with kube_server(tmp_path, kube_api, kube_namespace,
                     kinds='"PyTorchJob"', capacity="",
                     extra='admission = "kueue"\nqueue_name = "team-a"') as srv:
        job_id, _ = srv.service.train(ROOT, JobSpec(name="held", image=IMAGE, command="true"))
        deadline = time.monotonic() + 30
        while "Kueue" not in srv.jobs.get(job_id).message:
            assert time.monotonic() < deadline, srv.jobs.get(job_id)
            time.sleep(0.1)
        job = srv.jobs.get(job_id)
        assert job.state is JobState.LAUNCHING and "'team-a'" in job.message, job.message
        held = get_object(kube_api, "PyTorchJob", kube_namespace, job.handle)
        assert held is not None and held["spec"]["runPolicy"]["suspend"] is True
        assert held["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
        time.sleep(1.0)
        assert srv.jobs.get(job_id).state is JobState.LAUNCHING  # Trainyard leaves it held
        # Kueue admits it: it unsuspends the resource, and the operator runs it.
        custom(kube_api).patch_namespaced_custom_object(
            "kubeflow.org", "v1", kube_namespace, "pytorchjobs", job.handle,
            {"spec": {"runPolicy": {"suspend": False}}})
        assert wait_state(srv, job_id, FINAL) is JobState.SUCCEEDED, srv.jobs.get(job_id).message
        assert "Kueue" not in srv.jobs.get(job_id).message
