"""The Kubernetes backend under faults: a cancel, a preemption that resumes from the
checkpoint, a service restart that adopts, finalizes and sweeps, and the API server away
and back."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from tests.kubeflow_operator import KubeflowOperator
from tests.liveserver import make_server, wait_until
from tests.server.kubeserver import PLURALS, custom, get_object, kube_policy, kube_server
from tests.server.slurmserver import wait_state
from tests.services.conftest import ROOT
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer
from trainyard.server.config import instance_id
from trainyard.store.db import sqlite_url
from trainyard.testbed.kube_apiserver import KubeApiServer

FINAL = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
IMAGE = "trainyard/base:latest"
# Counts on from its checkpoint, one step every 0.1 s, until a file says stop.
# The checkpoint is written aside and renamed: a stop between the truncation and the write
# of a plain `>` would leave it empty.
COUNTER = ('ck="$CHECKPOINT_PATH/step"; n=$(cat "$ck" 2>/dev/null || echo 0); '
           'echo "start from $n"; while [ ! -e {go} ] && [ $n -lt 3000 ]; do n=$((n+1)); '
           'echo $n > "$ck.new"; mv "$ck.new" "$ck"; sleep 0.1; done')


def test_cancel_deletes_the_resource_and_its_replicas_stop(
        tmp_path: Path, kube_api: KubeApiServer, kubeflow_operator: KubeflowOperator,
        kube_namespace: str) -> None:
    with kube_server(tmp_path, kube_api, kube_namespace) as srv:
        job_id, _ = srv.service.train(ROOT, JobSpec(
            name="long", image=IMAGE, command=COUNTER.format(go=tmp_path / "go"), workers=2))
        assert wait_state(srv, job_id, {JobState.RUNNING}) is JobState.RUNNING
        handle = srv.jobs.get(job_id).handle
        replicas = kubeflow_operator.processes(kube_namespace, handle)
        assert len(replicas) == 2 and all(r.exit_code is None for r in replicas)
        srv.service.cancel(ROOT, job_id)
        assert wait_state(srv, job_id, FINAL) is JobState.CANCELLED
        wait_until(lambda: get_object(kube_api, "PyTorchJob", kube_namespace, handle) is None)
        assert all(r.wait(10) for r in replicas)  # TERM'd with the deletion, and ended


def test_a_preempted_job_is_requeued_and_resumes_from_its_checkpoint(
        tmp_path: Path, kube_api: KubeApiServer, kubeflow_operator: KubeflowOperator,
        kube_namespace: str) -> None:
    go = tmp_path / "go"
    # The agent hears of a notice at its next push: this job writes no output, so at its
    # next heartbeat (5 s). A grace longer than that lets the notice, not the stop at the
    # grace's end, reach it.
    with kube_server(tmp_path, kube_api, kube_namespace,
                     queue='preempt_grace = "30s"') as srv:
        job_id, _ = srv.service.train(ROOT, JobSpec(name="resume", image=IMAGE,
                                                    command=COUNTER.format(go=go)))
        wait_state(srv, job_id, {JobState.RUNNING})
        first = srv.workspace.attempt(job_id, 1).log_path
        wait_until(lambda: first.exists() and "start from 0" in first.read_text())
        time.sleep(1.5)  # some steps into its checkpoint
        assert srv.jobs.update_fields(job_id, JobState.RUNNING, preempt_requested=True,
                                      message="preempted for a test")
        wait_until(lambda: srv.jobs.get(job_id).attempt == 2 and
             srv.jobs.get(job_id).state is JobState.RUNNING)
        second = srv.workspace.attempt(job_id, 2).log_path
        wait_until(lambda: second.exists() and "start from" in second.read_text())
        resumed = int(second.read_text().split("start from ")[1].split()[0])
        assert resumed > 0, second.read_text()
        # Its notice came through its runtime agent: the queue's default, TERM, which ends
        # this job (it sets no handler) long before its grace's end.
        assert "[trainyard runtime] preemption notice given (SIGTERM, " in first.read_text()
        go.touch()
        assert wait_state(srv, job_id, FINAL) is JobState.SUCCEEDED
        assert JobState.PREEMPTED in [e.to_state for e in srv.jobs.events(job_id)]


def test_a_restarted_service_adopts_finalizes_and_sweeps(
        tmp_path: Path, kube_api: KubeApiServer, kubeflow_operator: KubeflowOperator,
        kube_namespace: str) -> None:
    go_kept, go_done = tmp_path / "go-kept", tmp_path / "go-done"
    first = make_server(tmp_path, sqlite_url(tmp_path),
                        kube_policy(kube_api, kube_namespace, tmp_path / "nodes"))
    first.start()
    kept, _ = first.service.train(ROOT, JobSpec(name="kept", image=IMAGE,
                                                command=COUNTER.format(go=go_kept)))
    done, _ = first.service.train(ROOT, JobSpec(name="done", image=IMAGE,
                                                command=COUNTER.format(go=go_done)))
    wait_state(first, kept, {JobState.RUNNING})
    wait_state(first, done, {JobState.RUNNING})
    config = replace(first.config, port=first.port)
    first.tracker.stop()  # as a killed service would: its jobs are left as they are
    first.grpc.stop(0)
    for executor in first.executors.values():
        executor.close()
    first.db.close()
    # One job's command ends while no service runs (its runtime waits to report it), and
    # a resource of this service's belongs to no job.
    go_done.touch()
    time.sleep(1.0)  # its loop looks for the file every 0.1 s
    orphan = f"trainyard-{'0' * 19}-1"
    group, version, plural = PLURALS["PyTorchJob"]
    custom(kube_api).create_namespaced_custom_object(group, version, kube_namespace,
                                                     plural, _orphan(orphan, tmp_path))
    second = TrainyardServer(config)
    second.start()
    try:
        assert wait_state(second, done, FINAL) is JobState.SUCCEEDED
        assert second.jobs.get(kept).state is JobState.RUNNING
        wait_until(lambda: get_object(kube_api, "PyTorchJob", kube_namespace, orphan) is None)
        go_kept.touch()
        assert wait_state(second, kept, FINAL) is JobState.SUCCEEDED
        assert second.jobs.get(kept).attempt == 1  # adopted, not run again
        assert second.jobs.get(done).attempt == 1
    finally:
        second.stop(grace=0)


def _orphan(name: str, tmp_path: Path) -> dict[str, object]:
    instance = instance_id(tmp_path / "data")
    labels = {"app.kubernetes.io/managed-by": "trainyard", "trainyard.io/instance": instance,
              "trainyard.io/job-id": "0" * 19, "trainyard.io/attempt": "1"}
    template = {"spec": {"containers": [{"name": "pytorch", "image": IMAGE,
                                         "command": ["sleep", "1"]}]}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "labels": labels},
            "spec": {"runPolicy": {"suspend": True}, "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "restartPolicy": "Never", "template": template}}}}


def test_the_api_server_away_and_back(
        tmp_path: Path, kube_api: KubeApiServer, kubeflow_operator: KubeflowOperator,
        kube_namespace: str) -> None:
    go = tmp_path / "go"
    with kube_server(tmp_path, kube_api, kube_namespace) as srv:
        running, _ = srv.service.train(ROOT, JobSpec(name="running", image=IMAGE,
                                                     command=COUNTER.format(go=go)))
        wait_state(srv, running, {JobState.RUNNING})
        kube_api.stop_api()
        try:
            executor = srv.executors["kubernetes"]
            wait_until(lambda: executor.unavailable() is not None, timeout=10)
            waiting, _ = srv.service.train(ROOT, JobSpec(name="waiting", image=IMAGE,
                                                         command="true"))
            wait_until(lambda: srv.jobs.get(waiting).pending_code == ReasonCode.POOL_UNAVAILABLE)
            assert srv.jobs.get(waiting).pending_message.startswith("Kubernetes: ")
            time.sleep(1.0)
            assert srv.jobs.get(running).state is JobState.RUNNING
        finally:
            kube_api.start_api()
        assert wait_state(srv, waiting, FINAL) is JobState.SUCCEEDED
        go.touch()
        assert wait_state(srv, running, FINAL) is JobState.SUCCEEDED
        assert srv.jobs.get(running).attempt == 1
