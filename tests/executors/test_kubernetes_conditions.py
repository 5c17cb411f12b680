"""What a resource's status conditions make of its attempt."""

from __future__ import annotations

from typing import Any

from trainyard.executors.base import Phase
from trainyard.executors.kubernetes.conditions import observe


def obj(kind: str = "PyTorchJob", *conditions: tuple[str, str, str], suspend: bool = False,
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"suspend": True} if suspend and kind == "TrainJob" else \
        {"runPolicy": {"suspend": suspend}}
    return {"kind": kind, "metadata": {"name": "trainyard-j-1", "labels": labels or {}},
            "spec": spec, "status": {"conditions": [
                {"type": t, "status": s, "reason": r, "message": f"{t} says so"}
                for t, s, r in conditions]}}


def test_created_is_starting_and_running_is_running() -> None:
    assert observe(obj("PyTorchJob", ("Created", "True", "PyTorchJobCreated"))).phase \
        is Phase.STARTING
    running = obj("PyTorchJob", ("Created", "True", ""), ("Running", "True", ""))
    assert observe(running).phase is Phase.RUNNING


def test_succeeded_and_failed_end_it_with_the_operators_reason() -> None:
    done = observe(obj("TFJob", ("Running", "False", ""), ("Succeeded", "True", "")))
    assert (done.phase, done.exit_code) == (Phase.EXITED, 0)
    failed = observe(obj("PyTorchJob", ("Running", "False", ""),
                         ("Failed", "True", "PyTorchJobFailed")))
    assert (failed.phase, failed.exit_code) == (Phase.EXITED, 1)
    assert failed.message == "PyTorchJob trainyard-j-1 failed: PyTorchJobFailed: Failed says so"


def test_restarting_runs_on_with_a_note() -> None:
    seen = observe(obj("PyTorchJob", ("Running", "False", ""),
                       ("Restarting", "True", "PyTorchJobRestarting")))
    assert seen.phase is Phase.RUNNING and seen.message.startswith("restarting: ")


def test_a_trainjob_runs_once_its_runtime_called_and_ends_by_complete() -> None:
    assert observe(obj("TrainJob")).phase is Phase.STARTING
    assert observe(obj("TrainJob"), runtime_seen=True).phase is Phase.RUNNING
    assert observe(obj("TrainJob", ("Complete", "True", "JobsCompleted"))).exit_code == 0
    assert observe(obj("TrainJob", ("Failed", "True", "JobsFailed"))).exit_code == 1


def test_a_suspended_resource_waits_for_kueue_naming_its_queue() -> None:
    held = observe(obj("PyTorchJob", suspend=True,
                       labels={"kueue.x-k8s.io/queue-name": "team-a"}))
    assert held.phase is Phase.STARTING and "Kueue" in held.message and "'team-a'" in held.message
    assert observe(obj("TrainJob", ("Suspended", "True", ""), suspend=True)).phase \
        is Phase.STARTING
