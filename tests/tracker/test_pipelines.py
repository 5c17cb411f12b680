"""Pipelines: a user's named group of jobs that runs at most its limit at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.liveserver import live_server
from trainyard.auth.policy import Identity
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import ACTIVE_STATES, JobState
from trainyard.server.assembly import TrainyardServer

ANN = Identity(user="ann", admin=True)
BOB = Identity(user="bob", admin=True)


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    with live_server(tmp_path, database_url, max_concurrent=4) as srv:
        yield srv


def running(srv: TrainyardServer, ids: list[str]) -> list[str]:
    return [j for j in ids if srv.jobs.get(j).state in ACTIVE_STATES]


def settle(srv: TrainyardServer, until: object, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not until():  # type: ignore[operator]
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_pipeline_runs_at_most_its_limit_and_a_later_submit_can_raise_it(
        server: TrainyardServer) -> None:
    def submit(name: str, who: Identity = ANN, limit: int = 0) -> str:
        return server.service.train(who, JobSpec(name=name, command="sleep 30"),
                                    pipeline="etl", pipeline_max_parallel=limit)[0]

    ids = [submit("step-1", limit=1), submit("step-2"), submit("step-3")]
    settle(server, lambda: running(server, ids) == ids[:1])
    settle(server, lambda: server.jobs.get(ids[2]).pending_code == "SWEEP_LIMIT")
    assert server.jobs.get(ids[2]).pending_message == (
        "pipeline 'etl' runs at its limit of 1 jobs at once; it starts when one of them ends")
    group = server.jobs.get(ids[0]).sweep_id
    assert group.startswith("pl") and {server.jobs.get(j).sweep_id for j in ids} == {group}
    # Another user's pipeline of the same name is another pipeline, with no limit.
    other = submit("theirs", who=BOB)
    assert server.jobs.get(other).sweep_id != group
    settle(server, lambda: running(server, [other]) == [other])
    time.sleep(0.5)  # passes go by: still one of ann's at a time
    assert running(server, ids) == ids[:1]
    # A later submit raises the limit to 2: one more of the waiting ones starts.
    ids.append(submit("step-4", limit=2))
    settle(server, lambda: running(server, ids) == ids[:2])
    time.sleep(0.5)
    assert running(server, ids) == ids[:2]


@pytest.mark.parametrize(("pipeline", "limit", "field"), [
    ("", 2, "pipeline_max_parallel"),
    ("../etl", 0, "pipeline"),
    ("etl", -1, "pipeline_max_parallel"),
])
def test_a_bad_pipeline_is_refused_and_stores_nothing(
        server: TrainyardServer, pipeline: str, limit: int, field: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        server.service.train(ANN, JobSpec(name="x", command="true"),
                             pipeline=pipeline, pipeline_max_parallel=limit)
    assert refused.value.field == field
    assert server.jobs.in_states((JobState.WAITING,)) == []
