"""Mapping between protobuf messages and domain objects, in one place each way."""

from __future__ import annotations

from typing import cast

from google.protobuf.timestamp_pb2 import Timestamp

from trainyard.auth.policy import QueueAcl
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import DEFAULT_QUEUE, DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.service import JobStatus
from trainyard.store.access import AuditRecord, TeamRecord, TokenRecord, UserRecord
from trainyard.store.records import DatasetRecord, EventRecord, JobRecord, ModelRecord
from trainyard.v1 import training_pb2 as pb

_TO_PB = {state: cast(pb.JobState, pb.JobState.Value(state.value)) for state in JobState}
_FROM_PB = {int(v): k for k, v in _TO_PB.items()}


def state_to_pb(state: JobState) -> pb.JobState:
    return _TO_PB[state]


def state_from_pb(value: int, field: str = "state") -> JobState:
    try:
        return _FROM_PB[value]
    except KeyError:
        raise InvalidArgument(field, f"unknown job state {value}") from None


def timestamp(epoch: float) -> Timestamp:
    ts = Timestamp()
    ts.FromNanoseconds(int(epoch * 1e9))
    return ts


def spec_from_request(req: pb.TrainRequest) -> JobSpec:
    dataset = None
    if req.HasField("dataset") and (req.dataset.name or req.dataset.version):
        dataset = DatasetRef(req.dataset.name, req.dataset.version)
    # proto3 cannot tell 0 from unset: 0 CPUs or memory means "the default"; any other
    # value, negative ones included, goes to validation as given.
    res = req.resources
    resources = Resources(
        cpus=res.cpus if res.cpus != 0 else Resources.cpus,
        memory_mb=res.memory_mb if res.memory_mb != 0 else Resources.memory_mb,
        gpus=res.gpus,
    )
    return JobSpec(
        name=req.name,
        command=req.command,
        image=req.image,
        dataset=dataset,
        hyperparameters=dict(req.hyperparameters),
        resources=resources,
        queue=req.queue or DEFAULT_QUEUE,
        priority=req.priority,
        labels=dict(req.labels),
    )


def spec_to_pb(spec: JobSpec) -> pb.JobSpec:
    msg = pb.JobSpec(
        name=spec.name, command=spec.command, image=spec.image,
        hyperparameters=spec.hyperparameters,
        resources=pb.Resources(cpus=spec.resources.cpus, memory_mb=spec.resources.memory_mb,
                               gpus=spec.resources.gpus),
        queue=spec.queue, priority=spec.priority, labels=spec.labels,
    )
    if spec.dataset is not None:
        msg.dataset.CopyFrom(pb.DatasetRef(name=spec.dataset.name, version=spec.dataset.version))
    return msg


def transition_to_pb(event: EventRecord) -> pb.StateTransition:
    return pb.StateTransition(
        from_state=state_to_pb(event.from_state) if event.from_state else None,
        to_state=state_to_pb(event.to_state), time=timestamp(event.time), reason=event.reason,
    )


def model_to_pb(model: ModelRecord) -> pb.ModelArtifact:
    return pb.ModelArtifact(
        model_name=model.model_name, version=model.version, content_hash=model.content_hash,
        uri=model.uri, size_bytes=model.size_bytes, file_count=model.file_count,
    )


def status_to_pb(status: JobStatus) -> pb.TrainingStatus:
    job = status.job
    msg = pb.TrainingStatus(
        job_id=job.id, state=state_to_pb(job.state), queue_position=status.queue_position,
        message=job.message, has_exit_code=job.exit_code is not None,
        exit_code=job.exit_code or 0, spec=spec_to_pb(job.spec),
        transitions=[transition_to_pb(e) for e in status.events],
        submitted_at=timestamp(job.submitted_at), attempt=job.attempt,
        malformed_metric_lines=job.malformed_metric_lines,
        cancel_requested=job.cancel_requested, owner=job.owner, executor=job.executor,
        gpu_ids=list(job.gpu_ids),
    )
    if job.state is JobState.WAITING and job.pending_code:
        msg.pending_reason.CopyFrom(pb.PendingReason(code=job.pending_code,
                                                     message=job.pending_message))
    for key, (value, step) in status.latest_metrics.items():
        msg.latest_metrics[key].CopyFrom(pb.MetricValue(value=value, step=step or 0))
    if status.model is not None:
        msg.model.CopyFrom(model_to_pb(status.model))
    return msg


def summary_to_pb(job: JobRecord) -> pb.JobSummary:
    return pb.JobSummary(
        job_id=job.id, name=job.spec.name, state=state_to_pb(job.state), queue=job.spec.queue,
        priority=job.spec.priority, submitted_at=timestamp(job.submitted_at),
        updated_at=timestamp(job.updated_at), labels=job.spec.labels, message=job.message,
    )


def dataset_to_pb(record: DatasetRecord, created: bool = False) -> pb.DatasetVersion:
    return pb.DatasetVersion(
        name=record.name, version=record.version, size_bytes=record.size_bytes,
        file_count=record.file_count, created_at=timestamp(record.created_at), created=created,
    )


def user_to_pb(user: UserRecord) -> pb.User:
    return pb.User(name=user.name, admin=user.admin, teams=list(user.teams),
                   created_at=timestamp(user.created_at))


def team_to_pb(team: TeamRecord) -> pb.Team:
    return pb.Team(name=team.name, members=list(team.members),
                   created_at=timestamp(team.created_at))


def token_to_pb(token: TokenRecord) -> pb.TokenInfo:
    info = pb.TokenInfo(id=token.id, user=token.user, read_only=token.read_only,
                        created_at=timestamp(token.created_at))
    if token.expires_at is not None:
        info.expires_at.CopyFrom(timestamp(token.expires_at))
    if token.revoked_at is not None:
        info.revoked_at.CopyFrom(timestamp(token.revoked_at))
    return info


def queue_access_to_pb(queue: str, acl: QueueAcl) -> pb.QueueAccess:
    return pb.QueueAccess(queue=queue, users=sorted(acl.users), teams=sorted(acl.teams))


def audit_to_pb(event: AuditRecord) -> pb.AuditEvent:
    return pb.AuditEvent(time=timestamp(event.time), actor=event.actor, action=event.action,
                         target=event.target, allowed=event.allowed, detail=event.detail)
