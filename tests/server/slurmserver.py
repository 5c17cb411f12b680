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


def slurm_policy(cluster: SlurmCluster, cache: Path, staging: str = "pull", *, top: str = "",
                 pool: str = "", tail: str = "") -> str:
    """top: keys of the file's own; pool: more keys of the pool; tail: more tables."""
    return f"""
max_running = 8
{top}
[pools.hpc]
executor = "slurm"
partition = "{cluster.partition}"
staging = "{staging}"
cache_dir = "{cache}/{{node}}"
python = "{_python()}"
spread = true
{pool}
[queues.default]
pools = ["hpc"]
{tail}
"""


def _python() -> str:
    import sys

    return sys.executable  # the nodes are this machine: its Python has grpcio


@contextlib.contextmanager
def slurm_server(tmp_path: Path, cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch,
                 staging: str = "pull", policy: dict[str, str] | None = None,
                 **tracker: object) -> Iterator[TrainyardServer]:
    """policy: slurm_policy's top, pool and tail."""
    monkeypatch.setenv("SLURM_CONF", cluster.env["SLURM_CONF"])
    text = slurm_policy(cluster, tmp_path / "nodes", staging, **(policy or {}))
    with live_server(tmp_path, sqlite_url(tmp_path), text, **tracker) as srv:
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
