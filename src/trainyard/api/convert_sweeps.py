"""Sweeps as one unit on the wire: services/sweeps.py's views as SweepStatus messages."""

from __future__ import annotations

from trainyard.api.convert import state_to_pb, timestamp
from trainyard.services.sweeps import SweepView, Trial
from trainyard.v1 import training_pb2 as pb


def trial_to_pb(trial: Trial) -> pb.SweepTrial:
    job = trial.job
    message = job.pending_message if job.pending_code and not job.message else job.message
    return pb.SweepTrial(
        job_id=job.id, name=job.spec.name, state=state_to_pb(job.state),
        hyperparameters=job.spec.hyperparameters, latest_metrics=trial.latest,
        has_best=trial.best is not None, best=trial.best or 0.0, end_reason=job.end_reason,
        message=message, attempt=job.attempt)


def sweep_to_pb(view: SweepView, *, with_trials: bool = True) -> pb.SweepStatus:
    sweep, use = view.sweep, view.use
    rule = sweep.early_stop
    msg = pb.SweepStatus(
        sweep_id=sweep.id, name=sweep.name, owner=sweep.owner,
        created_at=timestamp(sweep.created_at), state=view.state, message=view.message,
        max_parallel=sweep.max_parallel,
        objective=str(sweep.objective) if sweep.objective else "",
        early_stop=rule.rule if rule else "", min_steps=rule.min_steps if rule else 0,
        reduction=rule.reduction if rule and rule.rule == "asha" else 0,
        max_trials=sweep.budget.max_trials, max_gpu_hours=sweep.budget.max_gpu_hours,
        max_cpu_hours=sweep.budget.max_cpu_hours,
        trial_counts={k: v for k, v in view.counts.items()}, total_trials=view.total,
        stopped_early=view.stopped_early, launched_trials=use.launched,
        gpu_hours=use.gpu_s / 3600, cpu_hours=use.cpu_s / 3600)
    if with_trials:
        msg.trials.extend(trial_to_pb(t) for t in view.trials)
        if view.best is not None:
            msg.best.CopyFrom(trial_to_pb(view.best))
    return msg
