"""A server's Kubernetes pools: the executor that serves them, built from the policy file;
the check at start that each cluster serves the resources its pools create; and each pool's
capacity, read from its nodes' allocatable resources where the core API answers and the
file leaves it out."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from trainyard.domain.kinds import JobKind
from trainyard.domain.policy import Policy, Pool
from trainyard.domain.pools import KubernetesPool
from trainyard.executors.kubernetes.config import KubernetesConfig, cluster_key
from trainyard.executors.kubernetes.errors import ApiAway, ApiRefused
from trainyard.executors.kubernetes.resources import RESOURCES, ResourceKind, selector
from trainyard.services.policy_file import PolicyError

if TYPE_CHECKING:  # the executor loads the Kubernetes client
    from trainyard.executors.kubernetes.api import KubeApi
    from trainyard.executors.kubernetes.executor import KubernetesExecutor

log = logging.getLogger(__name__)

_MEMORY_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
                 "K": 10**3, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}


def kubernetes_pools(policy: Policy | None) -> dict[str, KubernetesPool]:
    """The policy's pools of executor "kubernetes", by name."""
    if policy is None:
        return {}
    return {name: pool.kubernetes for name, pool in policy.pools.items()
            if pool.executor == JobKind.KUBERNETES and pool.kubernetes is not None}


def kubernetes_config(pools: Mapping[str, KubernetesPool], *, instance: str,
                      tls_ca_pem: bytes, grace_s: float) -> KubernetesConfig | None:
    if not pools:
        return None
    return KubernetesConfig(instance=instance, pools=dict(pools), grace_s=grace_s,
                            tls_ca_pem=tls_ca_pem)


@dataclass(frozen=True)
class NodeCapacity:
    """What a cluster's nodes can give pods, added up, and its largest node's."""

    cpus: float
    memory_mb: int
    gpus: int
    node_cpus: float
    node_memory_mb: int
    node_gpus: int


def cpu_quantity(text: str) -> float:
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def memory_mb(text: str) -> int:
    for unit, factor in _MEMORY_UNITS.items():
        if text.endswith(unit):
            return int(float(text[:-len(unit)]) * factor) // 2**20
    return int(float(text)) // 2**20


def _tolerated(taint: dict[str, Any], pool: KubernetesPool) -> bool:
    if taint.get("effect") not in ("NoSchedule", "NoExecute"):
        return True  # PreferNoSchedule keeps no pod off
    return any((not t.key and t.operator == "Exists") or
               (t.key == taint.get("key") and (t.operator == "Exists" or
                                               t.value == taint.get("value", "")) and
                t.effect in ("", taint.get("effect")))
               for t in pool.tolerations)


def pool_nodes(nodes: list[dict[str, Any]], pool: KubernetesPool) -> list[dict[str, Any]]:
    """The nodes the pool's pods may land on: schedulable, carrying its node selector's
    labels, and with no taint its tolerations do not tolerate."""
    found = []
    for node in nodes:
        meta, spec = node.get("metadata") or {}, node.get("spec") or {}
        labels = meta.get("labels") or {}
        if spec.get("unschedulable") or any(labels.get(k) != v for k, v in pool.node_selector):
            continue
        if all(_tolerated(taint, pool) for taint in spec.get("taints") or []):
            found.append(node)
    return found


def node_capacity(nodes: list[dict[str, Any]]) -> NodeCapacity | None:
    """The nodes' allocatable resources added up, and the largest's; None without any."""
    each = []
    for node in nodes:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        each.append((cpu_quantity(str(allocatable.get("cpu", "0"))),
                     memory_mb(str(allocatable.get("memory", "0"))),
                     int(str(allocatable.get("nvidia.com/gpu", "0")))))
    if not each:
        return None
    return NodeCapacity(sum(e[0] for e in each), sum(e[1] for e in each),
                        sum(e[2] for e in each), max(e[0] for e in each),
                        max(e[1] for e in each), max(e[2] for e in each))


class KubernetesClusters:
    """Each Kubernetes pool's cluster, as the server found it at start."""

    def __init__(self, executor: KubernetesExecutor, pools: Mapping[str, KubernetesPool]
                 ) -> None:
        self.executor = executor
        self.pools = dict(pools)
        self._lock = threading.Lock()
        self._capacity: dict[str, NodeCapacity] = {}

    def check(self) -> None:
        """Every pool's cluster answers and serves what the pool creates; RuntimeError
        with a sentence naming the pool otherwise. Reads the nodes where it can."""
        for name, pool in self.pools.items():
            api = self.executor.clusters[cluster_key(pool)].api
            try:
                for kind in pool.kinds:
                    why = api.served(RESOURCES[kind])
                    if why is not None:
                        raise RuntimeError(f"Kubernetes pool {name!r} creates {kind}s, but "
                                           f"{why}")
                    self._may_list(api, name, RESOURCES[kind])
                nodes = api.nodes()
            except (ApiAway, ApiRefused) as exc:
                raise RuntimeError(f"Kubernetes pool {name!r}: {exc}") from None
            found = node_capacity(pool_nodes(nodes, pool)) if nodes is not None else None
            if found is None:
                log.info("Kubernetes pool %r: the nodes cannot be read (no core API access); "
                         "its capacity is what the policy file declares", name)
                continue
            with self._lock:
                self._capacity[name] = found

    def _may_list(self, api: KubeApi, name: str, resource: ResourceKind) -> None:
        """The server follows its resources with one watch per kind across the cluster."""
        try:
            api.list(resource, selector(self.executor.config.instance))
        except ApiRefused as exc:
            if exc.status not in (401, 403):
                raise
            raise RuntimeError(
                f"Kubernetes pool {name!r}: the API server refuses to list {resource.plural} "
                f"across the cluster ({exc}): the server's credentials need a ClusterRole that "
                "may list and watch them") from None

    def complete(self, policy: Policy) -> Policy:
        """The policy with each Kubernetes pool's capacity, where the file leaves it out,
        read from its nodes (a pool Kueue admits for counts only its largest node). A
        policy whose Kubernetes pools are not the ones the server started with is refused."""
        if kubernetes_pools(policy) != self.pools:
            raise PolicyError(["the Kubernetes pools (their names and settings) are those the "
                               "server started with; restart it to change them"])
        with self._lock:
            read = dict(self._capacity)
        pools = {name: _completed(pool, read[name]) if name in read else pool
                 for name, pool in policy.pools.items()}
        return replace(policy, pools=pools)


def _completed(pool: Pool, read: NodeCapacity) -> Pool:
    cap = pool.capacity
    node = replace(cap, node_cpus=read.node_cpus, node_memory_mb=read.node_memory_mb,
                   node_gpus=read.node_gpus)
    if pool.kubernetes is not None and pool.kubernetes.admission == "kueue":
        return replace(pool, capacity=node)  # Kueue counts the rest
    gpu_ids = cap.gpu_ids or tuple(str(i) for i in range(read.gpus))
    return replace(pool, capacity=replace(
        node, cpus=cap.cpus if cap.cpus is not None else read.cpus,
        memory_mb=cap.memory_mb if cap.memory_mb is not None else read.memory_mb,
        gpu_ids=gpu_ids))
