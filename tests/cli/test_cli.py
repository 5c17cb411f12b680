"""The command line against a real server process, as a user's script would run it."""

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serverproc import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("cli") / "data").start()
    yield proc
    proc.stop()


def trainyard(server: ServerProcess, *args: str, env_server: bool = True
              ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    if env_server:
        env["TRAINYARD_SERVER"] = server.address
    else:
        env.pop("TRAINYARD_SERVER", None)
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_register_submit_follow_status_as_json(server: ServerProcess, tmp_path: Path) -> None:
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "n.txt").write_text("42\n")
    reg = trainyard(server, "datasets", "register", "nums", str(tmp_path / "ds"), "-o", "json")
    assert reg.returncode == 0, reg.stderr
    registered = json.loads(reg.stdout)
    assert registered["name"] == "nums" and len(registered["version"]) == 64
    sub = trainyard(server, "submit", "--name", "cli-job", "--command",
                    'cat "$TRAINING_DATA_PATH/n.txt"; echo "{\\"step\\": 2, \\"acc\\": 0.5}" '
                    '>> "$METRICS_PATH"', "--dataset", f"nums:{registered['version']}",
                    "--param", "LR=0.1", "--param", "EPOCHS=2", "--cpus", "1", "--memory", "256",
                    "-o", "json")
    assert sub.returncode == 0, sub.stderr
    job_id = json.loads(sub.stdout)["job_id"]
    watch = trainyard(server, "watch", job_id)
    assert "SUCCEEDED" in watch.stdout
    status = json.loads(trainyard(server, "status", job_id, "-o", "json").stdout)
    assert status["job_id"] == job_id and status["state"] == "SUCCEEDED"
    assert status["spec"]["hyperparameters"] == {"LR": "0.1", "EPOCHS": "2"}
    assert status["spec"]["resources"] == {"cpus": 1.0, "memory_mb": 256, "gpus": 0}
    assert status["metrics"] == {"acc": {"value": 0.5, "step": 2}}
    assert trainyard(server, "logs", job_id).stdout == "42\n"
    listed = json.loads(trainyard(server, "list", "-o", "json").stdout)
    assert job_id in [j["job_id"] for j in listed["jobs"]]
    datasets = json.loads(trainyard(server, "datasets", "list", "-o", "json").stdout)
    assert [d["version"] for d in datasets["datasets"]] == [registered["version"]]


def test_submit_follow_reports_the_outcome(server: ServerProcess) -> None:
    ok = trainyard(server, "submit", "--name", "f", "--command", "echo hi", "--follow")
    assert ok.returncode == 0 and "SUCCEEDED" in ok.stdout
    bad = trainyard(server, "submit", "--name", "f", "--command", "exit 3", "--follow",
                    "-o", "json")
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["state"] == "FAILED"


def test_waiting_job_status_and_cancel(server: ServerProcess) -> None:
    ids = [json.loads(trainyard(server, "submit", "--name", "s", "--command", "sleep 30",
                                "-o", "json").stdout)["job_id"] for _ in range(3)]
    third = json.loads(trainyard(server, "status", ids[2], "-o", "json").stdout)
    assert third["state"] == "WAITING" and third["queue_position"] >= 1
    for job_id in ids:
        out = trainyard(server, "cancel", job_id, "-o", "json")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["state"] in ("CANCELLED", "RUNNING", "LAUNCHING")
    for job_id in ids:
        trainyard(server, "watch", job_id)  # returns once the job is final
        final = json.loads(trainyard(server, "status", job_id, "-o", "json").stdout)
        assert final["state"] == "CANCELLED", final
    again = trainyard(server, "cancel", ids[2])
    assert again.returncode == 1 and "FAILED_PRECONDITION" in again.stderr


@pytest.mark.parametrize(("args", "words"), [
    (["submit", "--name", "", "--command", "x"], "name: must not be empty"),
    (["submit", "--name", "x", "--command", "x", "--cpus", "-1"], "resources.cpus"),
    (["submit", "--name", "x", "--command", "x", "--param", "JOB_ID=1"],
     "hyperparameters.JOB_ID"),
    (["submit", "--name", "x", "--command", "x", "--dataset", "d:" + "0" * 64],
     "is not registered"),
    (["status", "nope"], "NOT_FOUND"),
    (["datasets", "register", "d", "/nonexistent"], "not a directory"),
])
def test_bad_input_is_a_sentence_not_a_traceback(server: ServerProcess, args: list[str],
                                                  words: str) -> None:
    out = trainyard(server, *args)
    assert out.returncode != 0
    assert words in " ".join(out.stderr.split())
    assert "Traceback" not in out.stderr + out.stdout


