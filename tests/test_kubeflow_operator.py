"""The test-side Kubeflow operator (tests/kubeflow_operator.py) against the real API server:
what it runs for each kind, the variables it injects, the conditions it writes back, and
how it plays suspension and deletion. Every object passes the upstream CRD schemas."""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.kubeflow_operator import KubeflowOperator
from trainyard.testbed.kube_apiserver import KubeApiServer

PYTORCH = ("kubeflow.org", "v1", "pytorchjobs")
TFJOB = ("kubeflow.org", "v1", "tfjobs")
TRAINJOB = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
# Writes its environment as JSON to <dir>/<its node name>.json.
DUMP_ENV = ("import json, os, sys; "
            "json.dump(dict(os.environ), open(os.path.join(sys.argv[1], "
            "os.environ['NODE_NAME'] + '.json'), 'w'))")
NODE_NAME = {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}


@pytest.fixture
def api(kube_api: KubeApiServer) -> Iterator[client.CustomObjectsApi]:
    with kube_api.api_client() as api_client:
        yield client.CustomObjectsApi(api_client)


def replica(container: str, command: list[str], env: list[dict[str, Any]] | None = None,
            replicas: int = 1, grace_s: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": container, "image": "python:3.11",
                                            "command": command, "env": env or []}]}
    if grace_s is not None:
        spec["terminationGracePeriodSeconds"] = grace_s
    return {"replicas": replicas, "restartPolicy": "Never", "template": {"spec": spec}}


def v1_job(kind: str, name: str, replica_specs: dict[str, Any],
           suspend: bool = False) -> dict[str, Any]:
    field = "pytorchReplicaSpecs" if kind == "PyTorchJob" else "tfReplicaSpecs"
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": name},
            "spec": {field: replica_specs,
                     "runPolicy": {"backoffLimit": 0, "suspend": suspend}}}


def create(api: client.CustomObjectsApi, what: tuple[str, str, str], namespace: str,
           body: dict[str, Any]) -> None:
    group, version, plural = what
    api.create_namespaced_custom_object(group, version, namespace, plural, body)


def get(api: client.CustomObjectsApi, what: tuple[str, str, str], namespace: str,
        name: str) -> dict[str, Any] | None:
    group, version, plural = what
    try:
        found: dict[str, Any] = api.get_namespaced_custom_object(group, version, namespace,
                                                                 plural, name)
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return found


def condition(obj: dict[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == ctype), None)


def wait_condition(op: KubeflowOperator, api: client.CustomObjectsApi,
                   what: tuple[str, str, str], namespace: str, name: str, ctype: str,
                   timeout: float = 30.0) -> dict[str, Any]:
    op.wait_for(lambda: (condition(get(api, what, namespace, name), ctype) or {})
                .get("status") == "True", timeout, f"{name} {ctype}")
    found = get(api, what, namespace, name)
    assert found is not None
    return found


def dumped(directory: Path) -> dict[str, dict[str, str]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))}


