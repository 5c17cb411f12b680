"""Claims on quota taken back for a job, beside long waiters' holds and access changes."""

from __future__ import annotations

from dataclasses import replace

from trainyard.domain import policy as cfg
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler.model import Decisions, PendingJob, RunningJob, Snapshot
from trainyard.scheduler.queues import QUEUE_ACCESS, RESERVED, QueuePolicy

TWO = Resources(1.0, 0, 2)
POLICY = cfg.Policy(
    pools={"p": cfg.Pool(PoolCapacity("p", max_jobs=10, gpu_ids=("0", "1", "2", "3"))),
           "q": cfg.Pool(PoolCapacity("q", max_jobs=10, gpu_ids=("9",)))},
    queues={"lo": cfg.Queue("lo", pools=("p",)),
            "hi": cfg.Queue("hi", pools=("p", "q"), priority=1, max_running=1)},
    teams={"A": cfg.Team("A", quotas={"p": cfg.Quota(gpus=2)}),
           "B": cfg.Team("B", quotas={"p": cfg.Quota(gpus=2)})},
    max_running=10, reserve_after_s=600, min_runtime_s=0)
# Team B runs its own 2 GPUs of p; team C, with no quota there, borrows the other 2.
OWN = RunningJob("b1", "lo", TWO, "p", ("0", "1"), team="B")
BORROWED = RunningJob("c1", "lo", TWO, "p", ("2", "3"), team="C")
HI_BUSY = RunningJob("h", "hi", Resources(1.0, 0, 1), "q", ("9",))  # queue hi at its limit
CLAIMANT = PendingJob("J", "lo", 0, 10, TWO, team="A", submitted_at=5000)
REQUEUED = PendingJob("c1", "lo", 0, 0, TWO, team="C", submitted_at=0)


def schedule(policy: cfg.Policy, pending: list[PendingJob], running: list[RunningJob],
             reclaiming: dict[str, str], now: float = 5000) -> Decisions:
    return QueuePolicy(policy).schedule(Snapshot(pending, running, max_concurrent=10,
                                                 now=now, reclaiming=reclaiming))


def test_a_claim_and_a_long_waiters_hold_do_not_block_each_other() -> None:
    waiter = PendingJob("L", "hi", 0, 1, TWO, team="A", submitted_at=0)  # waited long
    first = schedule(POLICY, [CLAIMANT, waiter], [OWN, BORROWED, HI_BUSY], {})
    assert list(first.preempt) == ["c1"] and first.reclaiming == {"J": "p"}
    # The borrower stopped; the long waiter's queue is free again and goes first.
    second = schedule(POLICY, [CLAIMANT, waiter, REQUEUED], [OWN], first.reclaiming)
    assert second.admit == ("J",)  # the claim is not kept out by the waiter's hold
    assert second.pending["L"].code == RESERVED
    third = schedule(POLICY, [waiter, REQUEUED], [OWN], second.reclaiming)
    assert third.admit == ("L",)


def test_a_claim_ends_when_the_queue_stops_taking_its_job() -> None:
    first = schedule(POLICY, [CLAIMANT], [OWN, BORROWED], {})
    assert first.reclaiming == {"J": "p"}
    closed = replace(POLICY, queues={**POLICY.queues, "lo": replace(POLICY.queues["lo"],
                                                                    users=frozenset({"x"}))})
    other = PendingJob("M", "hi", 0, 20, TWO, team="A", submitted_at=5000)
    second = schedule(closed, [CLAIMANT, other], [OWN], first.reclaiming, now=9000)
    assert second.pending["J"].code == QUEUE_ACCESS and second.reclaiming == {}
    third = schedule(closed, [CLAIMANT, other], [OWN], second.reclaiming, now=9001)
    assert third.admit == ("M",)
