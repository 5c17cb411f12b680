"""Rows as typed records, read from the store. Lenient: they trust what was stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainyard.domain.spec import AlgorithmRef, DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState


@dataclass(frozen=True)
class JobRecord:
    id: str
    seq: int
    spec: JobSpec
    kind: str  # which executor runs it (domain.kinds), decided at submit
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
    reproduced_from: str = ""  # the run this job was submitted to reproduce
    held_s: float = 0.0  # seconds it ran in attempts that ended
    retries: int = 0  # attempts lost or failed and retried
    retry_after: float | None = None  # while it backs off: when it may start again
    end_reason: str = ""  # STOPPED_EARLY: its sweep's early-stopping rule stopped it
    # Preemption with notice: the current attempt's notice and last checkpoint seen, the
    # checkpoints it reported; the work preemptions lost, and how many there were.
    notice_at: float | None = None
    checkpoint_at: float | None = None
    checkpoints: int = 0
    work_lost_s: float = 0.0
    preemptions: int = 0

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
            git_commit=m["git_commit"],
            model_name=m["model_name"],
            framework=m["framework"],
            max_attempts=m["max_attempts"],
            retry_on_failure=bool(m["retry_on_failure"]),
            retry_exit_codes=tuple(m["retry_exit_codes"] or ()),
            time_limit_s=m["time_limit_s"],
            pending_timeout_s=m["pending_timeout_s"],
            algorithm=AlgorithmRef(m["algorithm_name"], m["algorithm_version"] or 0)
            if m.get("algorithm_name") else None,
            code_hash=m.get("code_hash") or "",
        )
        return cls(
            id=m["id"],
            seq=m["seq"],
            spec=spec,
            kind=m["kind"],
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
            reproduced_from=m["reproduced_from"],
            held_s=m.get("held_s") or 0.0,
            retries=m["retries"],
            retry_after=m["retry_after"],
            end_reason=m.get("end_reason") or "",
            notice_at=m["notice_at"],
            checkpoint_at=m["checkpoint_at"],
            checkpoints=m["checkpoints"],
            work_lost_s=m["work_lost_s"],
            preemptions=m["preemptions"],
        )


@dataclass(frozen=True)
class QueuedJob:
    id: str
    queue: str
    priority: int
    seq: int
    resources: Resources  # the whole job's: every worker's together
    kind: str  # which executor runs it, so which pools may take it
    owner: str
    team: str
    submitted_at: float
    sweep_id: str
    held_s: float = 0.0  # seconds it ran in attempts that ended
    # When it may start (None: now): a job backing off before a retry waits until then.
    retry_after: float | None = None
    # When it is cancelled if it has not started (None: never): its pending timeout.
    pending_deadline: float | None = None
    time_limit_s: float = 0.0  # each attempt's longest run; 0: none (for its budgets)
    waiting_since: float = 0.0  # when it began to wait: its row's updated_at


@dataclass(frozen=True)
class ActiveUse:
    """What an active job holds, and where: the columns the queues overview adds up."""

    queue: str
    team: str
    pool: str  # the pool its attempt was placed in, else its executor's
    resources: Resources  # the whole job's: every worker's together


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
    dataset: DatasetRef | None = None
    hyperparameters: dict[str, str] | None = None
    command: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def run_id(self) -> str:
        return f"{self.job_id}-{self.attempt}"


@dataclass(frozen=True)
class AliasChange:
    model_name: str
    alias: str
    from_version: int | None
    to_version: int
    actor: str
    time: float


@dataclass(frozen=True)
class RunRecord:
    """One attempt of one job, with its job's spec (what it ran) and owner."""

    job: JobRecord
    attempt: int
    state: JobState  # this attempt's: PREEMPTED stays PREEMPTED after the job waits again
    executor: str
    pool: str
    handle: str
    gpu_ids: tuple[str, ...]
    image_id: str
    exit_code: int | None
    message: str
    launched_at: float
    started_at: float | None
    ended_at: float | None
    seq: int  # the runs row id: launch order
    dropped_metric_points: int = 0  # written past the server's cap, and lost
    notice_at: float | None = None  # when it was given notice of its preemption
    checkpoint_at: float | None = None  # its last checkpoint the service saw
    work_lost_s: float = 0.0  # preempted: the seconds it ran past that checkpoint

    @property
    def id(self) -> str:
        return f"{self.job.id}-{self.attempt}"

    @property
    def spec(self) -> JobSpec:
        return self.job.spec

    @classmethod
    def from_row(cls, job: JobRecord, row: Any) -> RunRecord:
        m = row._mapping
        return cls(job=job, attempt=m["run_attempt"], state=JobState(m["run_state"]),
                   executor=m["run_executor"], pool=m["run_pool"], handle=m["run_handle"],
                   gpu_ids=split_ids(m["run_gpu_ids"]), image_id=m["run_image_id"],
                   exit_code=m["run_exit_code"], message=m["run_message"],
                   launched_at=m["run_launched_at"], started_at=m["run_started_at"],
                   ended_at=m["run_ended_at"], seq=m["run_seq"],
                   dropped_metric_points=m["run_dropped_metric_points"],
                   notice_at=m["run_notice_at"], checkpoint_at=m["run_checkpoint_at"],
                   work_lost_s=m["run_work_lost_s"])
