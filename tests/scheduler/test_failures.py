"""Failed shapes, remembered through a pass: they change no decision, and a backlog of alike
jobs costs a full check per shape."""

from __future__ import annotations

import random
from dataclasses import replace
from functools import partial

import pytest

from tests import factories
from trainyard.domain import policy as cfg
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler import queues as queue_module
from trainyard.scheduler.accounting import Ledger, layout_of
from trainyard.scheduler.attained import FIRST_LEVEL_S
from trainyard.scheduler.failures import Failures
from trainyard.scheduler.model import (
    Decisions,
    PendingJob,
    PendingReason,
    RunningJob,
    SharedReasons,
    Snapshot,
)
from trainyard.scheduler.queues import QueuePolicy

HOUR = FIRST_LEVEL_S
NOW = 10 * HOUR


def _decide_without_memo(policy: cfg.Policy, snapshot: Snapshot) -> Decisions:
    """QueuePolicy with its memos (failed shapes, and preemptions for service that could
    not make room) forgetting everything."""

    class Forgetful(dict):  # type: ignore[type-arg]
        def get(self, key, default=None):  # type: ignore[no-untyped-def]
            return default

    original = queue_module._Pass.__init__

    def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        original(self, *args, **kwargs)
        self.failures.failed = Forgetful()
        self.preemption.cannot_demote = Forgetful()

    queue_module._Pass.__init__ = init  # type: ignore[method-assign]
    try:
        return QueuePolicy(policy).schedule(snapshot)
    finally:
        queue_module._Pass.__init__ = original  # type: ignore[method-assign]


GPUS = tuple(str(i) for i in range(8))
MEMO_POLICY = cfg.Policy(
    pools={"p": cfg.Pool(PoolCapacity("p", max_jobs=12, gpu_ids=GPUS))},
    queues={"a": cfg.Queue("a", pools=("p",)), "b": cfg.Queue("b", pools=("p",))},
    teams={t: cfg.Team(t, quotas={"p": cfg.Quota(gpus=3, borrow_gpus=2)}) for t in "AB"},
    max_running=10, reserve_after_s=600, min_runtime_s=300)


@pytest.mark.parametrize("teams", [True, False])
def test_remembering_failures_changes_no_decision(teams: bool) -> None:
    # Without teams nothing is borrowed, so every long waiter holds room in its pool.
    policy = MEMO_POLICY if teams else replace(MEMO_POLICY, teams={}, service_levels=False)
    rng = random.Random(7)
    preempted = held = 0
    for _ in range(400):
        taken = rng.sample(GPUS, rng.randint(0, 8))
        active, at = [], 0
        while at < len(taken):
            size = min(rng.choice((1, 1, 2)), len(taken) - at)
            active.append(RunningJob(f"r{at}", rng.choice("ab"), Resources(1.0, 0, size), "p",
                                     tuple(taken[at:at + size]), team=rng.choice("AB"),
                                     started_at=NOW - rng.uniform(0, 6 * HOUR),
                                     attained=rng.choice((0.0, 2 * HOUR, 9 * HOUR)),
                                     preempting=rng.random() < 0.1,
                                     priority=rng.choice((0, 0, 1))))
            at += size
        pending = [PendingJob(f"w{i}", rng.choice("ab"), rng.choice((0, 0, 1)), i,
                              Resources(1.0, 0, rng.choice((1, 2, 4))), team=rng.choice("AB"),
                              submitted_at=NOW - rng.uniform(0, 1200),
                              attained=rng.choice((0.0, 0.0, 3 * HOUR)))
                   for i in range(rng.randint(1, 12))]
        claims = {job.job_id: "p" for job in pending if rng.random() < 0.15}
        snapshot = Snapshot(pending, active, now=NOW, reclaiming=claims)
        mine, plain = QueuePolicy(policy).schedule(snapshot), \
            _decide_without_memo(policy, snapshot)
        assert (mine.admit, mine.preempt, mine.reclaiming, mine.gpu_ids) == \
            (plain.admit, plain.preempt, plain.reclaiming, plain.gpu_ids)
        assert dict(mine.pending.items()) == dict(plain.pending.items())
        preempted += len(mine.preempt)
        held += sum(1 for reason in mine.pending.values()
                    if reason.code == ReasonCode.RESERVED)
    if teams:
        assert preempted > 50  # the snapshots do make it preempt, for service and for quota
    else:
        assert held > 50  # and here long waiters hold room from the jobs after them


