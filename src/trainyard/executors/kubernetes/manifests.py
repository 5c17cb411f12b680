"""One attempt as a Kubeflow custom resource, as a plain dict: pure, the same request gives
the same object. The command runs under the job runtime, which stages the dataset and
checkpoint into the container and pushes what the job writes back to the service."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trainyard.domain.pools import KubernetesPool
from trainyard.executors.base import TOKEN_ENV, LaunchRequest
from trainyard.executors.kubernetes.resources import (
    ATTEMPT,
    INSTANCE,
    JOB_ID,
    KUEUE_QUEUE,
    MANAGED_BY,
    MANAGER,
    PYTORCH_JOB,
    TF_JOB,
    TOKEN_KEY,
    TRAIN_JOB,
    ResourceKind,
)

Manifest = dict[str, Any]
NODE_ENV = "TRAINYARD_NODE_NAME"  # the pod's node, for the runtime's node-local cache
CA_ENV = "TRAINYARD_SERVICE_CA"  # the service's CA certificate, when it serves TLS
TRAINER_MANAGER = "trainyard.io/trainyard"  # who owns the TrainJob's runtime patch


@dataclass(frozen=True)
class Placement:
    """Where and as what one attempt is created."""

    resource: ResourceKind
    namespace: str
    instance: str  # this service's id, in a label
    service_address: str  # where the runtime reaches the service
    grace_s: float
    tls_ca_pem: bytes = b""  # the service's CA, when it serves TLS


def labels(request: LaunchRequest, instance: str) -> dict[str, str]:
    return {MANAGED_BY: MANAGER, INSTANCE: instance, JOB_ID: request.job_id,
            ATTEMPT: str(request.attempt)}


def runtime_argv(request: LaunchRequest, pool: KubernetesPool, place: Placement) -> list[str]:
    """The container's command: the job runtime's agent around the job's command."""
    argv = [pool.python, "-m", "trainyard.runtime", "run", "--service", place.service_address,
            "--staging", "pull", "--cache-dir", pool.cache_dir, "--cache-mb",
            str(pool.cache_mb), "--grace", f"{place.grace_s:g}"]
    if request.framework:
        argv += ["--framework", request.framework]
    if place.tls_ca_pem:
        argv += ["--tls-ca", f"env:{CA_ENV}"]
    return [*argv, "--", request.command]


