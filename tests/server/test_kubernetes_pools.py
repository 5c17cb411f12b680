"""A server's Kubernetes pools at start: the cluster must answer and serve what the pool
creates; the nodes' allocatable resources fill the capacity the file leaves out."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.liveserver import make_server
from tests.server.kubeserver import kube_policy
from trainyard.domain.policy import Pool
from trainyard.domain.pools import KubernetesPool, PoolCapacity, Toleration
from trainyard.executors.kubernetes.api import KubeApi, api_client
from trainyard.executors.kubernetes.resources import ResourceKind
from trainyard.server.kubernetes_pools import _completed, memory_mb, node_capacity, pool_nodes
from trainyard.store.db import sqlite_url
from trainyard.testbed.kube_apiserver import KubeApiServer


def test_a_pool_whose_api_server_does_not_answer_stops_the_server_with_a_sentence(
        tmp_path: Path, kube_api: KubeApiServer) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kubeconfig = tmp_path / "away.kubeconfig"
    kubeconfig.write_text(kube_api.kubeconfig.read_text().replace(
        kube_api.url.rsplit(":", 1)[1], str(port)))
    policy = kube_policy(kube_api, "ns", tmp_path / "nodes").replace(
        str(kube_api.kubeconfig), str(kubeconfig))
    with pytest.raises(RuntimeError) as refused:
        make_server(tmp_path, sqlite_url(tmp_path), policy)
    assert str(refused.value).startswith("Kubernetes pool 'k8s': the API server at "
                                         f"https://127.0.0.1:{port} does not answer")


def test_a_kubeconfig_that_cannot_be_loaded_names_the_pool(tmp_path: Path,
                                                          kube_api: KubeApiServer) -> None:
    policy = kube_policy(kube_api, "ns", tmp_path / "nodes").replace(
        str(kube_api.kubeconfig), str(tmp_path / "no-such-kubeconfig"))
    with pytest.raises(RuntimeError) as refused:
        make_server(tmp_path, sqlite_url(tmp_path), policy)
    assert str(refused.value).startswith(
        f"Kubernetes pool 'k8s': cannot load its kubeconfig {tmp_path}/no-such-kubeconfig: ")


def test_a_kind_the_cluster_does_not_serve_is_named_with_what_to_install(
        kube_api: KubeApiServer) -> None:
    api = KubeApi(api_client(KubernetesPool(kubeconfig=str(kube_api.kubeconfig))))
    try:
        missing = ResourceKind("XJob", "nothere.example.org", "v1", "xjobs", "x", "the X operator")
        assert api.served(missing) == ("the cluster does not serve nothere.example.org/v1: "
                                       "install the X operator")
        assert api.nodes() is None  # this API server has no core API: capacity is declared
    finally:
        api.close()


def test_the_nodes_allocatable_resources_fill_what_the_file_leaves_out() -> None:
    nodes = [{"status": {"allocatable": {"cpu": "7500m", "memory": "30Gi",
                                         "nvidia.com/gpu": "4"}}},
             {"status": {"allocatable": {"cpu": "16", "memory": "64000000Ki"}}},
             {"spec": {"unschedulable": True}, "status": {"allocatable": {"cpu": "64"}}},
             {"spec": {"taints": [{"key": "node-role.kubernetes.io/control-plane",
                                   "effect": "NoSchedule"}]},
              "status": {"allocatable": {"cpu": "96"}}}]
    read = node_capacity(pool_nodes(nodes, KubernetesPool()))
    assert read is not None
    assert (read.cpus, read.memory_mb, read.gpus) == (23.5, 30720 + 62500, 4)
    assert (read.node_cpus, read.node_memory_mb, read.node_gpus) == (16, 62500, 4)
    assert memory_mb("1G") == 953 and memory_mb("2048Mi") == 2048
    declared = Pool(PoolCapacity("k8s", max_jobs=10, cpus=8.0), executor="kubernetes",
                    kubernetes=KubernetesPool())
    cap = _completed(declared, read).capacity
    assert (cap.cpus, cap.memory_mb, cap.gpus, cap.node_cpus) == (8.0, 93220, 4, 16)
    kueue = Pool(PoolCapacity("k8s", max_jobs=10), executor="kubernetes",
                 kubernetes=KubernetesPool(admission="kueue", queue_name="q"))
    held = _completed(kueue, read).capacity
    assert (held.cpus, held.memory_mb, held.gpus, held.node_cpus) == (None, None, 0, 16)


def test_a_pools_nodes_are_those_its_selector_and_tolerations_allow() -> None:
    gpu = {"metadata": {"labels": {"pool": "gpu"}},
           "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}}
    cpu = {"metadata": {"labels": {"pool": "cpu"}}}
    plain = KubernetesPool(node_selector=(("pool", "gpu"),))
    assert pool_nodes([gpu, cpu], plain) == []  # the GPU node's taint keeps it off
    tolerating = KubernetesPool(node_selector=(("pool", "gpu"),), tolerations=(
        Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),))
    assert pool_nodes([gpu, cpu], tolerating) == [gpu]
    assert pool_nodes([gpu, cpu], KubernetesPool()) == [cpu]
