"""Fault points are inert unless TRAINYARD_FAULT names them."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.serverproc import ServerProcess
from trainyard.client import Client, TrainSpec
from trainyard.client.errors import TrainyardError
from trainyard.store import faults


def test_a_fault_point_is_armed_only_by_its_own_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(faults.FAULT_ENV, raising=False)
    assert not faults.armed(faults.INSIDE_REQUEUE)
    faults.crash_at(faults.INSIDE_REQUEUE)  # nothing armed: the process lives on
    monkeypatch.setenv(faults.FAULT_ENV, faults.REQUEUE_IN_TWO_WRITES)
    assert faults.armed(faults.REQUEUE_IN_TWO_WRITES)
    assert not faults.armed(faults.INSIDE_REQUEUE)
    faults.crash_at(faults.INSIDE_REQUEUE)  # another point: still alive


def test_the_counted_fault_kills_right_after_the_nth_job_write(tmp_path: Path) -> None:
    script = ("from trainyard.store import faults\n"
              "for i in range(5):\n"
              "    faults.job_written('j')\n"
              "    print(i + 1, flush=True)\n")
    env = {**os.environ, faults.FAULT_ENV: f"{faults.AFTER_JOB_WRITE}:3"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert done.stdout.split() == ["1", "2"]  # the third write was the last
    env[faults.FAULT_ENV] = f"{faults.AFTER_JOB_WRITE}:x"  # malformed: inert
    assert subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          timeout=60).returncode == 0


@pytest.mark.parametrize("writes", [1, 2, 3])
def test_a_crash_after_each_early_write_of_a_job_leaves_it_to_end_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writes: int) -> None:
    """1: after the submit (its reply never sent), 2: after LAUNCHING, 3: after RUNNING."""
    marker = tmp_path / "ran"
    spec = TrainSpec(name="once", command=f"echo once >> {marker}",
                     client_request_id="crash-once")
    monkeypatch.setenv(faults.FAULT_ENV, f"{faults.AFTER_JOB_WRITE}:{writes}")
    server = ServerProcess(tmp_path / "data", max_concurrent=1).start()
    try:
        with Client(server.address, timeout=10) as client:
            try:
                client.train(spec)
            except TrainyardError as exc:
                assert exc.code == "UNAVAILABLE" and writes == 1
        assert server.proc is not None
        assert server.proc.wait(timeout=60) == -signal.SIGKILL
        monkeypatch.delenv(faults.FAULT_ENV)
        server.start()
        with Client(server.address, timeout=10) as client:
            job_id = client.train(spec).job_id  # the same request: the same job
            status = client.wait(job_id)
            assert status.state == "SUCCEEDED"
            assert [t.to_state for t in status.transitions].count("LAUNCHING") == 1
            assert len(client.list_jobs()[0]) == 1
        assert marker.read_text() == "once\n"
    finally:
        server.stop()