# --- the memo itself ----------------------------------------------------------------------

POOLS = cfg.Policy(
    pools={"p": cfg.Pool(PoolCapacity("p", max_jobs=8, cpus=4.0)),
           "q": cfg.Pool(PoolCapacity("q", max_jobs=8, cpus=4.0))},
    queues={"a": cfg.Queue("a", pools=("p", "q"))},
    teams={"T": cfg.Team("T", quotas={"q": cfg.Quota(cpus=1.0)})})
THREE = Resources(3.0, 0, 0)


def books() -> tuple[Ledger, Failures]:
    running = [RunningJob("r1", "a", THREE, "p"), RunningJob("r2", "a", THREE, "q", team="T")]
    ledger = Ledger.of(POOLS, layout_of(POOLS), running, {}, SharedReasons())
    rooms = ledger.rooms
    return ledger, Failures(ledger, {("a", "local"): [rooms["p"], rooms["q"]]}, 600.0)


waiting = partial(factories.waiting, cpus=2.0, memory_mb=0)


def failed(ledger: Ledger, failures: Failures, job: PendingJob) -> PendingReason:
    reason = ledger.fits(job, ledger.rooms["p"])
    assert reason is not None
    failures.failed_at(job, job.shape, reason, ledger.rooms["p"], now=100.0)
    return reason


def test_a_shape_fails_alike_until_something_changes() -> None:
    ledger, failures = books()
    reason = failed(ledger, failures, waiting("w1"))
    assert "1 of 4 CPUs free" in reason.message
    assert failures.known(waiting("w2"), waiting("w2").shape, 100.0) is reason
    assert failures.known(waiting("w3", cpus=1.0), waiting("w3", cpus=1.0).shape, 100.0) \
        is None  # another shape
    ledger.admit(waiting("small", cpus=0.5), ledger.rooms["q"])
    assert failures.known(waiting("w4"), waiting("w4").shape, 100.0) is None


def test_after_holds_alone_only_the_first_pool_is_asked_again() -> None:
    ledger, failures = books()
    reason = failed(ledger, failures, waiting("w1"))
    ledger.hold(ledger.rooms["q"], waiting("elsewhere", cpus=1.0))  # not its first pool
    assert failures.known(waiting("w2"), waiting("w2").shape, 100.0) is reason
    ledger.hold(ledger.rooms["p"], waiting("there", cpus=1.0))  # its first pool: 0 CPUs left
    now = failures.known(waiting("w3"), waiting("w3").shape, 100.0)
    assert now is not None and now.code == ReasonCode.POOL_CAPACITY
    assert "0 of 4 CPUs free" in now.message


def test_a_long_waiter_of_a_known_shape_holds_room_as_the_first_did() -> None:
    ledger, failures = books()
    failed(ledger, failures, waiting("w1", submitted_at=-1000.0))  # waited over 600 s
    p = ledger.rooms["p"]
    assert p.held_jobs == 1
    assert failures.known(waiting("w2", submitted_at=-1000.0), waiting("w2").shape, 100.0)
    assert p.held_jobs == 2 and p.held == Resources(4.0, 0, 0)


def test_a_backlog_of_alike_long_waiters_is_checked_in_full_once() -> None:
    # Nothing fits, and each job, waiting long, holds room from the next: the first takes
    # every check, the others only a look at their first pool.
    policy = cfg.Policy(pools={"p": cfg.Pool(PoolCapacity("p", max_jobs=100,
                                                          gpu_ids=("0", "1")))},
                        queues={"a": cfg.Queue("a", pools=("p",))}, max_running=100)
    running = [RunningJob("r", "a", Resources(1.0, 0, 2), "p", ("0", "1"))]
    pending = [PendingJob(f"w{i}", "a", 0, i, Resources(1.0, 0, 1), submitted_at=-1000.0)
               for i in range(200)]
    calls = []
    original = QueuePolicy._try

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return original(self, *args, **kwargs)

    snapshot = Snapshot(pending, running, now=0.0)
    QueuePolicy._try = counted  # type: ignore[method-assign]
    try:
        decided = QueuePolicy(policy).schedule(snapshot)
    finally:
        QueuePolicy._try = original  # type: ignore[method-assign]
    assert len(calls) == 1 and decided.admit == ()
    assert dict(decided.pending.items()) == \
        dict(_decide_without_memo(policy, snapshot).pending.items())
