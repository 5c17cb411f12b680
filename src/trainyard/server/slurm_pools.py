"""A server's Slurm pools: the one executor that serves them, built from the policy file, and
the capacity each reads from its controller, filled into the policy where the file leaves
it out and read again while the server runs."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace

from trainyard.domain.kinds import JobKind
from trainyard.domain.policy import Policy, Pool
from trainyard.domain.pools import SlurmPool
from trainyard.executors.slurm import SlurmConfig, SlurmExecutor
from trainyard.executors.slurm.capacity import ClusterCapacity, read_capacity
from trainyard.executors.slurm.commands import SlurmError
from trainyard.services.policy_file import PolicyError

log = logging.getLogger(__name__)

REFRESH_S = 60.0  # how often a running server reads its Slurm pools' capacity again


def slurm_pools(policy: Policy | None) -> dict[str, SlurmPool]:
    """The policy's pools of executor "slurm", by name."""
    if policy is None:
        return {}
    return {name: pool.slurm for name, pool in policy.pools.items()
            if pool.executor == JobKind.SLURM and pool.slurm is not None}


def slurm_config(pools: Mapping[str, SlurmPool], *, instance: str, tls_ca_pem: bytes,
                 grace_s: float) -> SlurmConfig | None:
    """The executor's settings; None without Slurm pools. The Slurm commands find their
    cluster as this server's environment says (SLURM_CONF)."""
    if not pools:
        return None
    env = {name: os.environ[name] for name in ("SLURM_CONF",) if name in os.environ}
    return SlurmConfig(instance=instance, pools=dict(pools), env=env, tls_ca_pem=tls_ca_pem,
                       grace_s=grace_s)


class SlurmCapacity:
    """Each Slurm pool's capacity as its controller declares it."""

    def __init__(self, executor: SlurmExecutor, pools: Mapping[str, SlurmPool]) -> None:
        self.executor = executor
        self.pools = dict(pools)
        self._lock = threading.Lock()
        self._read: dict[str, ClusterCapacity] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def read(self) -> bool:
        """Ask every pool's controller; True when what they declare changed. SlurmError
        names the pool whose controller does not answer or lacks its partition."""
        fresh = {}
        for name, pool in self.pools.items():
            try:
                fresh[name] = read_capacity(self.executor.commands, pool.partition)
            except SlurmError as exc:
                raise SlurmError(f"Slurm pool {name!r}: {exc}") from None
        with self._lock:
            changed, self._read = fresh != self._read, fresh
        return changed

    def complete(self, policy: Policy) -> Policy:
        """The policy with each Slurm pool's capacity filled where the file left it out (its
        CPUs, memory, GPUs) and its largest node's, which one worker must fit in. A policy
        whose Slurm pools are not the ones the server started with is refused (PolicyError):
        its executor serves those."""
        if slurm_pools(policy) != self.pools:
            raise PolicyError(["the Slurm pools (their names, partitions and settings) are "
                               "those the server started with; restart it to change them"])
        with self._lock:
            read = dict(self._read)
        pools = {name: _completed(pool, read[name]) if name in read else pool
                 for name, pool in policy.pools.items()}
        return replace(policy, pools=pools)

    def refresh_every(self, seconds: float, on_change: Callable[[], None]) -> None:
        """Read again every `seconds` on a thread; call `on_change` when it changed."""
        def loop() -> None:
            while not self._stop.wait(seconds):
                try:
                    if self.read():
                        on_change()
                except SlurmError as exc:  # the pools keep what was read last
                    log.warning("could not read the Slurm pools' capacity: %s", exc)
                except Exception:
                    log.exception("reading the Slurm pools' capacity failed")

        self._thread = threading.Thread(target=loop, name="slurm-capacity", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()


def _completed(pool: Pool, read: ClusterCapacity) -> Pool:
    cap = pool.capacity
    gpu_ids = cap.gpu_ids or tuple(str(i) for i in range(read.gpus))
    return replace(pool, capacity=replace(
        cap, cpus=cap.cpus if cap.cpus is not None else float(read.cpus),
        memory_mb=cap.memory_mb if cap.memory_mb is not None else read.memory_mb,
        gpu_ids=gpu_ids, node_cpus=float(read.node_cpus), node_memory_mb=read.node_memory_mb,
        node_gpus=read.node_gpus))