def test_pytorchjob_runs_every_replica_with_the_operators_variables(
        kubeflow_operator: KubeflowOperator, api: client.CustomObjectsApi,
        kube_namespace: str, tmp_path: Path) -> None:
    command = ["python3", "-c", DUMP_ENV, str(tmp_path)]
    env = [NODE_NAME, {"name": "GREETING", "value": "hello"}]
    create(api, PYTORCH, kube_namespace, v1_job("PyTorchJob", "two", {
        "Master": replica("pytorch", command, env), "Worker": replica("pytorch", command, env)}))
    job = wait_condition(kubeflow_operator, api, PYTORCH, kube_namespace, "two", "Succeeded")

    envs = dumped(tmp_path)
    assert set(envs) == {"node-0", "node-1"}
    ports = {e["MASTER_PORT"] for e in envs.values()}
    assert len(ports) == 1 and int(ports.pop()) > 0
    assert {(e["RANK"], e["WORLD_SIZE"], e["MASTER_ADDR"]) for e in envs.values()} == {
        ("0", "2", "127.0.0.1"), ("1", "2", "127.0.0.1")}
    for e in envs.values():
        assert e["GREETING"] == "hello" and e["PYTHONUNBUFFERED"] == "1"
        assert e["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert condition(job, "Created")["reason"] == "PyTorchJobCreated"  # type: ignore[index]
    assert condition(job, "Running")["status"] == "False"  # type: ignore[index]
    assert condition(job, "Succeeded")["reason"] == "PyTorchJobSucceeded"  # type: ignore[index]
    status = job["status"]
    assert status["replicaStatuses"] == {"Master": {"active": 0, "succeeded": 1, "failed": 0},
                                         "Worker": {"active": 0, "succeeded": 1, "failed": 0}}
    assert status["startTime"] and status["completionTime"]
    replicas = kubeflow_operator.processes(kube_namespace, "two")
    assert [(r.name, r.node_name, r.exit_code) for r in replicas] == [
        ("Master-0", "node-0", 0), ("Worker-0", "node-1", 0)]
    assert all(r.output.is_file() and r.pid for r in replicas)


def test_a_failing_replica_fails_the_job_and_stops_the_others(
        kubeflow_operator: KubeflowOperator, api: client.CustomObjectsApi,
        kube_namespace: str) -> None:
    create(api, PYTORCH, kube_namespace, v1_job("PyTorchJob", "bad", {
        "Master": replica("pytorch", ["python3", "-c", "import time; time.sleep(60)"]),
        "Worker": replica("pytorch", ["python3", "-c", "raise SystemExit(3)"])}))
    job = wait_condition(kubeflow_operator, api, PYTORCH, kube_namespace, "bad", "Failed")
    failed = condition(job, "Failed")
    assert failed is not None and failed["reason"] == "PyTorchJobFailed"
    assert "Worker-0" in failed["message"] and "code 3" in failed["message"]
    kubeflow_operator.wait_for(lambda: all(
        r.exit_code is not None for r in kubeflow_operator.processes(kube_namespace, "bad")),
        10, "the master stopped")


def test_a_killed_replica_fails_the_job(kubeflow_operator: KubeflowOperator,
                                        api: client.CustomObjectsApi,
                                        kube_namespace: str) -> None:
    create(api, PYTORCH, kube_namespace, v1_job("PyTorchJob", "killed", {
        "Master": replica("pytorch", ["python3", "-c", "import time; time.sleep(60)"]),
        "Worker": replica("pytorch", ["python3", "-c", "import time; time.sleep(60)"])}))
    kubeflow_operator.wait_for(lambda: len(kubeflow_operator.processes(kube_namespace,
                                                                       "killed")) == 2, 20)
    kubeflow_operator.kill_replica(kube_namespace, "killed", 1, signal.SIGKILL)
    job = wait_condition(kubeflow_operator, api, PYTORCH, kube_namespace, "killed", "Failed")
    assert "Worker-0 exited with code -9" in condition(job, "Failed")["message"]  # type: ignore[index]


def test_tfjob_gets_tf_config(kubeflow_operator: KubeflowOperator,
                              api: client.CustomObjectsApi, kube_namespace: str,
                              tmp_path: Path) -> None:
    command = ["python3", "-c", DUMP_ENV, str(tmp_path)]
    create(api, TFJOB, kube_namespace, v1_job("TFJob", "tf", {
        "Chief": replica("tensorflow", command, [NODE_NAME]),
        "Worker": replica("tensorflow", command, [NODE_NAME], replicas=2)}))
    job = wait_condition(kubeflow_operator, api, TFJOB, kube_namespace, "tf", "Succeeded")
    assert condition(job, "Succeeded")["reason"] == "TFJobSucceeded"  # type: ignore[index]
    configs = [json.loads(e["TF_CONFIG"]) for e in dumped(tmp_path).values()]
    cluster = configs[0]["cluster"]
    assert len(cluster["chief"]) == 1 and len(cluster["worker"]) == 2
    assert all(addr.startswith("127.0.0.1:") for addr in cluster["chief"] + cluster["worker"])
    assert all(c["cluster"] == cluster and c["environment"] == "cloud" for c in configs)
    assert sorted((c["task"]["type"], c["task"]["index"]) for c in configs) == [
        ("chief", 0), ("worker", 0), ("worker", 1)]


def train_job(name: str, runtime: str, command: list[str], nodes: int = 2) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": runtime},
                     "trainer": {"image": "python:3.11", "command": command,
                                 "env": [NODE_NAME], "numNodes": nodes,
                                 "resourcesPerNode": {"requests": {"cpu": "1"}}}}}


