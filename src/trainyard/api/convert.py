"""Mapping between protobuf messages and domain objects, in one place each way."""

from __future__ import annotations

from typing import cast

from google.protobuf.timestamp_pb2 import Timestamp

from trainyard.auth.policy import Identity
from trainyard.domain.access import QueueAccess
from trainyard.domain.algorithms import UNSET_RESOURCES, parse_algorithm_ref
from trainyard.domain.budgets import NO_USE, QUEUE, TEAM, Budget, BudgetScope, BudgetUse
from trainyard.domain.dependencies import Dependency, Need, dependency
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.prediction import PredictedStart
from trainyard.domain.spec import DEFAULT_QUEUE, DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.domain.sweep import Parameter
from trainyard.services.jobs import JobStatus, QueuesOverview
from trainyard.services.records import (
    AuditRecord,
    DatasetRecord,
    EventRecord,
    JobRecord,
    ModelRecord,
    TeamRecord,
    TokenRecord,
    UserRecord,
)
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


def sweep_template_from_pb(template: pb.TrainRequest) -> JobSpec:
    """A sweep's template as every trial's spec. Its trials cannot wait for other jobs: a
    template's `after` is refused rather than dropped."""
    if template.after:
        raise InvalidArgument("template.after", "a sweep's trials cannot wait for other jobs "
                              "(--after); submit the sweep once they have ended")
    return spec_from_request(template)


def spec_from_request(req: pb.TrainRequest) -> JobSpec:
    dataset = None
    if req.HasField("dataset") and (req.dataset.name or req.dataset.version):
        dataset = DatasetRef(req.dataset.name, req.dataset.version)
    # proto3 cannot tell 0 from unset: 0 CPUs or memory means "the default"; any other
    # value, negative ones included, goes to validation as given.
    res = req.resources
    algorithm = parse_algorithm_ref(req.algorithm) if req.algorithm else None
    # With an algorithm, what is left at 0 takes its defaults first (domain.algorithms.apply).
    unset = UNSET_RESOURCES if algorithm is not None else Resources()
    resources = Resources(
        cpus=res.cpus if res.cpus != 0 else unset.cpus,
        memory_mb=res.memory_mb if res.memory_mb != 0 else unset.memory_mb,
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
        workers=req.workers if req.workers != 0 else 1,  # 0 (unset) is one worker
        git_commit=req.git_commit,
        model_name=req.model_name,
        framework=req.framework,
        max_attempts=req.max_attempts,
        retry_on_failure=req.retry_on_failure,
        retry_exit_codes=tuple(req.retry_exit_codes),
        time_limit_s=req.time_limit_seconds,
        pending_timeout_s=req.pending_timeout_seconds,
        algorithm=algorithm,
    )


def after_from_request(req: pb.TrainRequest) -> list[Dependency]:
    """The jobs a submit waits for; a bad one is refused naming `after`."""
    return [dependency(d.job_id, d.condition) for d in req.after]


def needs_to_pb(needs: list[Need]) -> list[pb.JobDependency]:
    return [pb.JobDependency(job_id=n.job_id, condition=n.dependency.condition.value,
                             state=state_to_pb(n.state), met=n.met) for n in needs]


def spec_to_pb(spec: JobSpec, needs: list[Need] | None = None) -> pb.JobSpec:
    msg = pb.JobSpec(
        name=spec.name, command=spec.command, image=spec.image,
        hyperparameters=spec.hyperparameters,
        resources=pb.Resources(cpus=spec.resources.cpus, memory_mb=spec.resources.memory_mb,
                               gpus=spec.resources.gpus),
        queue=spec.queue, priority=spec.priority, labels=spec.labels, workers=spec.workers,
        git_commit=spec.git_commit, model_name=spec.model_name, framework=spec.framework,
        max_attempts=spec.max_attempts, retry_on_failure=spec.retry_on_failure,
        retry_exit_codes=list(spec.retry_exit_codes), time_limit_seconds=spec.time_limit_s,
        pending_timeout_seconds=spec.pending_timeout_s, after=needs_to_pb(needs or []),
    )
    if spec.dataset is not None:
        msg.dataset.CopyFrom(pb.DatasetRef(name=spec.dataset.name, version=spec.dataset.version))
    if spec.algorithm is not None:
        msg.algorithm.CopyFrom(pb.AlgorithmRef(name=spec.algorithm.name,
                                               version=spec.algorithm.version))
        msg.code_hash = spec.code_hash
    return msg