def container_env(request: LaunchRequest, pool: KubernetesPool, place: Placement
                  ) -> list[dict[str, Any]]:
    """The contract (without its paths: the runtime sets them), the pod's node, and the
    attempt's token: from the attempt's Secret, or inline where the pool says so."""
    env: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in
                                 sorted(request.remote_contract(shared=False).items())]
    env.append({"name": NODE_ENV, "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}})
    if place.tls_ca_pem:
        env.append({"name": CA_ENV, "value": place.tls_ca_pem.decode()})
    if pool.token_delivery == "env":
        env.append({"name": TOKEN_ENV, "value": request.job_token})
    else:
        env.append({"name": TOKEN_ENV, "valueFrom": {"secretKeyRef": {
            "name": request.handle, "key": TOKEN_KEY}}})
    return env


def quantities(request: LaunchRequest) -> dict[str, dict[str, str]]:
    """Each worker's requests and limits, equal, so the pod's share is what the scheduler
    counted."""
    res = request.resources
    amounts = {"cpu": _cpu(res.cpus)}
    if res.memory_mb > 0:
        amounts["memory"] = f"{res.memory_mb}Mi"
    if res.gpus > 0:
        amounts["nvidia.com/gpu"] = str(res.gpus)
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _cpu(cpus: float) -> str:
    millis = max(1, math.ceil(cpus * 1000))
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def pod_spec(request: LaunchRequest, pool: KubernetesPool, place: Placement) -> dict[str, Any]:
    container = {"name": place.resource.container, "image": request.image,
                 "imagePullPolicy": pool.image_pull_policy,
                 "command": runtime_argv(request, pool, place),
                 "env": container_env(request, pool, place),
                 "resources": quantities(request)}
    spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never"}
    spec.update(scheduling(pool, place))
    return spec


def scheduling(pool: KubernetesPool, place: Placement) -> dict[str, Any]:
    """The pod spec's fields the pool sets: service account, nodes, tolerations, grace."""
    found: dict[str, Any] = {"terminationGracePeriodSeconds": math.ceil(place.grace_s)}
    if pool.service_account:
        found["serviceAccountName"] = pool.service_account
    if pool.node_selector:
        found["nodeSelector"] = dict(pool.node_selector)
    if pool.tolerations:
        found["tolerations"] = [_toleration(t) for t in pool.tolerations]
    return found


def _toleration(t: Any) -> dict[str, Any]:
    found = {"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect,
             "tolerationSeconds": t.seconds}
    return {k: v for k, v in found.items() if v not in ("", None)}


def run_policy(request: LaunchRequest, pool: KubernetesPool) -> dict[str, Any]:
    """Retries are Trainyard's to decide (backoffLimit 0); Kueue admits a suspended one."""
    policy: dict[str, Any] = {"backoffLimit": 0, "cleanPodPolicy": "Running"}
    if request.time_limit_s is not None:
        policy["activeDeadlineSeconds"] = max(1, math.ceil(request.time_limit_s))
    if pool.cleanup == "keep":
        policy["ttlSecondsAfterFinished"] = pool.ttl_s
    if pool.admission == "kueue":
        policy["suspend"] = True
    return policy


def replica(count: int, request: LaunchRequest, pool: KubernetesPool, place: Placement
            ) -> dict[str, Any]:
    return {"replicas": count, "restartPolicy": "Never", "template": {
        "metadata": {"labels": labels(request, place.instance)},
        "spec": pod_spec(request, pool, place)}}


def manifest(request: LaunchRequest, pool: KubernetesPool, place: Placement) -> Manifest:
    """The custom resource of one attempt, named by its handle."""
    resource = place.resource
    meta_labels = labels(request, place.instance)
    if pool.admission == "kueue" and pool.queue_name:
        meta_labels[KUEUE_QUEUE] = pool.queue_name
    body: Manifest = {"apiVersion": resource.api_version, "kind": resource.kind,
                      "metadata": {"name": request.handle, "namespace": place.namespace,
                                   "labels": meta_labels}}
    workers = request.workers
    if resource == PYTORCH_JOB:
        replicas = {"Master": replica(1, request, pool, place)}
        if workers > 1:
            replicas["Worker"] = replica(workers - 1, request, pool, place)
        body["spec"] = {"runPolicy": run_policy(request, pool), "pytorchReplicaSpecs": replicas}
    elif resource == TF_JOB:
        if pool.chief:
            replicas = {"Chief": replica(1, request, pool, place)}
            if workers > 1:
                replicas["Worker"] = replica(workers - 1, request, pool, place)
        else:
            replicas = {"Worker": replica(workers, request, pool, place)}
        body["spec"] = {"runPolicy": run_policy(request, pool), "tfReplicaSpecs": replicas}
    elif resource == TRAIN_JOB:
        body["spec"] = train_job_spec(request, pool, place)
    else:
        raise ValueError(f"no manifest for {resource.kind}")
    return body


def train_job_spec(request: LaunchRequest, pool: KubernetesPool, place: Placement
                   ) -> dict[str, Any]:
    """A TrainJob: the trainer's image, command and env on `workers` nodes, one process
    each, against the pool's training runtime; the pool's pod settings as a runtime patch."""
    spec: dict[str, Any] = {
        "runtimeRef": {"name": pool.runtime_ref, "apiGroup": TRAIN_JOB.group,
                       "kind": pool.runtime_kind},
        "trainer": {"image": request.image, "command": runtime_argv(request, pool, place),
                    "env": container_env(request, pool, place), "numNodes": request.workers,
                    "numProcPerNode": 1, "resourcesPerNode": quantities(request)}}
    if pool.admission == "kueue":
        spec["suspend"] = True
    if request.time_limit_s is not None:
        spec["activeDeadlineSeconds"] = max(1, math.ceil(request.time_limit_s))
    spec["runtimePatches"] = [{"manager": TRAINER_MANAGER, "trainingRuntimeSpec": {
        "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {
            "template": {"metadata": {"labels": labels(request, place.instance)},
                         "spec": scheduling(pool, place)}}}}]}}}}]
    return spec


def token_secret(request: LaunchRequest, namespace: str, instance: str,
                 owner: dict[str, str]) -> Manifest:
    """The attempt's Secret, owned by its resource (`owner`: apiVersion, kind, name, uid), so
    it goes when the resource does."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": request.handle, "namespace": namespace,
                         "labels": labels(request, instance),
                         # blockOwnerDeletion would need rights on the owner's
                         # finalizers, which many clusters enforce; the Secret goes
                         # with its owner all the same.
                         "ownerReferences": [{**owner, "controller": False,
                                              "blockOwnerDeletion": False}]},
            "stringData": {TOKEN_KEY: request.job_token}}
