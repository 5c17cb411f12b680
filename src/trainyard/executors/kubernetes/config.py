"""The Kubernetes executor's settings, free of the Kubernetes client."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trainyard.domain.pools import KubernetesPool


@dataclass(frozen=True)
class KubernetesConfig:
    instance: str  # this service's id: a label of everything it creates
    pools: Mapping[str, KubernetesPool]  # by pool name; LaunchRequest.pool picks one
    service_address: str = ""  # where pods reach the service, unless a pool says
    grace_s: float = 10.0  # a stopped pod's time to checkpoint, unless a pool says
    timeout_s: float = 10.0  # each API call's
    tls_ca_pem: bytes = b""  # the service's CA certificate, when it serves TLS


def cluster_key(pool: KubernetesPool) -> tuple[bool, str, str]:
    """Pools that name the same cluster share its client and watches."""
    return (pool.in_cluster, pool.kubeconfig, pool.context)
