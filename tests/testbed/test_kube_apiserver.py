"""The tests' Kubernetes API server (trainyard.testbed.kube_apiserver): the Kubeflow CRDs
served, validated and pruned as on a cluster, and objects kept across an API server
restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from trainyard.testbed import kube_apiserver
from trainyard.testbed.kube_apiserver import KubeApiServer


@pytest.fixture
def objects(kube_api: KubeApiServer) -> Iterator[client.CustomObjectsApi]:
    with kube_api.api_client() as api_client:
        yield client.CustomObjectsApi(api_client)


def pytorch_job(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "pytorch", "image": "python:3.11", "command": ["true"]}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "t"}},
            "spec": {"pytorchReplicaSpecs": {"Master": {
                "replicas": 1, "template": {"spec": {"containers": [container]}}}}, **spec}}


def resources(objects: client.CustomObjectsApi, group: str, version: str) -> set[str]:
    return {r.name for r in objects.get_api_resources(group, version).resources}


def test_the_kubeflow_crds_are_served(objects: client.CustomObjectsApi) -> None:
    assert {"pytorchjobs", "pytorchjobs/status", "tfjobs", "tfjobs/status",
            "mpijobs"} <= resources(objects, "kubeflow.org", "v1")
    assert {"trainjobs", "trainjobs/status", "trainingruntimes",
            "clustertrainingruntimes"} <= resources(objects, "trainer.kubeflow.org",
                                                    "v1alpha1")


def test_the_schema_is_enforced(objects: client.CustomObjectsApi, kube_namespace: str) -> None:
    body = pytorch_job("bad")
    del body["spec"]["pytorchReplicaSpecs"]
    with pytest.raises(client.ApiException) as refused:
        objects.create_namespaced_custom_object("kubeflow.org", "v1", kube_namespace,
                                                "pytorchjobs", body)
    assert refused.value.status == 422 and "pytorchReplicaSpecs" in str(refused.value.body)
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": {"name": "Not-A-Label"}, "spec": {"runtimeRef": {"name": "x"}}}
    with pytest.raises(client.ApiException) as refused:  # a CEL rule of the CRD
        objects.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1",
                                                kube_namespace, "trainjobs", trainjob)
    assert refused.value.status == 422 and "RFC 1035" in str(refused.value.body)
    objects.create_namespaced_custom_object("kubeflow.org", "v1", kube_namespace,
                                            "pytorchjobs", pytorch_job("pruned", extra=1))
    kept = objects.get_namespaced_custom_object("kubeflow.org", "v1", kube_namespace,
                                                "pytorchjobs", "pruned")
    assert "extra" not in kept["spec"]  # unknown fields are pruned


def test_a_restart_keeps_the_objects(kube_api: KubeApiServer,
                                     objects: client.CustomObjectsApi,
                                     kube_namespace: str) -> None:
    objects.create_namespaced_custom_object("kubeflow.org", "v1", kube_namespace,
                                            "pytorchjobs", pytorch_job("kept"))
    kube_api.restart_api()
    kept = objects.get_namespaced_custom_object("kubeflow.org", "v1", kube_namespace,
                                                "pytorchjobs", "kept")  # the same client
    assert kept["metadata"]["name"] == "kept"
    listed = objects.list_namespaced_custom_object(
        "kubeflow.org", "v1", kube_namespace, "pytorchjobs",
        label_selector="app.kubernetes.io/managed-by=t")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["kept"]


def test_availability_names_what_is_missing(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.setenv(kube_apiserver.TOOL_ENV, str(tmp_path))
    assert kube_apiserver.tool_dir() == tmp_path
    why = kube_apiserver.available()
    assert why is not None and "tool is missing" in why
