"""What a custom resource's status says of its attempt, as an Observation: pure, from the
object as the API server returns it (a dict)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainyard.executors.base import Observation, Phase
from trainyard.executors.kubernetes.resources import KUEUE_QUEUE, TRAIN_JOB

# The conditions that end a job, by resource: (succeeded, failed).
_FINAL = {TRAIN_JOB.kind: ("Complete", "Failed")}
_V1_FINAL = ("Succeeded", "Failed")


def current(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Its conditions that hold (status "True"), by type."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in conditions
            if isinstance(c, dict) and str(c.get("status")) == "True"}


def suspended(obj: Mapping[str, Any]) -> bool:
    spec = obj.get("spec") or {}
    if obj.get("kind") == TRAIN_JOB.kind:
        return bool(spec.get("suspend"))
    return bool((spec.get("runPolicy") or {}).get("suspend"))


def _said(condition: Mapping[str, Any]) -> str:
    reason, message = condition.get("reason") or "", condition.get("message") or ""
    return f"{reason}: {message}" if reason and message else reason or message


def observe(obj: Mapping[str, Any], *, runtime_seen: bool = False) -> Observation:
    """The attempt's phase. A TrainJob has no Running condition: it runs once its runtime
    was heard from (`runtime_seen`). A suspended resource waits for Kueue to admit it."""
    kind = str(obj.get("kind", ""))
    name = (obj.get("metadata") or {}).get("name", "")
    held = current(obj)
    succeeded, failed = _FINAL.get(kind, _V1_FINAL)
    if succeeded in held:
        return Observation(Phase.EXITED, exit_code=0,
                           message=f"exited with code 0 ({kind} {name} {succeeded.lower()})")
    if failed in held:
        # The operator does not say the exit code; the runtime's report gives it, if any.
        why = _said(held[failed]) or "no reason given"
        return Observation(Phase.EXITED, exit_code=1, message=f"{kind} {name} failed: {why}")
    if suspended(obj):
        queue = ((obj.get("metadata") or {}).get("labels") or {}).get(KUEUE_QUEUE)
        if queue:
            return Observation(Phase.STARTING, message=f"waiting for Kueue to admit it "
                               f"(queue {queue!r}): {kind} {name} is suspended")
        return Observation(Phase.STARTING, message=f"{kind} {name} is suspended")
    if "Restarting" in held:
        return Observation(Phase.RUNNING, message=f"restarting: {_said(held['Restarting'])}")
    if "Running" in held or (kind == TRAIN_JOB.kind and runtime_seen):
        return Observation(Phase.RUNNING)
    return Observation(Phase.STARTING)
