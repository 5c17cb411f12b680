"""Rows as typed records, read from the store. Lenient: they trust what was stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainyard.domain.spec import DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState


@dataclass(frozen=True)
class JobRecord:
    id: str
    seq: int
    spec: JobSpec
    owner: str
    state: JobState
    attempt: int
    message: str
    exit_code: int | None
    cancel_requested: bool
    pending_code: str
    pending_message: str
    executor: str
    handle: str
    gpu_ids: tuple[str, ...]
    team: str
    pool: str
    preempt_requested: bool
    started_at: float | None
    sweep_id: str
    metrics_offset: int
    malformed_metric_lines: int
    submitted_at: float
    updated_at: float
    client_request_id: str | None

    @classmethod
    def from_row(cls, row: Any) -> JobRecord:
        m = row._mapping
        dataset = (
            DatasetRef(m["dataset_name"], m["dataset_version"]) if m["dataset_name"] else None
        )
        spec = JobSpec(
            name=m["name"],
            command=m["command"],
            image=m["image"],
            dataset=dataset,
            hyperparameters=dict(m["hyperparameters"]),
            resources=Resources(m["cpus"], m["memory_mb"], m["gpus"]),
            queue=m["queue"],
            priority=m["priority"],
            labels=dict(m["labels"]),
            workers=m["workers"],
        )
        return cls(
            id=m["id"],
            seq=m["seq"],
            spec=spec,
            owner=m["owner"],
            state=JobState(m["state"]),
            attempt=m["attempt"],
            message=m["message"],
            exit_code=m["exit_code"],
            cancel_requested=bool(m["cancel_requested"]),
            pending_code=m["pending_code"],
            pending_message=m["pending_message"],
            executor=m["executor"],
            handle=m["handle"],
            gpu_ids=split_ids(m["gpu_ids"]),
            team=m["team"],
            pool=m["pool"],
            preempt_requested=bool(m["preempt_requested"]),
            started_at=m["started_at"],
            sweep_id=m["sweep_id"],
            metrics_offset=m["metrics_offset"],
            malformed_metric_lines=m["malformed_metric_lines"],
            submitted_at=m["submitted_at"],
            updated_at=m["updated_at"],
            client_request_id=m["client_request_id"],
        )


@dataclass(frozen=True)
class QueuedJob:
    id: str
    queue: str
    priority: int
    seq: int
    resources: Resources  # the whole job's: every worker's together
    pool: str
    owner: str
    team: str
    submitted_at: float
    sweep_id: str


def split_ids(joined: str) -> tuple[str, ...]:
    return tuple(joined.split(",")) if joined else ()


def join_ids(ids: tuple[str, ...]) -> str:
    return ",".join(ids)


@dataclass(frozen=True)
class EventRecord:
    id: int
    job_id: str
    from_state: JobState | None
    to_state: JobState
    time: float
    reason: str


@dataclass(frozen=True)
class MetricPoint:
    step: int | None
    values: dict[str, float]


@dataclass(frozen=True)
class DatasetRecord:
    name: str
    version: str
    size_bytes: int
    file_count: int
    path: str
    created_at: float


@dataclass(frozen=True)
class ModelRecord:
    model_name: str
    version: int
    content_hash: str
    uri: str
    size_bytes: int
    file_count: int
    job_id: str
    attempt: int
    created_at: float
