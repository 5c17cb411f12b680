"""A live server whose policy file has a Kubernetes pool on the test API server (each
replica its own node, so each its own staging directory), and what the tests look at."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubernetes import client

from tests.liveserver import live_server
from trainyard.server.assembly import TrainyardServer
from trainyard.store.db import sqlite_url
from trainyard.testbed.kube_apiserver import KubeApiServer

PLURALS = {"PyTorchJob": ("kubeflow.org", "v1", "pytorchjobs"),
           "TFJob": ("kubeflow.org", "v1", "tfjobs"),
           "TrainJob": ("trainer.kubeflow.org", "v1alpha1", "trainjobs")}
RUNTIME = "torch-distributed"


def kube_policy(kube: KubeApiServer, namespace: str, cache: Path, extra: str = "",
                kinds: str = '"PyTorchJob", "TFJob", "TrainJob"',
                capacity: str = "cpus = 8\nmemory_mb = 16384", queue: str = "") -> str:
    """`queue`: more keys of the default queue."""
    return f"""
max_running = 8
[pools.k8s]
executor = "kubernetes"
{capacity}
[pools.k8s.kubernetes]
kinds = [{kinds}]
kubeconfig = "{kube.kubeconfig}"
namespace = "{namespace}"
token_delivery = "env"
{extra or f'runtime_ref = "{RUNTIME}"'}
python = "{sys.executable}"
cache_dir = "{cache}/{{node}}"
grace = "3s"
[queues.default]
pools = ["k8s"]
{queue}"""


@contextlib.contextmanager
def kube_server(tmp_path: Path, kube: KubeApiServer, namespace: str, extra: str = "",
                kinds: str = '"PyTorchJob", "TFJob", "TrainJob"',
                capacity: str = "cpus = 8\nmemory_mb = 16384", queue: str = "",
                **tracker: object) -> Iterator[TrainyardServer]:
    """`extra`: the pool's table's last lines (its runtime_ref unless they say); `queue`:
    more keys of the default queue."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    with live_server(tmp_path, sqlite_url(tmp_path),
                     kube_policy(kube, namespace, tmp_path / "nodes", extra, kinds,
                                 capacity, queue),
                     **tracker) as srv:
        yield srv


def custom(kube: KubeApiServer) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube.api_client())


def get_object(kube: KubeApiServer, kind: str, namespace: str, name: str
               ) -> dict[str, Any] | None:
    group, version, plural = PLURALS[kind]
    try:
        found: dict[str, Any] = custom(kube).get_namespaced_custom_object(
            group, version, namespace, plural, name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


def ensure_training_runtime(kube: KubeApiServer) -> None:
    """The ClusterTrainingRuntime the pool's TrainJobs run against (torch, one node job)."""
    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
            "metadata": {"name": RUNTIME},
            "spec": {"mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": 1}},
                     "template": {"spec": {"replicatedJobs": [{
                         "name": "node", "template": {"spec": {"template": {"spec": {
                             "containers": [{"name": "node", "image": "x"}]}}}}}]}}}}
    with contextlib.suppress(client.ApiException):  # created by an earlier test
        custom(kube).create_cluster_custom_object("trainer.kubeflow.org", "v1alpha1",
                                                  "clustertrainingruntimes", body)
