"""A real server with HTTP on loopback under a policy with a team quota, the jobs the
metrics tests run on it, and a scrape of its /metrics."""

from __future__ import annotations

import contextlib
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.liveserver import FAST, wait_for
from trainyard.auth.policy import LOCAL, LOCAL_USER
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer

POLICY = f"""
[pools.cpu]
cpus = 4
max_jobs = 4

[queues.train]
pools = ["cpu"]

[teams.vision]
members = ["{LOCAL_USER}"]
[teams.vision.quota.cpu]
cpus = 2
"""


@contextlib.contextmanager
def metrics_server(tmp_path: Path, database_url: str = "") -> Iterator[TrainyardServer]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", database_url=database_url,
                                       port=0, http_port=0, policy_file=policy, tracker=FAST))
    srv.start()
    try:
        yield srv
    finally:
        srv.stop(grace=0)


@dataclass(frozen=True)
class Ran:
    succeeded: str
    failed: str
    running: str


def run_jobs(srv: TrainyardServer) -> Ran:
    """One job that succeeds, one that fails, one left running."""
    def train(name: str, command: str) -> str:
        return srv.service.train(LOCAL, JobSpec(name=name, command=command, queue="train"))[0]

    ran = Ran(train("ok", "true"), train("bad", "false"), train("long", "sleep 60"))
    wait_for(srv, ran.succeeded, {JobState.SUCCEEDED})
    wait_for(srv, ran.failed, {JobState.FAILED})
    wait_for(srv, ran.running, {JobState.RUNNING})
    return ran


def get(srv: TrainyardServer, path: str, token: str = "") -> tuple[int, str, str]:
    """(status, content type, body) of a GET on the server's HTTP port."""
    request = urllib.request.Request(f"http://127.0.0.1:{srv.http_port}{path}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, reply.headers["Content-Type"], reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()