def test_trainjob_gets_the_torch_runtimes_variables(
        kubeflow_operator: KubeflowOperator, api: client.CustomObjectsApi,
        kube_namespace: str, tmp_path: Path) -> None:
    runtime = f"torch-{kube_namespace}"
    api.create_cluster_custom_object("trainer.kubeflow.org", "v1alpha1",
                                     "clustertrainingruntimes", {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
        "metadata": {"name": runtime},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
                 "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {
                     "spec": {"template": {"spec": {"containers": [
                         {"name": "node", "image": "python:3.11"}]}}}}}]}}}})
    try:
        command = ["python3", "-c", DUMP_ENV, str(tmp_path)]
        create(api, TRAINJOB, kube_namespace, train_job("tj", runtime, command))
        create(api, TRAINJOB, kube_namespace, train_job("orphan", "no-such-runtime", command))
        job = wait_condition(kubeflow_operator, api, TRAINJOB, kube_namespace, "tj", "Complete")
        assert condition(job, "Complete")["reason"] == "JobsCompleted"  # type: ignore[index]
        envs = dumped(tmp_path)
        assert sorted((e["PET_NODE_RANK"], e["NODE_NAME"]) for e in envs.values()) == [
            ("0", "node-0"), ("1", "node-1")]
        for e in envs.values():
            assert (e["PET_NNODES"], e["PET_NPROC_PER_NODE"], e["PET_MASTER_ADDR"]) == (
                "2", "1", "127.0.0.1")
        assert len({e["PET_MASTER_PORT"] for e in envs.values()}) == 1
        orphan = wait_condition(kubeflow_operator, api, TRAINJOB, kube_namespace, "orphan",
                                "Failed")
        assert "runtime not found" in condition(orphan, "Failed")["message"]  # type: ignore[index]
        assert kubeflow_operator.processes(kube_namespace, "orphan") == []
        held = train_job("held", runtime, command)
        held["spec"]["suspend"] = True
        create(api, TRAINJOB, kube_namespace, held)
        held = wait_condition(kubeflow_operator, api, TRAINJOB, kube_namespace, "held",
                              "Suspended")
        assert condition(held, "Suspended")["reason"] == "Suspended"  # type: ignore[index]
        assert kubeflow_operator.processes(kube_namespace, "held") == []
    finally:
        api.delete_cluster_custom_object("trainer.kubeflow.org", "v1alpha1",
                                         "clustertrainingruntimes", runtime)


def test_a_suspended_job_runs_only_once_unsuspended(
        kubeflow_operator: KubeflowOperator, api: client.CustomObjectsApi,
        kube_namespace: str) -> None:
    create(api, PYTORCH, kube_namespace, v1_job("PyTorchJob", "held", {
        "Master": replica("pytorch", ["python3", "-c", "pass"])}, suspend=True))
    job = wait_condition(kubeflow_operator, api, PYTORCH, kube_namespace, "held", "Suspended")
    assert condition(job, "Suspended")["reason"] == "PyTorchJobSuspended"  # type: ignore[index]
    time.sleep(0.5)
    assert kubeflow_operator.processes(kube_namespace, "held") == []
    api.patch_namespaced_custom_object(*PYTORCH[:2], kube_namespace, PYTORCH[2], "held",
                                       {"spec": {"runPolicy": {"suspend": False}}})
    job = wait_condition(kubeflow_operator, api, PYTORCH, kube_namespace, "held", "Succeeded")
    assert condition(job, "Suspended")["status"] == "False"  # type: ignore[index]


def test_pause_holds_the_operator_until_resumed(
        kubeflow_operator: KubeflowOperator, api: client.CustomObjectsApi,
        kube_namespace: str) -> None:
    kubeflow_operator.pause()
    create(api, PYTORCH, kube_namespace, v1_job("PyTorchJob", "slow", {
        "Master": replica("pytorch", ["python3", "-c", "pass"])}))
    time.sleep(0.5)
    assert condition(get(api, PYTORCH, kube_namespace, "slow"), "Created") is None
    kubeflow_operator.resume()
    wait_condition(kubeflow_operator, api, PYTORCH, kube_namespace, "slow", "Succeeded")


# Says "ready" once its TERM handler is in place; on TERM writes "term" and exits 0.
TRAP_TERM = ("import pathlib, signal, sys, time\n"
             "def on_term(*_): pathlib.Path('term').write_text('x'); sys.exit(0)\n"
             "signal.signal(signal.SIGTERM, on_term)\n"
             "pathlib.Path('ready').write_text('x')\n"
             "time.sleep(60)\n")