def test_unreachable_server_is_explained(server: ServerProcess) -> None:
    out = trainyard(server, "--help")
    assert out.returncode == 0
    env = {**os.environ, "TRAINYARD_SERVER": "127.0.0.1:1"}
    res = subprocess.run([sys.executable, "-m", "trainyard.cli.main", "list"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "cannot reach the Trainyard server" in res.stderr
    assert "Traceback" not in res.stderr


def test_server_flag_overrides_the_environment(server: ServerProcess) -> None:
    out = trainyard(server, "list", "--server", server.address, env_server=False)
    assert out.returncode == 0, out.stderr


def test_user_text_is_printed_as_written_not_as_markup(server: ServerProcess) -> None:
    command = 'echo "[/] [adam] ${arr[@]}"'
    sub = trainyard(server, "submit", "--name", "markup", "--command", command, "-o", "json")
    job_id = json.loads(sub.stdout)["job_id"]
    out = trainyard(server, "status", job_id)
    assert out.returncode == 0, out.stderr
    assert command in out.stdout
    listed = trainyard(server, "list")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr


def test_a_second_server_on_the_same_data_dir_is_refused_with_a_sentence(
    server: ServerProcess,
) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "trainyard.cli.main", "server", "--port", "0",
         "--http-port", "0", "--data-dir",
         str(server.data_dir)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "cannot start the server" in out.stderr and "already" in out.stderr
    assert "Traceback" not in out.stderr


def test_sweep_runs_every_trial_at_most_max_parallel_at_once(server: ServerProcess) -> None:
    done = trainyard(server, "sweep", "--name", "grid", "--command",
                     'echo "$LR $BATCH"; sleep 0.3', "--grid", "LR=0.1,0.01",
                     "--grid", "BATCH=8,16", "--max-parallel", "1", "-o", "json")
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert len(reply["job_ids"]) == 4
    spans = []
    for job_id in reply["job_ids"]:
        deadline = time.monotonic() + 60
        while True:
            st = json.loads(trainyard(server, "status", job_id, "-o", "json").stdout)
            if st["state"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
                break
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert st["state"] == "SUCCEEDED" and st["sweep_id"] == reply["sweep_id"]
        times = {t["to_state"]: t["time"] for t in st["transitions"]}
        spans.append((times["RUNNING"], times["SUCCEEDED"]))
    spans.sort()
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end  # one at a time
    bad = trainyard(server, "sweep", "--name", "bad", "--command", "true",
                    "--grid", "1LR=1")
    assert bad.returncode == 1 and "parameters.1LR" in bad.stderr


def test_submit_into_a_pipeline_with_a_limit(server: ServerProcess) -> None:
    ids = []
    for step in range(2):
        out = trainyard(server, "submit", "--name", f"etl-{step}", "--command", "sleep 0.5",
                        "--pipeline", "nightly", "--pipeline-max-parallel", "1", "-o", "json")
        assert out.returncode == 0, out.stderr
        ids.append(json.loads(out.stdout)["job_id"])
    first = json.loads(trainyard(server, "status", ids[0], "-o", "json").stdout)
    assert first["sweep_id"].startswith("pl")
    deadline = time.monotonic() + 30
    while True:
        second = json.loads(trainyard(server, "status", ids[1], "-o", "json").stdout)
        if second["state"] == "SUCCEEDED":
            break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    times = [{t["to_state"]: t["time"] for t in json.loads(
        trainyard(server, "status", j, "-o", "json").stdout)["transitions"]} for j in ids]
    assert times[1]["RUNNING"] >= times[0]["SUCCEEDED"]  # one at a time
    bad = trainyard(server, "submit", "--name", "x", "--command", "true",
                    "--pipeline-max-parallel", "2")
    assert bad.returncode == 1 and "pipeline_max_parallel" in bad.stderr
    assert "Traceback" not in bad.stderr
