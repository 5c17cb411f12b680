"""What a pool's engine says of its capacity completes the policy file, at load and again
when the engine says otherwise (services/policy.py `complete`, `recomplete`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.liveserver import make_server
from trainyard.domain.policy import Policy
from trainyard.services.policy import PolicyService
from trainyard.store.db import sqlite_url

POLICY = """
[pools.cpu]
max_jobs = 2
[queues.default]
pools = ["cpu"]
"""


def test_the_file_is_completed_at_load_and_again_when_asked(tmp_path: Path) -> None:
    srv = make_server(tmp_path, sqlite_url(tmp_path), POLICY)
    try:
        said = {"cpus": 4.0}

        def complete(policy: Policy) -> Policy:
            pool = policy.pools["cpu"]
            return replace(policy, pools={"cpu": replace(pool, capacity=replace(
                pool.capacity, cpus=said["cpus"]))})

        assert srv.config.policy_file is not None
        service = PolicyService(srv.config.policy_file, srv.executors, srv.access.store,
                                srv.pools, 4, complete=complete)
        assert service.declared is not None
        assert service.declared.pools["cpu"].capacity.cpus == 4.0
        said["cpus"] = 8.0
        service.recomplete()
        assert service.declared.pools["cpu"].capacity.cpus == 8.0
        assert service.effective().policy.pools["cpu"].capacity.cpus == 8.0
        service.reload()  # a reload completes the file read again too
        assert service.declared.pools["cpu"].capacity.cpus == 8.0
    finally:
        srv.db.close()
