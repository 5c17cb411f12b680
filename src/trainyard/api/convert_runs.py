"""Mapping of runs, comparisons, models and lineage to protobuf messages (and the few
requests that carry structure back)."""

from __future__ import annotations

from trainyard.api.convert import (
    dataset_to_pb,
    model_to_pb,
    spec_to_pb,
    state_to_pb,
    timestamp,
    transition_to_pb,
)
from trainyard.api.convert_algorithms import version_to_pb
from trainyard.domain.runs import MetricThreshold, ModelRef, algorithm_of, model_ref, threshold
from trainyard.services.datasets import DatasetLineage
from trainyard.services.models import ModelDetail, ModelLineage
from trainyard.services.records import Comparison, ModelSummary, RunRecord
from trainyard.services.runs import RunView
from trainyard.v1 import training_pb2 as pb


def code_to_pb(run: RunRecord) -> pb.CodeVersion:
    spec = run.spec
    msg = pb.CodeVersion(image=spec.image, image_id=run.image_id, command=spec.command,
                         git_commit=spec.git_commit, code_hash=spec.code_hash)
    if spec.algorithm is not None:
        msg.algorithm.CopyFrom(pb.AlgorithmRef(name=spec.algorithm.name,
                                               version=spec.algorithm.version))
    return msg


def run_message(run: RunRecord) -> str:
    """The run's message, and how many metric points past the server's cap it lost."""
    if not run.dropped_metric_points:
        return run.message
    dropped = (f"{run.dropped_metric_points:,} metric points past the server's cap were "
               "dropped")
    return f"{run.message}; {dropped}" if run.message else dropped


def run_to_pb(view: RunView) -> pb.Run:
    run, job = view.run, view.run.job
    msg = pb.Run(
        run_id=run.id, job_id=job.id, attempt=run.attempt, name=job.spec.name,
        owner=job.owner, state=state_to_pb(run.state),
        algorithm=algorithm_of(job.spec.name, job.spec.labels,
                               job.spec.algorithm.name if job.spec.algorithm else ""),
        spec=spec_to_pb(job.spec),
        code=code_to_pb(run), executor=run.executor, pool=run.pool,
        gpu_ids=list(run.gpu_ids), submitted_at=timestamp(job.submitted_at),
        launched_at=timestamp(run.launched_at), has_exit_code=run.exit_code is not None,
        exit_code=run.exit_code or 0, message=run_message(run),
        series_truncated=view.series_truncated,
        transitions=[transition_to_pb(e) for e in view.events],
        log_uri=view.log_path.as_uri(), log_size_bytes=view.log_size,
        reproduced_from=job.reproduced_from, reproduced_by=view.reproductions,
        # The job's end reason belongs to its last attempt.
        end_reason=job.end_reason if run.attempt == job.attempt else "",
        work_lost_seconds=run.work_lost_s,
    )
    for field, at in (("notice_at", run.notice_at), ("checkpoint_at", run.checkpoint_at)):
        if at is not None:
            getattr(msg, field).CopyFrom(timestamp(at))
    if run.started_at is not None:
        msg.started_at.CopyFrom(timestamp(run.started_at))
    if run.ended_at is not None:
        msg.ended_at.CopyFrom(timestamp(run.ended_at))
    for key, (value, step) in view.metrics.items():
        msg.metrics[key].CopyFrom(pb.MetricValue(value=value, step=step or 0))
    for key, points in sorted((view.series or {}).items()):
        series = msg.series.add(key=key)
        for step, value, at in points:
            series.points.add(step=step or 0, has_step=step is not None, value=value,
                              time=timestamp(at))
    if view.model is not None:
        msg.model.CopyFrom(model_to_pb(view.model))
    return msg


def comparison_to_pb(comparison: Comparison, views: list[RunView]) -> pb.CompareRunsResponse:
    out = pb.CompareRunsResponse(runs=[run_to_pb(v) for v in views])
    for target, rows in ((out.settings, comparison.settings),
                         (out.hyperparameters, comparison.hyperparameters)):
        for row in rows:
            target.add(key=row.key, differs=row.differs, values=[
                pb.ComparedValue(present=v is not None, value=v or "") for v in row.values])
    for metric in comparison.metrics:
        out.metrics.add(key=metric.key, differs=metric.differs, values=[
            pb.ComparedMetricValue(present=v is not None, value=v or 0.0)
            for v in metric.values])
    return out


def thresholds_from_pb(items: list[pb.MetricThreshold]) -> list[MetricThreshold]:
    return [threshold(t.key, t.op, t.value, f"metrics[{i}]") for i, t in enumerate(items)]


def model_ref_from_pb(ref: pb.ModelRef) -> ModelRef:
    return model_ref(ref.name, ref.version, ref.alias)


def model_summary_to_pb(model: ModelSummary) -> pb.ModelSummary:
    return pb.ModelSummary(name=model.name, versions=model.versions,
                           latest_version=model.latest_version, aliases=model.aliases,
                           updated_at=timestamp(model.updated_at))


def model_detail_to_pb(model: ModelDetail) -> pb.Model:
    return pb.Model(
        name=model.name, versions=[model_to_pb(v) for v in model.versions],
        aliases=model.aliases,
        alias_history=[pb.AliasChange(alias=c.alias, from_version=c.from_version or 0,
                                      to_version=c.to_version, actor=c.actor,
                                      time=timestamp(c.time)) for c in model.history])


def lineage_to_pb(lineage: ModelLineage) -> pb.ModelLineage:
    run, spec = lineage.run, lineage.run.spec
    res = spec.resources
    msg = pb.ModelLineage(
        model=model_to_pb(lineage.model), run_id=run.id, owner=run.job.owner,
        code=code_to_pb(run), hyperparameters=spec.hyperparameters,
        resources=pb.Resources(cpus=res.cpus, memory_mb=res.memory_mb, gpus=res.gpus),
        workers=spec.workers)
    if lineage.dataset is not None:
        msg.dataset.CopyFrom(dataset_to_pb(lineage.dataset))
    if lineage.run_view is not None:
        msg.run.CopyFrom(run_to_pb(lineage.run_view))
    if lineage.algorithm is not None:
        msg.algorithm.CopyFrom(version_to_pb(lineage.algorithm))
    return msg


def dataset_lineage_to_pb(lineage: DatasetLineage) -> pb.DatasetLineage:
    use = lineage.dataset
    return pb.DatasetLineage(dataset=dataset_to_pb(use.record, run_ids=use.run_ids),
                             models=[model_to_pb(m) for m in lineage.models])
