"""A declared policy through the command line: start, `trainyard queues`, reload on SIGHUP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.serverproc import ServerProcess

POLICY = """
max_running = 2
[pools.cpu]
cpus = 2
max_jobs = 2
[queues.batch]
pools = ["cpu"]
"""


def trainyard(address: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args],
                          env={**env, "COLUMNS": "200", "TRAINYARD_SERVER": address},
                          capture_output=True, text=True, timeout=60)


def queue_names(address: str) -> list[str]:
    view = json.loads(trainyard(address, "queues", "-o", "json").stdout)
    return [q["name"] for q in view["queues"]]


def test_queues_show_the_policy_and_sighup_reloads_it(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    server = ServerProcess(tmp_path / "data", extra_args=("--policy", str(policy))).start()
    try:
        view = json.loads(trainyard(server.address, "queues", "-o", "json").stdout)
        assert view["source"] == str(policy) and view["max_running"] == 2
        assert [q["name"] for q in view["queues"]] == ["batch"]
        refused = trainyard(server.address, "submit", "--name", "x", "--command", "true",
                            "--queue", "urgent")
        assert refused.returncode == 1 and "not a queue of this server" in refused.stderr
        policy.write_text(POLICY + '[queues.urgent]\npools = ["cpu"]\npriority = 5\n')
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + 15
        while queue_names(server.address) != ["urgent", "batch"]:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        ok = trainyard(server.address, "submit", "--name", "x", "--command", "true",
                       "--queue", "urgent")
        assert ok.returncode == 0, ok.stderr
        # A broken file is refused; the policy in force stays.
        policy.write_text(POLICY + "[queues.bad]\npools = [\"nope\"]\n")
        os.kill(server.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + 15
        while "policy not reloaded" not in server.log_path.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert "queues.bad.pools" in server.log_path.read_text()
        assert queue_names(server.address) == ["urgent", "batch"]
        text = trainyard(server.address, "queues")
        assert text.returncode == 0 and "urgent" in text.stdout and "cpu" in text.stdout
    finally:
        server.stop()


def test_a_server_with_a_broken_policy_does_not_start(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("pools:\n  cpu:\n    max_jobs: many\nqueues:\n  a:\n    pools: [cpu]\n")
    done = subprocess.run([sys.executable, "-m", "trainyard.cli.main", "server", "--port", "0",
                           "--http-port", "0",
                           "--data-dir", str(tmp_path / "d"), "--policy", str(policy)],
                          env={**os.environ, "COLUMNS": "400"}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    assert "line 3" in done.stderr and "pools.cpu.max_jobs" in done.stderr
    assert "Traceback" not in done.stderr