IGNORE_TERM = ("import pathlib, signal, time\n"
               "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
               "pathlib.Path('ready').write_text('x')\n"
               "time.sleep(60)\n")


def test_foreground_deletion_terms_kills_after_the_grace_and_lets_the_object_go(
        kubeflow_operator: KubeflowOperator, api: client.CustomObjectsApi,
        kube_namespace: str) -> None:
    create(api, PYTORCH, kube_namespace, v1_job("PyTorchJob", "gone", {
        "Master": replica("pytorch", ["python3", "-c", TRAP_TERM], grace_s=1),
        "Worker": replica("pytorch", ["python3", "-c", IGNORE_TERM], grace_s=1)}))
    kubeflow_operator.wait_for(lambda: len(replicas := kubeflow_operator.processes(
        kube_namespace, "gone")) == 2 and all((r.workdir / "ready").exists() for r in replicas),
        20, "both replicas ready")
    master, worker = kubeflow_operator.processes(kube_namespace, "gone")
    kubeflow_operator.pause()  # to see the object held by its finalizer first
    api.delete_namespaced_custom_object(*PYTORCH[:2], kube_namespace, PYTORCH[2], "gone",
                                        propagation_policy="Foreground")
    held = get(api, PYTORCH, kube_namespace, "gone")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    assert "foregroundDeletion" in held["metadata"]["finalizers"]
    kubeflow_operator.resume()
    kubeflow_operator.wait_for(lambda: get(api, PYTORCH, kube_namespace, "gone") is None, 20,
                               "the object deleted")
    assert (master.workdir / "term").exists() and master.exit_code == 0
    assert worker.exit_code == -signal.SIGKILL


def test_a_background_deletion_kills_at_once(kubeflow_operator: KubeflowOperator,
                                             api: client.CustomObjectsApi,
                                             kube_namespace: str) -> None:
    create(api, PYTORCH, kube_namespace, v1_job("PyTorchJob", "quick", {
        "Master": replica("pytorch", ["python3", "-c", TRAP_TERM], grace_s=30)}))
    kubeflow_operator.wait_for(lambda: any((r.workdir / "ready").exists() for r in
                                           kubeflow_operator.processes(kube_namespace, "quick")),
                               20, "the replica ready")
    (master,) = kubeflow_operator.processes(kube_namespace, "quick")
    api.delete_namespaced_custom_object(*PYTORCH[:2], kube_namespace, PYTORCH[2], "quick")
    assert master.wait(5.0) and master.exit_code == -signal.SIGKILL


def test_a_secret_reference_fails_the_job(kubeflow_operator: KubeflowOperator,
                                          api: client.CustomObjectsApi,
                                          kube_namespace: str) -> None:
    env = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "tok", "key": "token"}}}]
    create(api, PYTORCH, kube_namespace, v1_job("PyTorchJob", "secret", {
        "Master": replica("pytorch", ["python3", "-c", "pass"], env)}))
    job = wait_condition(kubeflow_operator, api, PYTORCH, kube_namespace, "secret", "Failed")
    failed = condition(job, "Failed")
    assert failed is not None and failed["reason"] == "CreateContainerConfigError"
    assert "secret" in failed["message"] and "'tok'" in failed["message"]
    assert kubeflow_operator.processes(kube_namespace, "secret") == []


def test_the_operator_outlives_an_api_server_restart(
        kubeflow_operator: KubeflowOperator, kube_api: KubeApiServer,
        api: client.CustomObjectsApi, kube_namespace: str) -> None:
    create(api, PYTORCH, kube_namespace, v1_job("PyTorchJob", "across", {
        "Master": replica("pytorch", ["python3", "-c", "import time; time.sleep(1)"])}))
    kubeflow_operator.wait_for(lambda: bool(kubeflow_operator.processes(kube_namespace,
                                                                        "across")), 20)
    kube_api.stop_api()
    (master,) = kubeflow_operator.processes(kube_namespace, "across")
    assert master.wait(10.0)  # it ends while the API server is away
    kube_api.start_api()
    wait_condition(kubeflow_operator, api, PYTORCH, kube_namespace, "across", "Succeeded")
