"""Two servers over one PostgreSQL: both serve, one leads; the standby takes over from a
killed or frozen leader, and a frozen leader that wakes writes and launches nothing."""

from __future__ import annotations

import re
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.liveserver import wait_until
from tests.postgres import free_port
from tests.serverproc import ServerProcess
from trainyard.client import Client, TrainSpec
from trainyard.server.assembly import ServerConfig, TrainyardServer

LEADS = "leader (lease token"
TAKEOVER_S = 10.0


@pytest.fixture
def pair(tmp_path: Path, pg_url: str) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two server processes sharing the database and the data directory; the first leads."""
    data = tmp_path / "data"
    first = ServerProcess(data, pg_url, max_concurrent=4, name="a").start()
    wait_until(lambda: LEADS in first.log(), what="the first server to lead")
    second = ServerProcess(data, pg_url, max_concurrent=4, name="b").start()
    try:
        yield first, second
    finally:
        for server in (first, second):
            if server.proc is not None and server.proc.poll() is None:
                server.resume()
            server.stop()


def executions(marker: Path) -> Counter[str]:
    return Counter(marker.read_text().split()) if marker.exists() else Counter()


def marked(marker: Path, body: str = "") -> str:
    return f'echo "$JOB_ID" >> {marker}; {body}'


def leader_gauge(server: ServerProcess) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics") as reply:
        text = reply.read().decode()
    found = re.search(r"^trainyard_leader (\S+)$", text, re.M)
    assert found is not None
    return float(found.group(1))


def test_both_serve_one_leads_and_a_standbys_submit_runs_soon(
        pair: tuple[ServerProcess, ServerProcess], tmp_path: Path) -> None:
    first, second = pair
    assert "standby: another server holds the leader lease" in second.log()
    assert leader_gauge(first) == 1 and leader_gauge(second) == 0
    marker = tmp_path / "ran"
    with Client(second.address) as standby, Client(first.address) as leader:
        began = time.monotonic()
        job = standby.train(TrainSpec(name="on-standby", command=marked(marker))).job_id
        assert standby.wait(job).state == "SUCCEEDED"
        # The standby's notice wakes the leader: well before its idle period's look.
        assert time.monotonic() - began < 2.0
        other = leader.train(TrainSpec(name="on-leader", command=marked(marker))).job_id
        assert standby.wait(other).state == "SUCCEEDED"
        # A submit retried on the other server with its request id is the same job.
        spec = TrainSpec(name="retried", command=marked(marker), client_request_id="r-1")
        once = leader.train(spec)
        again = standby.train(spec)
        assert again.job_id == once.job_id and again.existing
        assert leader.wait(once.job_id).state == "SUCCEEDED"
    assert executions(marker) == {job: 1, other: 1, once.job_id: 1}
    assert "Fenced" not in first.log() + second.log()


def test_the_standby_takes_over_a_killed_leader_and_the_job_runs_once(
        pair: tuple[ServerProcess, ServerProcess], tmp_path: Path) -> None:
    first, second = pair
    marker, gate = tmp_path / "ran", tmp_path / "gate"
    with Client(f"{first.address},{second.address}") as client:
        job = client.train(TrainSpec(name="outlives-leader", command=marked(
            marker, f"while [ ! -e {gate} ]; do sleep 0.05; done"))).job_id
        wait_until(lambda: client.status(job).state == "RUNNING", what="running")
        first.kill()
        killed = time.monotonic()
        wait_until(lambda: LEADS in second.log(), timeout=TAKEOVER_S + 5, what="takeover")
        took = time.monotonic() - killed
        assert took <= TAKEOVER_S, f"took over after {took:.1f} s"
        # Adopted, as a restarted server would.
        wait_until(lambda: f"recovered {job}" in second.log(), what="adoption")
        gate.touch()
        assert client.wait(job).state == "SUCCEEDED"  # answered by the standby
        after = client.train(TrainSpec(name="after", command=marked(marker))).job_id
        assert client.wait(after).state == "SUCCEEDED"
    assert executions(marker) == {job: 1, after: 1}


def test_a_frozen_leader_that_wakes_is_fenced_and_steps_down(
        pair: tuple[ServerProcess, ServerProcess], tmp_path: Path) -> None:
    first, second = pair
    marker, gate = tmp_path / "ran", tmp_path / "gate"
    wait_for_gate = f"while [ ! -e {gate} ]; do sleep 0.05; done"
    with Client(second.address) as client:
        running = client.train(TrainSpec(name="running", command=marked(
            marker, wait_for_gate))).job_id
        wait_until(lambda: client.status(running).state == "RUNNING", what="running")
        first.pause()  # past its lease's TTL, in the middle of whatever it was doing
        paused = time.monotonic()
        wait_until(lambda: LEADS in second.log(), timeout=TAKEOVER_S + 5, what="takeover")
        assert time.monotonic() - paused <= TAKEOVER_S
        queued = [client.train(TrainSpec(name=f"queued-{i}", command=marked(
            marker, wait_for_gate))).job_id for i in range(3)]
        wait_until(lambda: all(client.status(j).state == "RUNNING" for j in queued),
                   what="the new leader to launch")
        first.resume()
        wait_until(lambda: "standby now" in first.log(), what="the old leader to step down")
        gate.touch()
        for job in [running, *queued]:
            assert client.wait(job).state == "SUCCEEDED"
    assert executions(marker) == dict.fromkeys([running, *queued], 1)
    assert first.proc is not None and first.proc.poll() is None  # it serves on, a standby
    assert leader_gauge(first) == 0 and leader_gauge(second) == 1
    with Client(first.address) as old:  # and its API still answers
        assert old.status(running).state == "SUCCEEDED"


def test_a_client_moves_past_a_server_that_is_down(
        pair: tuple[ServerProcess, ServerProcess], tmp_path: Path) -> None:
    _, second = pair
    down = f"127.0.0.1:{free_port()}"
    marker = tmp_path / "ran"
    with Client(f"{down},{second.address}") as client:
        job = client.train(TrainSpec(name="failed-over", command=marked(marker))).job_id
        assert client._channels.current == 1  # the one that answered is asked first now
        assert client.wait(job).state == "SUCCEEDED"
        assert client.health() == "SERVING"
    assert executions(marker) == {job: 1}


def test_a_second_server_starts_as_a_standby_and_leads_once_the_first_stops(
        tmp_path: Path, pg_url: str) -> None:
    """Where SQLite refuses a second server, PostgreSQL lets it serve and wait its turn."""
    def server(name: str) -> TrainyardServer:
        return TrainyardServer(ServerConfig(data_dir=tmp_path / name, database_url=pg_url,
                                            port=0, http_port=0))

    first, second = server("a"), server("b")
    first.start()
    second.start()
    try:
        assert first.leadership is not None and first.leadership.leading
        assert second.leadership is not None and not second.leadership.leading
        assert first.metrics is not None and second.metrics is not None
        assert first.metrics.leader._value.get() == 1
        assert second.metrics.leader._value.get() == 0
    finally:
        first.stop(grace=0)  # a clean stop frees the lease at once
    try:
        wait_until(lambda: second.leadership is not None and second.leadership.leading,
                   timeout=3, what="the standby to lead")
        assert second.metrics.leader._value.get() == 1
    finally:
        second.stop(grace=0)
