"""Predicted starts over the JSON API: the field transcoded from gRPC on a waiting job's
status and its line in the list, times in ISO 8601, and null for a job that does not wait."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from tests.web.httpworld import HttpWorld, serve
from trainyard.domain.prediction import PredictedStart
from trainyard.domain.states import JobState
from trainyard.store.predictions import PredictionStore


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpWorld]:
    yield from serve("sqlite", tmp_path_factory, None, max_concurrent=1)


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def test_a_waiting_jobs_status_and_list_line_carry_its_prediction(world: HttpWorld) -> None:
    holder = world.submit(name="holder", command="sleep 30")
    world.wait(holder, {JobState.RUNNING})
    waiter = world.submit(name="waiter")
    now = int(time.time())  # whole seconds, never ahead of the clock
    PredictionStore(world.server.db).replace({
        waiter: PredictedStart(as_of=now - 40, p50=now + 2100, p90=now + 16800,
                               horizon_s=86400)})
    rest = world.rest()
    expected = {"p50": iso(now + 2100), "p90": iso(now + 16800), "as_of": iso(now - 40),
                "cannot_start": "", "horizon_seconds": 86400.0}
    status = rest.get(f"/api/v1/jobs/{waiter}").json()
    assert status["state"] == "WAITING" and status["predicted_start"] == expected
    assert rest.get(f"/api/v1/jobs/{holder}").json()["predicted_start"] is None
    listed = {j["job_id"]: j for j in rest.get("/api/v1/jobs?queue=red-q").json()["jobs"]}
    assert listed[waiter]["predicted_start"] == expected
    assert listed[holder]["predicted_start"] is None
    PredictionStore(world.server.db).replace({
        waiter: PredictedStart(as_of=now, cannot_start="queue red-q is closed")})
    never = rest.get(f"/api/v1/jobs/{waiter}").json()["predicted_start"]
    assert never == {"p50": None, "p90": None, "as_of": iso(now),
                     "cannot_start": "queue red-q is closed", "horizon_seconds": 0.0}
