"""What the test-side operator (tests/kubeflow_operator.py) knows of a job, and the status
it writes back in the real operators' shapes: training-operator v1 for PyTorchJob and
TFJob (conditions Created, Running, Suspended, Succeeded, Failed with reasons such as
PyTorchJobRunning; replicaStatuses; startTime, completionTime), Trainer for TrainJob
(conditions Suspended, Complete, Failed; jobsStatus). Test equipment, not product."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.kubeflow_replicas import Kind, Replica, now


@dataclass
class Job:
    kind: Kind
    namespace: str
    name: str
    uid: str
    obj: dict[str, Any]
    conditions: list[dict[str, Any]] = field(default_factory=list)
    replicas: list[Replica] = field(default_factory=list)
    start_time: str | None = None
    completion_time: str | None = None
    finished: bool = False
    deleting: bool = False

    @property
    def suspended(self) -> bool:
        if self.kind.trainer:
            return bool(self.obj["spec"].get("suspend"))
        return bool(self.obj["spec"].get("runPolicy", {}).get("suspend"))

    @property
    def grace_s(self) -> float:
        return max((r.plan.grace_s for r in self.replicas), default=0.0)


def adopted(job: Job) -> Job:
    """The job with what its status already says (an operator's earlier life): its
    conditions kept, an ended one left ended."""
    status = job.obj.get("status") or {}
    job.conditions = list(status.get("conditions") or [])
    job.start_time = status.get("startTime")
    job.completion_time = status.get("completionTime")
    ended = ("Complete", "Failed") if job.kind.trainer else ("Succeeded", "Failed")
    job.finished = any(c["type"] in ended and c["status"] == "True" for c in job.conditions)
    return job


def has(conditions: list[dict[str, Any]], ctype: str) -> bool:
    return any(c["type"] == ctype for c in conditions)


def set_condition(conditions: list[dict[str, Any]], ctype: str, status: bool, reason: str,
                  message: str, *, update_time: bool = True) -> bool:
    """Set a condition as the operators do: in place, the transition time kept when the
    status stays (TrainJob's conditions have no lastUpdateTime); False when nothing
    changed."""
    value = "True" if status else "False"
    stamp = now()
    for condition in conditions:
        if condition["type"] == ctype:
            if condition["status"] == value and condition.get("reason") == reason:
                return False
            if condition["status"] != value:
                condition["lastTransitionTime"] = stamp
            condition.update(status=value, reason=reason, message=message)
            if update_time:
                condition["lastUpdateTime"] = stamp
            return True
    condition = {"type": ctype, "status": value, "reason": reason, "message": message,
                 "lastTransitionTime": stamp}
    if update_time:
        condition["lastUpdateTime"] = stamp
    conditions.append(condition)
    return True


def mark_created(job: Job) -> None:
    if not job.kind.trainer and not has(job.conditions, "Created"):
        set_condition(job.conditions, "Created", True, f"{job.kind.kind}Created",
                      f"{job.kind.kind} {job.name} is created.")


def mark_running(job: Job) -> None:
    job.start_time = now()
    kind = job.kind.kind
    if job.kind.trainer:
        if has(job.conditions, "Suspended"):
            set_condition(job.conditions, "Suspended", False, "Resumed",
                          "TrainJob is resumed", update_time=False)
        return
    if has(job.conditions, "Suspended"):
        set_condition(job.conditions, "Suspended", False, f"{kind}Resumed",
                      f"{kind} {job.name} is resumed.")
    set_condition(job.conditions, "Running", True, f"{kind}Running",
                  f"{kind} {job.namespace}/{job.name} is running.")


def mark_suspended(job: Job) -> bool:
    """Suspended (and, for v1, Running False); False when it already said so."""
    kind = job.kind.kind
    changed = set_condition(
        job.conditions, "Suspended", True,
        "Suspended" if job.kind.trainer else f"{kind}Suspended",
        f"{kind} {job.name} is suspended.", update_time=not job.kind.trainer)
    if not job.kind.trainer and has(job.conditions, "Running"):
        changed |= set_condition(job.conditions, "Running", False, f"{kind}Suspended",
                                 f"{kind} {job.name} is suspended.")
    return changed


def mark_finished(job: Job, succeeded: bool, detail: str, reason: str = "") -> None:
    """Succeeded / Complete, or Failed with `reason` (default the kind's) and a message
    ending in `detail`; v1's Running turns False."""
    job.finished = True
    job.completion_time = now()
    kind = job.kind.kind
    where = f"{kind} {job.namespace}/{job.name}"
    if job.kind.trainer:
        if succeeded:
            set_condition(job.conditions, "Complete", True, "JobsCompleted",
                          "jobs are completed", update_time=False)
        else:
            set_condition(job.conditions, "Failed", True, reason or "JobsFailed",
                          f"{where} failed: {detail}", update_time=False)
        return
    if has(job.conditions, "Running"):
        set_condition(job.conditions, "Running", False, f"{kind}Running",
                      f"{where} is running.")
    if succeeded:
        set_condition(job.conditions, "Succeeded", True, f"{kind}Succeeded",
                      f"{where} successfully completed.")
    else:
        set_condition(job.conditions, "Failed", True, reason or f"{kind}Failed",
                      f"{where} is failed because {detail}.")


def replica_statuses(replicas: list[Replica]) -> dict[str, dict[str, int]]:
    """v1 `status.replicaStatuses`: per replica type, how many are active, succeeded,
    failed."""
    statuses: dict[str, dict[str, int]] = {}
    for replica in replicas:
        counts = statuses.setdefault(replica.plan.replica_type,
                                     {"active": 0, "succeeded": 0, "failed": 0})
        code = replica.exit_code
        key = "active" if code is None else "succeeded" if code == 0 else "failed"
        counts[key] += 1
    return statuses


def status_of(job: Job) -> dict[str, Any]:
    """The whole `status` to write."""
    status: dict[str, Any] = {"conditions": job.conditions}
    if job.kind.trainer:
        counts = replica_statuses(job.replicas).get(
            "node", {"active": 0, "succeeded": 0, "failed": 0})
        status["jobsStatus"] = [{
            "name": "node", "active": counts["active"], "ready": counts["active"],
            "succeeded": counts["succeeded"], "failed": counts["failed"],
            "suspended": len(job.replicas) if job.suspended else 0}]
        return status
    status["replicaStatuses"] = replica_statuses(job.replicas)
    if job.start_time:
        status["startTime"] = job.start_time
    if job.completion_time:
        status["completionTime"] = job.completion_time
    status["lastReconcileTime"] = now()
    return status