def parameters_from_pb(items: list[pb.SweepParameter]) -> list[Parameter]:
    return [Parameter(p.name, tuple(p.values), p.min, p.max, p.log, p.integer) for p in items]


def transition_to_pb(event: EventRecord) -> pb.StateTransition:
    return pb.StateTransition(
        from_state=state_to_pb(event.from_state) if event.from_state else None,
        to_state=state_to_pb(event.to_state), time=timestamp(event.time), reason=event.reason,
    )


def model_to_pb(model: ModelRecord) -> pb.ModelArtifact:
    msg = pb.ModelArtifact(
        model_name=model.model_name, version=model.version, content_hash=model.content_hash,
        uri=model.uri, size_bytes=model.size_bytes, file_count=model.file_count,
        run_id=model.run_id, created_at=timestamp(model.created_at),
        aliases=list(model.aliases),
    )
    if model.dataset is not None:
        msg.dataset.CopyFrom(pb.DatasetRef(name=model.dataset.name,
                                           version=model.dataset.version))
    return msg


def status_to_pb(status: JobStatus) -> pb.TrainingStatus:
    job = status.job
    msg = pb.TrainingStatus(
        job_id=job.id, state=state_to_pb(job.state), queue_position=status.queue_position,
        sample_job_id=status.sample_job_id,
        message=job.message, has_exit_code=job.exit_code is not None,
        exit_code=job.exit_code or 0, spec=spec_to_pb(job.spec, status.needs),
        transitions=[transition_to_pb(e) for e in status.events],
        submitted_at=timestamp(job.submitted_at), attempt=job.attempt,
        malformed_metric_lines=job.malformed_metric_lines,
        cancel_requested=job.cancel_requested, owner=job.owner, executor=job.executor,
        gpu_ids=list(job.gpu_ids), sweep_id=job.sweep_id, retries=job.retries,
        end_reason=job.end_reason,
        work_lost_seconds=job.work_lost_s, preemptions=job.preemptions,
    )
    if job.checkpoint_at is not None:
        msg.last_checkpoint_at.CopyFrom(timestamp(job.checkpoint_at))
    if job.state is JobState.WAITING and job.retry_after is not None:
        msg.retry_after.CopyFrom(timestamp(job.retry_after))
    if job.state is JobState.WAITING and job.pending_code:
        msg.pending_reason.CopyFrom(pb.PendingReason(code=job.pending_code,
                                                     message=status.pending_message))
    for key, (value, step) in status.latest_metrics.items():
        msg.latest_metrics[key].CopyFrom(pb.MetricValue(value=value, step=step or 0))
    if status.model is not None:
        msg.model.CopyFrom(model_to_pb(status.model))
    if job.state is JobState.WAITING and status.prediction is not None:
        msg.predicted_start.CopyFrom(prediction_to_pb(status.prediction))
    return msg


def prediction_to_pb(prediction: PredictedStart) -> pb.PredictedStart:
    """Times past the forecast's horizon, or of a job that cannot start, stay unset."""
    msg = pb.PredictedStart(as_of=timestamp(prediction.as_of),
                            cannot_start=prediction.cannot_start,
                            horizon_seconds=prediction.horizon_s)
    if prediction.p50 is not None:
        msg.p50.CopyFrom(timestamp(prediction.p50))
    if prediction.p90 is not None:
        msg.p90.CopyFrom(timestamp(prediction.p90))
    return msg


def summary_to_pb(job: JobRecord, prediction: PredictedStart | None = None,
                  needs: list[Need] | None = None) -> pb.JobSummary:
    msg = pb.JobSummary(
        job_id=job.id, name=job.spec.name, state=state_to_pb(job.state), queue=job.spec.queue,
        priority=job.spec.priority, submitted_at=timestamp(job.submitted_at),
        updated_at=timestamp(job.updated_at), labels=job.spec.labels, message=job.message,
        after=needs_to_pb(needs or []),
        end_reason=job.end_reason,
    )
    if job.state is JobState.WAITING and prediction is not None:
        msg.predicted_start.CopyFrom(prediction_to_pb(prediction))
    return msg


