"""`trainyard sweeps list|show|pause|resume|cancel` and the sweep's new options, against a
real server process."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cli.test_cli import trainyard
from tests.serverproc import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("cli-sweeps") / "data").start()
    yield proc
    proc.stop()


def shown(server: ServerProcess, sweep_id: str) -> dict[str, Any]:
    out = trainyard(server, "sweeps", "show", sweep_id, "-o", "json")
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def until(server: ServerProcess, sweep_id: str, check: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while not check(found := shown(server, sweep_id)):
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    return found


def test_a_sweep_shown_paused_resumed_and_cancelled(server: ServerProcess) -> None:
    out = trainyard(server, "sweep", "--name", "cli", "--command",
                    'echo "{\\"step\\": 1, \\"acc\\": $LR}" >> "$METRICS_PATH"; sleep 30',
                    "--grid", "LR=0.1,0.2,0.3", "--max-parallel", "1",
                    "--objective", "acc:max", "--max-trials", "3", "-o", "json")
    assert out.returncode == 0, out.stderr
    sweep_id = json.loads(out.stdout)["sweep_id"]
    found = until(server, sweep_id, lambda s: s["trial_counts"].get("RUNNING") == 1
                  and s["best"] is not None)
    assert found["objective"] == "acc:max" and found["max_trials"] == 3
    assert found["best"]["best"] == 0.1 and found["state"] == "RUNNING"
    paused = trainyard(server, "sweeps", "pause", sweep_id)
    assert paused.returncode == 0 and f"sweep {sweep_id} PAUSED" in paused.stdout
    found = until(server, sweep_id, lambda s: any(
        "is paused" in t["message"] for t in s["trials"]))
    text = trainyard(server, "sweeps", "show", sweep_id)
    assert "PAUSED" in text.stdout and "LR=0.2" in text.stdout and "acc:max" in text.stdout
    listed = json.loads(trainyard(server, "sweeps", "list", "-o", "json").stdout)
    assert [s["sweep_id"] for s in listed["sweeps"]] == [sweep_id]
    assert trainyard(server, "sweeps", "resume", sweep_id).returncode == 0
    cancelled = trainyard(server, "sweeps", "cancel", sweep_id, "-o", "json")
    assert json.loads(cancelled.stdout)["state"] == "CANCELLED"
    until(server, sweep_id, lambda s: s["trial_counts"] == {"CANCELLED": 3})
    again = trainyard(server, "sweeps", "pause", sweep_id)
    assert again.returncode == 1 and "was cancelled" in again.stderr


@pytest.mark.parametrize(("args", "option"), [
    (("--objective", "acc"), "objective"),
    (("--early-stop", "asha"), "objective"),
    (("--objective", "acc:max", "--early-stop", "asha", "--reduction", "1"), "reduction"),
    (("--max-trials", "-1"), "max_trials"),
    (("--max-gpu-hours", "-2"), "max_gpu_hours"),
])
def test_bad_sweep_options_are_refused_naming_them(server: ServerProcess,
                                                   args: tuple[str, ...], option: str) -> None:
    out = trainyard(server, "sweep", "--name", "bad", "--command", "true",
                    "--grid", "LR=1", *args)
    assert out.returncode in (1, 2) and option in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    unknown = trainyard(server, "sweeps", "show", "swnope")
    assert unknown.returncode == 1 and "swnope" in unknown.stderr
