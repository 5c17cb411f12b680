"""`trainyard submit --workers`, and how `status` shows a multi-worker job."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.commands import trainyard
from tests.serverproc import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("cli-workers") / "data").start()
    yield proc
    proc.stop()


def test_submit_with_workers_runs_each_rank_and_status_shows_them(server: ServerProcess,
                                                                  tmp_path: Path) -> None:
    sub = trainyard(server, "submit", "--name", "pair", "--workers", "2", "--cpus", "0.5",
                    "--command", 'echo "rank $RANK of $WORLD_SIZE"', "--follow", "-o", "json")
    assert sub.returncode == 0, sub.stdout + sub.stderr
    job_id = json.loads(sub.stdout)["job_id"]
    status = json.loads(trainyard(server, "status", job_id, "-o", "json").stdout)
    assert status["state"] == "SUCCEEDED"
    assert status["spec"]["workers"] == 2
    assert status["spec"]["resources"] == {"cpus": 0.5, "memory_mb": 1024, "gpus": 0}
    logs = trainyard(server, "logs", job_id).stdout.splitlines()
    assert sorted(logs) == ["[rank 0] rank 0 of 2", "[rank 1] rank 1 of 2"]
    text = trainyard(server, "status", job_id).stdout
    assert "workers    2" in text
    assert "0.5 CPUs, 1024 MiB, 0 GPUs each" in text


def test_bad_workers_are_a_sentence(server: ServerProcess) -> None:
    zero = trainyard(server, "submit", "--name", "x", "--command", "true", "--workers", "0")
    assert zero.returncode != 0 and "--workers" in zero.stderr and "Traceback" not in zero.stderr
    many = trainyard(server, "submit", "--name", "x", "--command", "true", "--workers", "65")
    assert many.returncode != 0
    assert "workers: must be a whole number from 1 to 64, got 65" in many.stdout + many.stderr
