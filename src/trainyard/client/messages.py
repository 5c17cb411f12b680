"""Responses as plain Python: the typed records of jobs and datasets, and any other message
as JSON-ready data. Built from the protocol alone."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from trainyard.start_wording import ago, start_in_brief, start_sentence
from trainyard.v1 import training_pb2 as pb

FINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


def as_dict(message: Any) -> dict[str, Any]:
    """A response as plain data: field names as in the proto, every field present."""
    return dict(json_format.MessageToDict(message, preserving_proto_field_name=True,
                                          always_print_fields_with_no_presence=True))


def plain(message: Message) -> dict[str, Any]:
    """A response as JSON-ready data: proto field names, every field present, 64-bit
    integers as numbers, enums by name (None for UNSPECIFIED), times as ISO 8601 (None
    when unset), and message fields that are unset as None."""
    out: dict[str, Any] = {}
    for fd in message.DESCRIPTOR.fields:
        value = getattr(message, fd.name)
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            value_fd = fd.message_type.fields_by_name["value"]
            out[fd.name] = {k: _value(value_fd, v) for k, v in value.items()}
        elif fd.is_repeated:
            out[fd.name] = [_value(fd, v) for v in value]
        elif fd.message_type is not None and not message.HasField(fd.name):
            out[fd.name] = None
        else:
            out[fd.name] = _value(fd, value)
    return out


def _value(fd: FieldDescriptor, value: Any) -> Any:
    if fd.message_type is not None:
        if fd.message_type.full_name == "google.protobuf.Timestamp":
            return iso(value)
        return plain(value)
    if fd.enum_type is not None:
        name = fd.enum_type.values_by_number[value].name
        return None if name.endswith("_UNSPECIFIED") else name
    return value


def iso(ts: Timestamp) -> str | None:
    if not ts.seconds and not ts.nanos:
        return None
    return datetime.fromtimestamp(ts.seconds + ts.nanos / 1e9, UTC).isoformat()


def state_name(value: int) -> str:
    return str(pb.JobState.Name(value))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Transition:
    from_state: str | None
    to_state: str
    time: str | None
    reason: str

    @classmethod
    def from_pb(cls, t: pb.StateTransition) -> Transition:
        return cls(state_name(t.from_state) if t.from_state else None, state_name(t.to_state),
                   iso(t.time), t.reason)


def _epoch(stamp: str | None) -> float | None:
    return None if stamp is None else datetime.fromisoformat(stamp).timestamp()


@dataclass(frozen=True)
class PredictedStart:
    """When a waiting job is expected to start, as the server's forecast last said, as of
    `as_of`: by `p50` in half of its roll-forwards, by `p90` in 9 in 10 (ISO 8601 times, as
    every time of the SDK; None when the forecast's horizon, `horizon_seconds` ahead, ended
    first). A job that cannot start under the policy as it stands says why in
    `cannot_start`, and has no times."""

    p50: str | None
    p90: str | None
    as_of: str | None
    cannot_start: str = ""
    horizon_seconds: float = 0.0

    def describe(self, now: float | None = None) -> str:
        """"expected to start in about 35 min; 9 in 10 chances by 16:40", or "cannot
        start: ..." (local times)."""
        return start_sentence(_epoch(self.p50), _epoch(self.p90), self.cannot_start,
                              self.horizon_seconds, time.time() if now is None else now)

    def brief(self, now: float | None = None) -> str:
        """For a table's cell: "~35 min", "soon", "> 24 h" or "cannot start"."""
        return start_in_brief(_epoch(self.p50), self.cannot_start, self.horizon_seconds,
                              time.time() if now is None else now)

    def age_seconds(self, now: float | None = None) -> float:
        """How old the prediction is: the time since the forecast's snapshot."""
        made = _epoch(self.as_of)
        return 0.0 if made is None else max(0.0, (time.time() if now is None else now) - made)

    def age(self, now: float | None = None) -> str:
        """"as of 40 s ago"."""
        return f"as of {ago(self.age_seconds(now))}"

    def to_dict(self) -> dict[str, Any]:
        """As `--output json` gives it: p50, p90 and as_of, and cannot_start when set."""
        out: dict[str, Any] = {"p50": self.p50, "p90": self.p90, "as_of": self.as_of}
        if self.cannot_start:
            out["cannot_start"] = self.cannot_start
        return out

    @classmethod
    def from_pb(cls, p: pb.PredictedStart) -> PredictedStart:
        return cls(iso(p.p50) if p.HasField("p50") else None,
                   iso(p.p90) if p.HasField("p90") else None, iso(p.as_of), p.cannot_start,
                   p.horizon_seconds)


@dataclass(frozen=True)
class Dependency:
    """A job another waits for (--after): its id, how it must end ("succeeded" or
    "finished"), its state now, and whether it has ended so."""

    job_id: str
    condition: str
    state: str
    met: bool

    def __str__(self) -> str:
        return f"{self.job_id}:{self.condition}"

    def describe(self) -> str:
        """'abc123 to succeed (RUNNING)', 'abc123 finished (FAILED)'."""
        verb = "succeed" if self.condition == "succeeded" else "finish"
        done = "succeeded" if self.condition == "succeeded" else "finished"
        return f"{self.job_id} {done if self.met else 'to ' + verb} ({self.state})"

    @classmethod
    def from_pb(cls, d: pb.JobDependency) -> Dependency:
        return cls(d.job_id, d.condition, state_name(d.state), d.met)


def _after(items: Any) -> tuple[Dependency, ...]:
    return tuple(Dependency.from_pb(d) for d in items)


def _predicted(message: pb.TrainingStatus | pb.JobSummary) -> PredictedStart | None:
    if not message.HasField("predicted_start"):
        return None
    return PredictedStart.from_pb(message.predicted_start)


