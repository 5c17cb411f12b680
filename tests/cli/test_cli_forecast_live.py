"""The server's own background forecast, end to end: a real server process, with
`--predict-every 1s`, learns from the jobs it ran and predicts the next waiting job's start,
which `trainyard status` and `trainyard list` show."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.cli.commands import trainyard
from tests.liveserver import wait_until
from tests.serverproc import ServerProcess


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path / "data", max_concurrent=1,
                         extra_args=("--predict-every", "1s")).start()
    yield proc
    proc.stop()


def submit(server: ServerProcess, name: str, command: str) -> str:
    out = trainyard(server, "submit", "--name", name, "--command", command, "-o", "json")
    return str(json.loads(out.stdout)["job_id"])


def status(server: ServerProcess, job_id: str) -> dict[str, object]:
    return json.loads(trainyard(server, "status", job_id, "-o", "json").stdout)  # type: ignore[no-any-return]


def test_a_waiting_job_gets_a_start_learned_from_what_ran(server: ServerProcess) -> None:
    done = [submit(server, "train", "sleep 1") for _ in range(3)]
    wait_until(lambda: all(status(server, j)["state"] == "SUCCEEDED" for j in done), 60,
               "the first runs to end")
    holder = submit(server, "train", "sleep 120")
    wait_until(lambda: status(server, holder)["state"] == "RUNNING", 30, "the holder to run")
    waiter = submit(server, "train", "true")
    wait_until(lambda: status(server, waiter).get("predicted_start") is not None, 30,
               "a prediction for the waiting job")
    predicted = status(server, waiter)["predicted_start"]
    assert isinstance(predicted, dict) and set(predicted) == {"p50", "p90", "as_of"}
    p50, p90, as_of = (datetime.fromisoformat(str(predicted[k])) for k in ("p50", "p90", "as_of"))
    # The same name ran about a second each time: the holder, which has run a little, is
    # expected to end within seconds, long before its true 120 s; the waiter starts then.
    assert as_of <= p50 <= p90
    assert (p50 - as_of).total_seconds() < 60
    text = trainyard(server, "status", waiter).stdout
    assert "expected to start" in text and "as of" in text
    listed = json.loads(trainyard(server, "list", "-o", "json").stdout)
    line = next(j for j in listed["jobs"] if j["job_id"] == waiter) \
        if isinstance(listed, dict) else next(j for j in listed if j["job_id"] == waiter)
    again = line["predicted_start"]  # refreshed every second: a later one, or the same
    assert set(again) == {"p50", "p90", "as_of"}
    assert datetime.fromisoformat(again["as_of"]) >= as_of
    trainyard(server, "cancel", holder)
