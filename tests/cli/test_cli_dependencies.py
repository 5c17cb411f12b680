"""`submit --after` from the command line, against a real server process: what status and
list show of a job that waits for others, and the refusals."""

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.commands import trainyard
from tests.liveserver import wait_until
from tests.serverproc import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("cli-deps") / "data",
                         extra_args=("--predict-every", "0")).start()
    yield proc
    proc.stop()


def submitted(server: ServerProcess, *args: str) -> str:
    out = trainyard(server, "submit", "-o", "json", *args)
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["job_id"])


def status(server: ServerProcess, job_id: str) -> dict:  # type: ignore[type-arg]
    return json.loads(trainyard(server, "status", job_id, "-o", "json").stdout)  # type: ignore[no-any-return]


def test_a_job_after_others_shows_what_it_waits_for_then_runs(server: ServerProcess,
                                                              tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    a = submitted(server, "--name", "a", "--command",
                  f"while [ ! -e {gate} ]; do sleep 0.05; done")
    b = submitted(server, "--name", "b", "--command", "true", "--after", a)
    c = submitted(server, "--name", "c", "--command", "true", "--after", f"{a}:finished",
                  "--after", f"{b}:succeeded")
    wait_until(lambda: status(server, a)["state"] == "RUNNING", what="a runs")
    wait_until(lambda: "(RUNNING)" in status(server, b)["pending_reason"]["message"],
               what="b's reason")
    shown = status(server, c)
    assert shown["state"] == "WAITING"
    assert sorted((d["job_id"], d["condition"], d["met"]) for d in shown["after"]) == sorted(
        [(a, "finished", False), (b, "succeeded", False)])
    text = trainyard(server, "status", b).stdout
    assert f"waits for job {a} (RUNNING) to succeed (DEPENDENCY)" in text
    assert re.search(rf"after +{a} to succeed \(RUNNING\)", text), text
    listed = trainyard(server, "list").stdout
    assert f"after {a} to succeed (RUNNING)" in listed
    gate.touch()
    assert "SUCCEEDED" in trainyard(server, "watch", c).stdout
    assert status(server, b)["state"] == "SUCCEEDED"


@pytest.mark.parametrize(("after", "code", "says"), [
    ("ffffffff", "NOT_FOUND", "after: job 'ffffffff' not found"),
    ("ffffffff:sometimes", "INVALID_ARGUMENT", "'sometimes' is not a condition"),
    (":finished", "INVALID_ARGUMENT", "after: names no job"),
])
def test_a_bad_after_is_refused_with_a_sentence_and_stores_nothing(
        server: ServerProcess, after: str, code: str, says: str) -> None:
    out = trainyard(server, "submit", "--name", "refused", "--command", "true",
                    "--after", after)
    assert out.returncode == 1
    said = " ".join(out.stderr.split())
    assert code in said and says in said and "Traceback" not in out.stderr
    listed = json.loads(trainyard(server, "list", "-o", "json").stdout)
    assert "refused" not in [j["name"] for j in listed["jobs"]]
