"""One attempt as a Kubeflow resource: what the operator is given, and what is kept out."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from trainyard.domain.pools import KubernetesPool, Toleration
from trainyard.domain.spec import Resources
from trainyard.executors.base import JobFiles, LaunchRequest
from trainyard.executors.kubernetes.manifests import Placement, manifest, token_secret
from trainyard.executors.kubernetes.resources import PYTORCH_JOB, TF_JOB, TRAIN_JOB

FILES = JobFiles(*(Path("/srv/ty") / n for n in ("data", "model", "m.jsonl", "ck", "w", "l")))


def request(workers: int = 3, **extra: object) -> LaunchRequest:
    fields: dict[str, object] = dict(
        job_id="18c2f0a1b2c3d4e5f60", attempt=2, handle="trainyard-18c2f0a1b2c3d4e5f60-2",
        command="python train.py --epochs 3", image="registry.local/trainer:1",
        env={"OMP_NUM_THREADS": "2"}, hyperparameters={"lr": "0.1"},
        resources=Resources(1.5, 2048, 1), gpu_ids=(), files=FILES, workers=workers,
        job_token="tyjob_s3cret", pool="k8s", team="vision")
    fields.update(extra)
    return LaunchRequest(**fields)  # type: ignore[arg-type]


def place(resource: object = PYTORCH_JOB) -> Placement:
    return Placement(resource, "trainyard-vision", "inst01", "trainyard.svc:50051", 30.0)  # type: ignore[arg-type]


def env_of(container: dict) -> dict[str, object]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_a_pytorchjob_has_one_master_and_the_other_workers() -> None:
    body = manifest(request(), KubernetesPool(), place())
    assert body["apiVersion"] == "kubeflow.org/v1" and body["kind"] == "PyTorchJob"
    meta = body["metadata"]
    assert meta["name"] == "trainyard-18c2f0a1b2c3d4e5f60-2"
    assert meta["namespace"] == "trainyard-vision"
    assert meta["labels"] == {"app.kubernetes.io/managed-by": "trainyard",
                              "trainyard.io/instance": "inst01",
                              "trainyard.io/job-id": "18c2f0a1b2c3d4e5f60",
                              "trainyard.io/attempt": "2"}
    replicas = body["spec"]["pytorchReplicaSpecs"]
    assert (replicas["Master"]["replicas"], replicas["Worker"]["replicas"]) == (1, 2)
    assert body["spec"]["runPolicy"] == {"backoffLimit": 0, "cleanPodPolicy": "Running"}
    pod = replicas["Worker"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["name"] == "pytorch" and container["image"] == "registry.local/trainer:1"
    assert container["command"][:4] == ["python3", "-m", "trainyard.runtime", "run"]
    assert container["command"][-2:] == ["--", "python train.py --epochs 3"]
    assert "trainyard.svc:50051" in container["command"]
    assert container["resources"]["limits"] == {"cpu": "1500m", "memory": "2048Mi",
                                                "nvidia.com/gpu": "1"}
    assert pod["restartPolicy"] == "Never" and pod["terminationGracePeriodSeconds"] == 30


def test_the_token_is_read_from_the_attempts_secret_and_never_written_in_the_spec() -> None:
    body = manifest(request(), KubernetesPool(), place())
    assert "tyjob_s3cret" not in json.dumps(body)
    container = body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    env = env_of(container)
    assert env["TRAINYARD_JOB_TOKEN"] == {"secretKeyRef": {
        "name": "trainyard-18c2f0a1b2c3d4e5f60-2", "key": "token"}}
    assert env["TRAINYARD_NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["JOB_ID"] == "18c2f0a1b2c3d4e5f60" and env["OMP_NUM_THREADS"] == "2"
    # The runtime stages the files: the service's own paths are not the pod's.
    assert "TRAINING_DATA_PATH" not in env and "MODEL_SAVE_PATH" not in env
    secret = token_secret(request(), "trainyard-vision", "inst01", {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "n", "uid": "u-1"})
    assert secret["stringData"] == {"token": "tyjob_s3cret"}
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "u-1"


def test_a_service_with_tls_gives_its_ca_beside_the_other_variables() -> None:
    tls = Placement(PYTORCH_JOB, "ns", "inst01", "svc:50051", 30.0, b"-----BEGIN CERT")
    body = manifest(request(), KubernetesPool(), tls)
    container = body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert env_of(container)["TRAINYARD_SERVICE_CA"] == "-----BEGIN CERT"
    command = container["command"]
    assert command[command.index("--tls-ca") + 1] == "env:TRAINYARD_SERVICE_CA"


def test_env_delivery_puts_the_token_in_the_pod_template() -> None:
    body = manifest(request(), KubernetesPool(token_delivery="env"), place())
    container = body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert env_of(container)["TRAINYARD_JOB_TOKEN"] == "tyjob_s3cret"


def test_the_pools_pod_settings_time_limit_and_kueue_mode() -> None:
    pool = KubernetesPool(service_account="trainer", node_selector=(("pool", "gpu"),),
                          tolerations=(Toleration("nvidia.com/gpu", "Exists", "",
                                                  "NoSchedule"),),
                          admission="kueue", queue_name="team-a", image_pull_policy="Always")
    body = manifest(request(time_limit_s=7200.4), pool, place())
    assert body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    policy = body["spec"]["runPolicy"]
    assert policy["suspend"] is True and policy["activeDeadlineSeconds"] == 7201
    pod = body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert pod["serviceAccountName"] == "trainer" and pod["nodeSelector"] == {"pool": "gpu"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists",
                                   "effect": "NoSchedule"}]
    assert pod["containers"][0]["imagePullPolicy"] == "Always"


def test_a_tfjob_has_workers_and_a_chief_when_the_pool_asks() -> None:
    plain = manifest(request(), KubernetesPool(kinds=("TFJob",)), place(TF_JOB))
    assert plain["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3
    assert "Chief" not in plain["spec"]["tfReplicaSpecs"]
    chief = manifest(request(), KubernetesPool(kinds=("TFJob",), chief=True), place(TF_JOB))
    replicas = chief["spec"]["tfReplicaSpecs"]
    assert (replicas["Chief"]["replicas"], replicas["Worker"]["replicas"]) == (1, 2)
    assert replicas["Chief"]["template"]["spec"]["containers"][0]["name"] == "tensorflow"


def test_a_trainjob_runs_on_its_runtime_with_one_process_per_node() -> None:
    pool = KubernetesPool(kinds=("TrainJob",), runtime_ref="torch-distributed",
                          node_selector=(("pool", "gpu"),))
    body = manifest(request(), pool, place(TRAIN_JOB))
    assert body["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    spec = body["spec"]
    assert spec["runtimeRef"] == {"name": "torch-distributed", "apiGroup":
                                  "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"}
    trainer = spec["trainer"]
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (3, 1)
    assert trainer["resourcesPerNode"]["requests"]["cpu"] == "1500m"
    patch = spec["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]
    node = patch["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert node["nodeSelector"] == {"pool": "gpu"}


def test_the_same_request_makes_the_same_object() -> None:
    assert manifest(request(), KubernetesPool(), place()) == \
        manifest(request(), KubernetesPool(), place())


def test_a_code_job_leaves_its_code_directory_to_the_runtime_to_stage() -> None:
    code = request(files=replace(FILES, code=Path("/srv/ty/code/" + "c" * 64)))
    body = json.dumps(manifest(code, KubernetesPool(), place()))
    # No host path in the pod: the agent pulls the directory, sets CODE_PATH and runs in it.
    assert "/srv/ty/code" not in body and "CODE_PATH" not in body
    assert body == json.dumps(manifest(request(), KubernetesPool(), place()))
