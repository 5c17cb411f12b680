"""`trainyard submit --image` against a real server process running the Docker executor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.dockerenv import TRAINER_IMAGE, Engine, engine, remove_containers
from tests.serverproc import ServerProcess

__all__ = ["engine"]


def trainyard(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args],
                          env={**os.environ, "COLUMNS": "200", "TRAINYARD_SERVER": address},
                          capture_output=True, text=True, timeout=60)


def test_submit_an_image_with_every_option(engine: Engine, tmp_path: Path) -> None:
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "n.txt").write_text("42\n")
    server = ServerProcess(tmp_path / "data", extra_args=(
        "--docker", "--docker-cpus", "2", "--docker-memory", "2048",
        "--docker-gpu-ids", "none")).start()
    try:
        reg = trainyard(server.address, "datasets", "register", "nums", str(tmp_path / "ds"),
                        "-o", "json")
        version = json.loads(reg.stdout)["version"]
        sub = trainyard(server.address, "submit", "--name", "img", "--image", TRAINER_IMAGE,
                        "--command", 'cat "$TRAINING_DATA_PATH/n.txt"; echo "lr=$LR"',
                        "--dataset", f"nums:{version}", "-p", "LR=0.3", "--label", "t=cli",
                        "--cpus", "0.5", "--memory", "128", "--queue", "default",
                        "--priority", "3", "--request-id", "img-1", "--follow", "-o", "json")
        assert sub.returncode == 0, sub.stderr
        status = json.loads(sub.stdout)
        assert status["state"] == "SUCCEEDED" and status["executor"] == "docker"
        assert status["spec"]["image"] == TRAINER_IMAGE
        assert status["spec"]["resources"] == {"cpus": 0.5, "memory_mb": 128, "gpus": 0}
        logs = trainyard(server.address, "logs", status["job_id"])
        assert logs.stdout == "42\nlr=0.3\n"
        text = trainyard(server.address, "status", status["job_id"])
        assert "docker, attempt 1" in text.stdout
        # Bad input is a sentence naming the field, and nothing is stored.
        too_big = trainyard(server.address, "submit", "--name", "big", "--image", TRAINER_IMAGE,
                            "--memory", "4096")
        assert too_big.returncode == 1
        assert "resources.memory_mb" in too_big.stderr and "2048 MiB" in too_big.stderr
        gpu = trainyard(server.address, "submit", "--name", "g", "--image", TRAINER_IMAGE,
                        "--gpus", "1")
        assert gpu.returncode == 1 and "0 GPUs of pool 'docker'" in gpu.stderr
        listed = json.loads(trainyard(server.address, "list", "-o", "json").stdout)
        assert [j["name"] for j in listed["jobs"]] == ["img"]
    finally:
        server.stop()
        remove_containers(tmp_path / "data")


def test_bad_pool_options_are_refused_before_start(tmp_path: Path) -> None:
    for args, hint in ((("--docker-gpu-ids", "0,0"), "--docker-gpu-ids"),
                       (("--docker-user", "root"), "--docker-user"),
                       (("--docker-user", "0:0"), "may not run as root"),
                       (("--docker-max-containers", "0"), "--docker-max-containers")):
        done = subprocess.run([sys.executable, "-m", "trainyard.cli.main", "server", "--docker",
                               "--data-dir", str(tmp_path / "d"), "--port", "0", *args],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and hint in done.stderr, done.stderr