def dataset_to_pb(record: DatasetRecord, created: bool = False,
                  run_ids: list[str] | None = None) -> pb.DatasetVersion:
    return pb.DatasetVersion(
        name=record.name, version=record.version, size_bytes=record.size_bytes,
        file_count=record.file_count, created_at=timestamp(record.created_at), created=created,
        run_count=len(run_ids or []), run_ids=run_ids or [],
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


def identity_to_pb(who: Identity) -> pb.Identity:
    return pb.Identity(user=who.user, admin=who.admin, read_only=who.read_only,
                       teams=sorted(who.teams), single_user=who.single_user,
                       token_id=who.token_id)


def queue_access_to_pb(queue: str, acl: QueueAccess) -> pb.QueueAccess:
    return pb.QueueAccess(queue=queue, users=sorted(acl.users), teams=sorted(acl.teams))


def audit_to_pb(event: AuditRecord) -> pb.AuditEvent:
    return pb.AuditEvent(time=timestamp(event.time), actor=event.actor, action=event.action,
                         target=event.target, allowed=event.allowed, detail=event.detail)


def _usage(res: Resources) -> pb.Usage:
    return pb.Usage(cpus=res.cpus, memory_mb=res.memory_mb, gpus=res.gpus)


def budget_to_pb(scope: BudgetScope, budget: Budget, use: BudgetUse) -> pb.BudgetUsage:
    out = pb.BudgetUsage(kind=scope.kind, name=scope.name, period_seconds=budget.period_s)
    if budget.gpu_hours is not None:
        out.gpu_hours.CopyFrom(pb.BudgetHours(used=use.gpu_hours, limit=budget.gpu_hours))
    if budget.cpu_hours is not None:
        out.cpu_hours.CopyFrom(pb.BudgetHours(used=use.cpu_hours, limit=budget.cpu_hours))
    return out


def queues_to_pb(view: QueuesOverview) -> pb.QueuesOverview:
    policy = view.policy
    none = Resources(0.0, 0, 0)
    out = pb.QueuesOverview(max_running=policy.max_running, running=view.total_running,
                            source=view.source, loaded_at=timestamp(view.loaded_at))
    if view.usage_at is not None:
        out.fair_share_as_of.CopyFrom(timestamp(view.usage_at))
    for q in sorted(policy.queues.values(), key=lambda q: (-q.priority, q.name)):
        entry_queue = out.queues.add(
            name=q.name, priority=q.priority, max_running=q.max_running or 0,
            pools=list(q.pools), weight=q.weight, users=sorted(q.users),
            teams=sorted(q.teams), waiting=view.waiting.get(q.name, 0),
            running=view.running.get(q.name, 0), fair_share_usage=view.usage.get(q.name, 0.0),
            fair_share=view.standing.get(q.name, 0.0))
        if q.budget is not None:
            scope = BudgetScope(QUEUE, q.name)
            entry_queue.budget.CopyFrom(budget_to_pb(scope, q.budget,
                                                     view.budget_use.get(scope, NO_USE)))
    for pool in policy.pools.values():
        cap = pool.capacity
        use = view.pools.get(pool.name)
        entry = out.pools.add(name=pool.name, executor=pool.executor, gpus=cap.gpus,
                              max_jobs=cap.max_jobs, used=_usage(use.used if use else none),
                              jobs=use.jobs if use else 0)
        if cap.cpus is not None:
            entry.cpus = cap.cpus
        if cap.memory_mb is not None:
            entry.memory_mb = cap.memory_mb
    for team in sorted(policy.teams.values(), key=lambda t: t.name):
        entry_team = out.teams.add(name=team.name, members=sorted(team.members))
        for pool_name, quota in sorted(team.quotas.items()):
            entry_team.quotas.add(
                pool=pool_name,
                quota=_usage(Resources(quota.cpus or 0.0, quota.memory_mb or 0,
                                       quota.gpus or 0)),
                borrow_limit=_usage(Resources(quota.borrow_cpus, quota.borrow_memory_mb,
                                              quota.borrow_gpus)),
                used=_usage(view.teams.get((team.name, pool_name), none)))
        if team.budget is not None:
            scope = BudgetScope(TEAM, team.name)
            out.team_budgets.append(budget_to_pb(scope, team.budget,
                                                 view.budget_use.get(scope, NO_USE)))
    if any(q.budget for q in policy.queues.values()) or out.team_budgets:
        out.budgets_as_of.CopyFrom(timestamp(view.budgets_at))
    return out
