"""Retries and limits from the command line, against a real server process."""

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.commands import trainyard
from tests.serverproc import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("cli-retries") / "data", extra_args=(
        "--retry-backoff", "0.2s", "--retry-backoff-max", "1s")).start()
    yield proc
    proc.stop()


def test_a_job_retried_on_failure_ends_with_its_attempts_shown(server: ServerProcess) -> None:
    sub = trainyard(server, "submit", "--name", "flaky", "--command",
                    'echo x >> "$CHECKPOINT_PATH/n"; [ "$(wc -l < "$CHECKPOINT_PATH/n")" -ge 2 ]',
                    "--max-attempts", "3", "--retry-on-failure", "--time-limit", "2h",
                    "--pending-timeout", "1d", "-o", "json")
    assert sub.returncode == 0, sub.stderr
    job_id = json.loads(sub.stdout)["job_id"]
    assert "SUCCEEDED" in trainyard(server, "watch", job_id).stdout
    status = json.loads(trainyard(server, "status", job_id, "-o", "json").stdout)
    assert status["state"] == "SUCCEEDED" and status["attempt"] == 2
    assert status["retries"] == 1
    spec = status["spec"]
    assert (spec["max_attempts"], spec["retry_on_failure"], spec["time_limit_seconds"],
            spec["pending_timeout_seconds"]) == (3, True, 7200, 86400)
    text = trainyard(server, "status", job_id).stdout
    assert "at most 3 (lost ones and failed ones retried); 1 retried" in text
    assert "runs at most 2 h, waits at most 1 d" in text


@pytest.mark.parametrize(("args", "option"), [
    (["--time-limit", "2x"], "--time-limit"),
    (["--time-limit", "0"], "--time-limit"),
    (["--pending-timeout", "soon"], "--pending-timeout"),
    (["--max-attempts", "101"], "--max-attempts"),
    (["--retry-exit-code", "0"], "--retry-exit-code"),
])
def test_a_bad_retry_option_is_a_sentence_naming_it(server: ServerProcess, args: list[str],
                                                     option: str) -> None:
    out = trainyard(server, "submit", "--name", "x", "--command", "true", *args)
    assert out.returncode == 2
    assert option in out.stderr and "Traceback" not in out.stderr
    listed = json.loads(trainyard(server, "list", "-o", "json").stdout)
    assert "x" not in [j["name"] for j in listed["jobs"]]


def test_a_bad_server_back_off_is_refused_naming_it(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "trainyard.cli.main", "server", "--data-dir",
                          str(tmp_path), "--retry-backoff", "fast"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2
    assert "--retry-backoff" in out.stderr and "Traceback" not in out.stderr
