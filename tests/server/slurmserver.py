"""A live server whose policy file has a Slurm pool on the test cluster (pull staging, each
node its own cache directory), and waits on its jobs."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.liveserver import live_server
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer
from trainyard.store.db import sqlite_url
from trainyard.testbed.slurm_cluster import SlurmCluster


def slurm_policy(cluster: SlurmCluster, cache: Path, staging: str = "pull") -> str:
    return f"""
max_running = 8
[pools.hpc]
executor = "slurm"
partition = "{cluster.partition}"
staging = "{staging}"
cache_dir = "{cache}/{{node}}"
python = "{_python()}"
spread = true
[queues.default]
pools = ["hpc"]
"""


def _python() -> str:
    import sys

    return sys.executable  # the nodes are this machine: its Python has grpcio


@contextlib.contextmanager
def slurm_server(tmp_path: Path, cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch,
                 staging: str = "pull", **tracker: object) -> Iterator[TrainyardServer]:
    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    with live_server(tmp_path, sqlite_url(tmp_path), slurm_policy(cluster, tmp_path / "nodes",
                                                                   staging),
                     **tracker) as srv:
        yield srv


def wait_state(srv: TrainyardServer, job_id: str, states: set[JobState],
               timeout: float = 90.0) -> JobState:
    deadline = time.monotonic() + timeout
    while True:
        state = srv.jobs.get(job_id).state
        if state in states:
            return state
        if time.monotonic() > deadline:
            raise AssertionError(f"{job_id} still {state}: {srv.jobs.get(job_id).message}")
        time.sleep(0.2)
