"""A paused sweep starts none of its jobs, and one with a trial budget at most what it has
left, under either policy; other jobs are not held by them."""

from __future__ import annotations

from tests.scheduler.builders import job, policy
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler import FifoPolicy
from trainyard.scheduler.model import PendingJob, PendingReason, RunningJob, Snapshot
from trainyard.scheduler.queues import QueuePolicy

PAUSED = PendingReason(ReasonCode.SWEEP_PAUSED, "sweep 'lr' is paused")


def trials(sweep: str, count: int, first: int = 0) -> list[PendingJob]:
    return [PendingJob(f"{sweep}-{i}", "a", 0, i, Resources(1, 512, 0), sweep=sweep)
            for i in range(first, first + count)]


def both(snapshot: Snapshot) -> list[tuple[tuple[str, ...], dict[str, PendingReason]]]:
    out = []
    for decided in (QueuePolicy(policy()).schedule(snapshot), FifoPolicy(10).schedule(snapshot)):
        out.append((tuple(sorted(decided.admit)),
                    {j.job_id: decided.pending[j.job_id] for j in snapshot.pending
                     if j.job_id not in decided.admit}))
    return out


def test_a_paused_sweep_starts_none_of_its_jobs() -> None:
    pending = [*trials("s1", 3), *trials("s2", 1, first=3), job(10)]
    running = [RunningJob("r", "a", Resources(1, 512, 0), "cpu", sweep="s1")]
    snapshot = Snapshot(pending, running, now=0, sweep_limits={"s1": 5},
                        sweep_holds={"s1": PAUSED})
    for admitted, reasons in both(snapshot):
        assert admitted == ("j10", "s2-3")
        assert {reasons[f"s1-{i}"] for i in range(3)} == {PAUSED}


def test_a_trial_budget_starts_only_the_trials_left() -> None:
    pending = [*trials("s1", 4), job(10)]
    snapshot = Snapshot(pending, [], now=0, sweep_starts={"s1": 2})
    for admitted, reasons in both(snapshot):
        assert admitted == ("j10", "s1-0", "s1-1")
        assert {r.code for r in reasons.values()} == {ReasonCode.SWEEP_BUDGET}
        assert reasons["s1-2"].message == ("sweep s1 has started all the trials its budget "
                                           "allows (max_trials)")


def test_a_budget_and_a_limit_together() -> None:
    pending = trials("s1", 4)
    snapshot = Snapshot(pending, [], now=0, sweep_limits={"s1": 1}, sweep_starts={"s1": 3},
                        sweep_titles={"s1": "sweep 'lr'"})
    for admitted, reasons in both(snapshot):
        assert admitted == ("s1-0",)
        assert reasons["s1-1"].code == ReasonCode.SWEEP_LIMIT
        assert reasons["s1-1"].message.startswith("sweep 'lr' runs at its limit of 1")
