"""Predicted starts on the command line, against a real server process: `status` says the
sentence and the prediction's age, `list` has a column, and both give it as JSON with
exactly the documented keys."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from tests.cli.commands import trainyard
from tests.liveserver import wait_until
from tests.serverproc import ServerProcess
from trainyard.domain.prediction import PredictedStart, describe
from trainyard.store.db import open_database, sqlite_url
from trainyard.store.predictions import PredictionStore


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # Its own forecast off: the tests write the predictions.
    proc = ServerProcess(tmp_path_factory.mktemp("cli") / "data", max_concurrent=1,
                         extra_args=("--predict-every", "0")).start()
    yield proc
    proc.stop()


def submitted(server: ServerProcess, name: str, command: str) -> str:
    out = trainyard(server, "submit", "--name", name, "--command", command, "-o", "json")
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["job_id"])


def state(server: ServerProcess, job_id: str) -> str:
    return str(json.loads(trainyard(server, "status", job_id, "-o", "json").stdout)["state"])


def predict(server: ServerProcess, predictions: dict[str, PredictedStart]) -> None:
    """As the server's forecast would: straight into its store."""
    db = open_database(sqlite_url(server.data_dir))
    try:
        PredictionStore(db).replace(predictions)
    finally:
        db.close()


def test_status_and_list_show_the_predicted_start(server: ServerProcess) -> None:
    holder = submitted(server, "holder", "sleep 30")
    wait_until(lambda: state(server, holder) == "RUNNING", 20, "the holder to run")
    soon, never, unknown = (submitted(server, name, "true")
                            for name in ("soon", "never", "unknown"))
    now = int(time.time())  # whole seconds, never ahead of the clock
    prediction = PredictedStart(as_of=now - 40, p50=now + 2100, p90=now + 16800,
                                horizon_s=86400)
    predict(server, {soon: prediction, never: PredictedStart(
        as_of=now - 40, cannot_start="it asks 64 CPUs; pool local has 8")})

    text = trainyard(server, "status", soon)
    assert text.returncode == 0, text.stderr
    line = next(row for row in text.stdout.splitlines() if row.startswith("start"))
    sentence = describe(prediction, now)
    assert sentence.startswith("expected to start in about 35 min; 9 in 10 chances by ")
    assert re.fullmatch(rf"start\s+{re.escape(sentence)} \(as of 4\d s ago\)", line.strip()), line
    cannot = trainyard(server, "status", never).stdout
    assert "cannot start: it asks 64 CPUs; pool local has 8" in cannot
    unknown_rows = trainyard(server, "status", unknown).stdout.splitlines()
    assert unknown_rows and not any(row.startswith("start ") for row in unknown_rows)

    as_json = json.loads(trainyard(server, "status", soon, "-o", "json").stdout)
    assert as_json["predicted_start"] == {"p50": iso(now + 2100), "p90": iso(now + 16800),
                                          "as_of": iso(now - 40)}
    never_json = json.loads(trainyard(server, "status", never, "-o", "json").stdout)
    assert never_json["predicted_start"] == {
        "p50": None, "p90": None, "as_of": iso(now - 40),
        "cannot_start": "it asks 64 CPUs; pool local has 8"}
    holder_json = json.loads(trainyard(server, "status", holder, "-o", "json").stdout)
    assert holder_json["predicted_start"] is None

    table = trainyard(server, "list")
    assert table.returncode == 0, table.stderr
    assert "STARTS" in table.stdout
    rows = {row.split()[1]: row for row in table.stdout.splitlines()
            if row.strip().startswith("│") and len(row.split()) > 2}
    cells = {job_id: [c.strip() for c in row.split("│")] for job_id, row in rows.items()}
    column = [c.strip() for c in next(row for row in table.stdout.splitlines()
                                      if "STARTS" in row).split("┃")].index("STARTS")
    assert cells[soon][column] == "~35 min"
    assert cells[never][column] == "cannot start"
    assert cells[unknown][column] == "-" and cells[holder][column] == "-"

    listed = {j["job_id"]: j for j in json.loads(
        trainyard(server, "list", "-o", "json").stdout)["jobs"]}
    assert listed[soon]["predicted_start"] == as_json["predicted_start"]
    assert listed[never]["predicted_start"] == never_json["predicted_start"]
    assert listed[unknown]["predicted_start"] is None
    for job_id in (holder, soon, never, unknown):
        trainyard(server, "cancel", job_id)
