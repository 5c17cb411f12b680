"""A Slurm pool in the policy file: its keys, their defaults, and what is refused."""

from __future__ import annotations

import pytest

from trainyard.domain.pools import SlurmPool
from trainyard.services.policy_file import PolicyError, parse_policy

QUEUE = '\n[queues.default]\npools = ["hpc"]\n'


def problems(text: str) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text + QUEUE, "toml", source="policy.toml")
    return caught.value.problems


def test_a_slurm_pool_carries_its_settings_and_counts_what_the_file_gives() -> None:
    policy = parse_policy('[pools.hpc]\nexecutor = "slurm"\npartition = "debug"\n'
                          'staging = "shared"\ngrace = "1m"\nspread = true\n' + QUEUE, "toml")
    pool = policy.pools["hpc"]
    assert pool.executor == "slurm"
    assert pool.slurm == SlurmPool(partition="debug", staging="shared", spread=True,
                                   grace_s=60.0)
    assert pool.capacity.max_jobs == 1000 and pool.capacity.cpus is None


def test_a_slurm_pool_needs_its_partition_and_a_known_staging() -> None:
    assert problems('[pools.hpc]\nexecutor = "slurm"\nstaging = "nfs"\n') == [
        'policy.toml, line 1: pools.hpc.partition: is required for a pool of executor "slurm"',
        'policy.toml, line 3: pools.hpc.staging: must be "pull" or "shared", got "nfs"']


def test_the_slurm_keys_belong_to_slurm_pools() -> None:
    assert problems('[pools.hpc]\nmax_jobs = 2\npartition = "debug"\n') == [
        'policy.toml, line 3: pools.hpc.partition: only a pool of executor "slurm" takes '
        "this key"]
