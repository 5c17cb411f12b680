"""A server's Slurm pools: the capacity their controller declares, filled into the policy
where the file leaves it out, and read again when it changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainyard.domain.kinds import JobKind
from trainyard.domain.policy import Policy, Pool, Queue
from trainyard.domain.pools import PoolCapacity, SlurmPool
from trainyard.executors.slurm import SlurmConfig, SlurmExecutor
from trainyard.executors.slurm.commands import SlurmError
from trainyard.server.slurm_pools import SlurmCapacity, slurm_pools
from trainyard.testbed.slurm_cluster import SlurmCluster


def policy(partition: str, cpus: float | None = None) -> Policy:
    capacity = PoolCapacity("hpc", max_jobs=1000, cpus=cpus)
    return Policy(pools={"hpc": Pool(capacity, executor=JobKind.SLURM,
                                     slurm=SlurmPool(partition=partition)),
                         "cpu": Pool(PoolCapacity("cpu", max_jobs=2))},
                  queues={"default": Queue("default", pools=("hpc", "cpu"))})


def capacity_of(cluster: SlurmCluster, partition: str) -> SlurmCapacity:
    pools = {"hpc": SlurmPool(partition=partition)}
    executor = SlurmExecutor(SlurmConfig(instance="t", pools=pools, env=cluster.env,
                                         agent=False))
    return SlurmCapacity(executor, pools)


def test_the_controllers_capacity_fills_what_the_file_leaves_out(
        slurm_cluster: SlurmCluster) -> None:
    declared = policy(slurm_cluster.partition, cpus=3)
    assert list(slurm_pools(declared)) == ["hpc"]
    capacity = capacity_of(slurm_cluster, slurm_cluster.partition)
    assert capacity.read() is True  # the first read is a change
    assert capacity.read() is False  # the cluster did not change since
    hpc = capacity.complete(declared).pools["hpc"].capacity
    assert hpc.cpus == 3  # declared in the file: kept
    assert hpc.memory_mb == 4096 and hpc.gpus == 0  # the two nodes' 2048 MB each
    assert (hpc.node_cpus, hpc.node_memory_mb) == (2, 2048)
    assert capacity.complete(declared).pools["cpu"] == declared.pools["cpu"]


def test_a_partition_the_cluster_lacks_is_named(slurm_cluster: SlurmCluster,
                                                tmp_path: Path) -> None:
    with pytest.raises(SlurmError, match="Slurm pool 'hpc': .*no partition 'nosuch'"):
        capacity_of(slurm_cluster, "nosuch").read()


def test_a_policy_with_other_slurm_pools_is_refused(slurm_cluster: SlurmCluster) -> None:
    from trainyard.services.policy_file import PolicyError

    capacity = capacity_of(slurm_cluster, slurm_cluster.partition)
    capacity.read()
    with pytest.raises(PolicyError, match="restart it to change them"):
        capacity.complete(policy("elsewhere"))