@dataclass(frozen=True)
class JobStatus:
    job_id: str
    name: str
    state: str
    queue: str
    queue_position: int
    pending_reason: dict[str, str] | None
    message: str
    exit_code: int | None
    attempt: int
    submitted_at: str | None
    transitions: list[Transition]
    spec: dict[str, Any]
    metrics: dict[str, dict[str, float | int]]
    model: dict[str, Any] | None
    malformed_metric_lines: int
    cancel_requested: bool
    executor: str = ""
    gpu_ids: tuple[str, ...] = ()
    sweep_id: str = ""
    retries: int = 0  # attempts lost or failed and retried
    retry_after: str | None = None  # while it backs off: when its next attempt may start
    predicted_start: PredictedStart | None = None  # while it waits, if forecast
    after: tuple[Dependency, ...] = ()  # the jobs it waits for (--after)
    end_reason: str = ""  # STOPPED_EARLY: its sweep's early-stopping rule stopped it
    # Preemption with notice: the work its preemptions lost (seconds past their attempts'
    # last checkpoints), how many, and the current attempt's last checkpoint seen.
    work_lost_seconds: float = 0.0
    preemptions: int = 0
    last_checkpoint_at: str | None = None
    sample_job_id: int = 0  # its id in the sample training service, if it came through it

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["predicted_start"] = _predicted_dict(self.predicted_start)
        return out

    @classmethod
    def from_pb(cls, s: pb.TrainingStatus) -> JobStatus:
        spec = s.spec
        return cls(
            job_id=s.job_id, name=spec.name, state=state_name(s.state), queue=spec.queue,
            queue_position=s.queue_position,
            pending_reason=({"code": s.pending_reason.code, "message": s.pending_reason.message}
                            if s.HasField("pending_reason") else None),
            message=s.message, exit_code=s.exit_code if s.has_exit_code else None,
            attempt=s.attempt, submitted_at=iso(s.submitted_at),
            transitions=[Transition.from_pb(t) for t in s.transitions],
            spec={
                "name": spec.name, "command": spec.command, "image": spec.image,
                "dataset": ({"name": spec.dataset.name, "version": spec.dataset.version}
                            if spec.HasField("dataset") else None),
                "hyperparameters": dict(spec.hyperparameters),
                "resources": {"cpus": spec.resources.cpus,
                              "memory_mb": spec.resources.memory_mb,
                              "gpus": spec.resources.gpus},
                "queue": spec.queue, "priority": spec.priority, "labels": dict(spec.labels),
                "workers": spec.workers or 1, "git_commit": spec.git_commit,
                "model_name": spec.model_name, "framework": spec.framework,
                "max_attempts": spec.max_attempts, "retry_on_failure": spec.retry_on_failure,
                "retry_exit_codes": list(spec.retry_exit_codes),
                "time_limit_seconds": spec.time_limit_seconds,
                "pending_timeout_seconds": spec.pending_timeout_seconds,
                # NAME:VERSION of the registered algorithm it is pinned to ("": none).
                "algorithm": (f"{spec.algorithm.name}:{spec.algorithm.version}"
                              if spec.HasField("algorithm") else ""),
                "code_hash": spec.code_hash,
            },
            metrics={k: {"value": v.value, "step": v.step} for k, v in s.latest_metrics.items()},
            model=({"model_name": s.model.model_name, "version": s.model.version,
                    "content_hash": s.model.content_hash, "uri": s.model.uri,
                    "size_bytes": s.model.size_bytes, "file_count": s.model.file_count}
                   if s.HasField("model") else None),
            malformed_metric_lines=s.malformed_metric_lines,
            cancel_requested=s.cancel_requested, executor=s.executor,
            gpu_ids=tuple(s.gpu_ids), sweep_id=s.sweep_id, retries=s.retries,
            retry_after=iso(s.retry_after) if s.HasField("retry_after") else None,
            predicted_start=_predicted(s), after=_after(s.spec.after),
            end_reason=s.end_reason,
            work_lost_seconds=s.work_lost_seconds, preemptions=s.preemptions,
            last_checkpoint_at=iso(s.last_checkpoint_at)
            if s.HasField("last_checkpoint_at") else None, sample_job_id=s.sample_job_id,
        )


@dataclass(frozen=True)
class JobSummary:
    job_id: str
    name: str
    state: str
    queue: str
    priority: int
    submitted_at: str | None
    updated_at: str | None
    labels: dict[str, str]
    message: str
    predicted_start: PredictedStart | None = None  # while it waits, if forecast
    after: tuple[Dependency, ...] = ()  # the jobs it waits for (--after)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["predicted_start"] = _predicted_dict(self.predicted_start)
        return out

    @classmethod
    def from_pb(cls, j: pb.JobSummary) -> JobSummary:
        return cls(j.job_id, j.name, state_name(j.state), j.queue, j.priority,
                   iso(j.submitted_at), iso(j.updated_at), dict(j.labels), j.message,
                   _predicted(j), _after(j.after))


def _predicted_dict(prediction: PredictedStart | None) -> dict[str, Any] | None:
    return None if prediction is None else prediction.to_dict()


@dataclass(frozen=True)
class Dataset:
    name: str
    version: str
    size_bytes: int
    file_count: int
    created_at: str | None
    created: bool = False
    run_count: int = 0  # the runs that used it, of those you may see
    run_ids: tuple[str, ...] = ()

    @classmethod
    def from_pb(cls, d: pb.DatasetVersion) -> Dataset:
        return cls(d.name, d.version, d.size_bytes, d.file_count, iso(d.created_at), d.created,
                   d.run_count, tuple(d.run_ids))


@dataclass(frozen=True)
class Submitted:
    job_id: str
    existing: bool = False


