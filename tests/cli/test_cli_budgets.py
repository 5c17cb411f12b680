"""Budgets over time as users see them: `trainyard queues` (text and JSON) and the HTTP API's
/api/v1/queues, on a real server whose tracker's clock the test holds, with a job running."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.liveserver import FAST, wait_for
from tests.web.rest import Rest
from trainyard.auth.policy import LOCAL, Identity
from trainyard.cli.main import app
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer

POLICY = """
[pools.gpu]
gpus = 4
cpus = 8
max_jobs = 4

[queues.train]
pools = ["gpu"]
budget = { cpu_hours = 100, period = "7d" }

[teams.nlp]
members = ["ann"]
budget = { gpu_hours = 1000, period = "1d" }
"""
T0 = 1_800_000_000.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TrainyardServer, Clock]]:
    (tmp_path / "policy.toml").write_text(POLICY)
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", port=0, http_port=0,
                                       policy_file=tmp_path / "policy.toml",
                                       tracker=replace(FAST)))
    clock = Clock(T0)
    srv.tracker.clock = clock
    srv.start()
    try:
        yield srv, clock
    finally:
        for job in srv.jobs.in_states((JobState.WAITING, JobState.LAUNCHING,
                                       JobState.RUNNING)):
            srv.service.cancel(LOCAL, job.id)
        srv.stop(grace=0)


def cli(srv: TrainyardServer, *args: str) -> str:
    done = CliRunner().invoke(app, [*args, "--server", f"127.0.0.1:{srv.port}"],
                              env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    return done.output


def test_queues_show_each_budget_used_against_its_limit(
        served: tuple[TrainyardServer, Clock]) -> None:
    srv, clock = served
    job, _ = srv.service.train(Identity(user="ann"), JobSpec(
        name="long", command="sleep 60", queue="train", resources=Resources(cpus=1, gpus=2)))
    wait_for(srv, job, {JobState.RUNNING})
    clock.now = T0 + 3600.0  # an hour on 2 GPUs and 1 CPU, and still running
    view = json.loads(cli(srv, "queues", "-o", "json"))
    assert view["team_budgets"] == [
        {"kind": "team", "name": "nlp", "period_seconds": 86400.0,
         "gpu_hours": {"used": 2.0, "limit": 1000.0}}]
    train = next(q for q in view["queues"] if q["name"] == "train")
    assert train["budget"] == {"kind": "queue", "name": "train", "period_seconds": 604800.0,
                               "cpu_hours": {"used": 1.0, "limit": 100.0}}
    assert view["budgets_as_of"] == "2027-01-15T09:00:00Z"  # the tracker's clock
    text = cli(srv, "queues")
    assert "IN THE LAST" in text
    lines = [line for line in text.splitlines() if "team nlp" in line or "queue train" in line]
    flat = [" ".join(line.replace("│", " ").split()) for line in lines]
    assert flat == ["team nlp day 2 of 1,000 -", "queue train 7 days - 1 of 100"]
    http = Rest(srv.http_port).call("GET", "/api/v1/queues")
    assert http.status == 200
    body = http.json()  # every field present; a resource not limited is null
    assert body["team_budgets"] == [{**view["team_budgets"][0], "cpu_hours": None}]
    assert next(q for q in body["queues"] if q["name"] == "train")["budget"] == \
        {**train["budget"], "gpu_hours": None}
    assert body["budgets_as_of"] == "2027-01-15T09:00:00+00:00"
