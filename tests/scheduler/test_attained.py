"""Attained service: its levels, and what they decide in QueuePolicy."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from trainyard.domain import policy as cfg
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler import queues as queue_module
from trainyard.scheduler.attained import (
    FIRST_LEVEL_S,
    attained_by,
    held_service,
    level,
    next_threshold_at,
    rate,
)
from trainyard.scheduler.backlog import Backlog
from trainyard.scheduler.model import Decisions, PendingJob, RunningJob, Snapshot
from trainyard.scheduler.queues import RECLAIMING, TEAM_QUOTA, QueuePolicy

HOUR = FIRST_LEVEL_S
ONE = Resources(1.0, 0, 1)
POLICY = cfg.Policy(
    pools={"p": cfg.Pool(PoolCapacity("p", max_jobs=10, gpu_ids=("0", "1", "2", "3")))},
    queues={"a": cfg.Queue("a", pools=("p",)), "b": cfg.Queue("b", pools=("p",)),
            "keep": cfg.Queue("keep", pools=("p",), preemptible=False),
            "vip": cfg.Queue("vip", pools=("p",), priority=1, preemptible=True)},
    teams={"A": cfg.Team("A", quotas={"p": cfg.Quota(gpus=2, borrow_gpus=2)}),
           "B": cfg.Team("B", quotas={"p": cfg.Quota(gpus=2, borrow_gpus=2)})},
    max_running=10, reserve_after_s=0, min_runtime_s=300)
NOW = 10 * HOUR


def running(job_id: str, team: str, ran_s: float, earlier_s: float = 0.0, queue: str = "a",
            gpu: str = "0") -> RunningJob:
    return RunningJob(job_id, queue, ONE, "p", (gpu,), team=team, started_at=NOW - ran_s,
                      attained=earlier_s)


def schedule(pending: list[PendingJob], active: list[RunningJob],
             policy: cfg.Policy = POLICY, reclaiming: dict[str, str] | None = None
             ) -> Decisions:
    return QueuePolicy(policy).schedule(Snapshot(pending, active, max_concurrent=10, now=NOW,
                                                 reclaiming=reclaiming or {}))


def test_levels_double_from_the_first_threshold() -> None:
    assert [level(x) for x in (0, HOUR - 1, HOUR, 2 * HOUR - 1, 2 * HOUR, 4 * HOUR)] == \
        [0, 0, 1, 1, 2, 3]
    assert rate(Resources(4.0, 0, 2)) == 2.0 and rate(Resources(4.0, 0, 0)) == 4.0
    assert held_service(Resources(4.0, 0, 2), 10.0) == 20.0
    run = RunningJob("r", "a", ONE, "p", ("0",), started_at=NOW - 2 * HOUR, attained=HOUR)
    assert run.service_level(NOW) == 2 and run.service_level(NOW - 2 * HOUR) == 1
    assert attained_by(100.0, Resources(1.0, 0, 2), 10.0, 60.0) == 200.0
    assert attained_by(100.0, Resources(1.0, 0, 2), 60.0, 10.0) == 100.0  # clock behind
    # 2 GPUs from 0 GPU-s pass 3600 after 1800 s; from 3600, 7200 after another 1800 s.
    assert next_threshold_at(0.0, Resources(1.0, 0, 2), 100.0) == 1900.0
    assert next_threshold_at(HOUR, Resources(1.0, 0, 2), 0.0) == 1800.0
    assert next_threshold_at(0.0, Resources(0.0, 0, 0), 0.0) is None


def test_a_requeued_job_that_ran_longer_waits_behind_new_jobs_of_its_priority() -> None:
    older = PendingJob("old", "a", 0, 1, ONE, attained=3 * HOUR)
    newer = PendingJob("new", "a", 0, 2, ONE)
    urgent = PendingJob("hot", "a", 5, 3, ONE, attained=50 * HOUR)
    assert [j.job_id for j in Backlog.of([older, newer, urgent]).queues["a"]] == \
        ["hot", "new", "old"]  # priority first, then least attained, then submit order
    backlog = Backlog()
    for job in (older, newer, urgent):
        backlog.add(job)
    assert [j.job_id for j in backlog.queues["a"]] == ["hot", "new", "old"]
    # Past level 0, fewer GPUs first; at level 0 (new jobs), submit order whatever the size.
    wide = PendingJob("wide", "a", 0, 0, Resources(1.0, 0, 8), attained=3 * HOUR)
    big_new = PendingJob("big", "a", 0, 0, Resources(1.0, 0, 8))
    assert [j.job_id for j in Backlog.of([older, wide, newer, big_new]).queues["a"]] == \
        ["big", "new", "old", "wide"]


def test_a_new_job_preempts_its_teams_most_served_job_to_fit() -> None:
    active = [running("long", "A", 2 * HOUR, gpu="0"),       # level 1
              running("longer", "A", HOUR, 7 * HOUR, gpu="1"),  # level 3
              running("b1", "B", 9 * HOUR, gpu="2"), running("b2", "B", 9 * HOUR, gpu="3")]
    new = PendingJob("new", "a", 0, 10, ONE, team="A", submitted_at=NOW)
    first = schedule([new], active)
    assert list(first.preempt) == ["longer"]  # the most served one, and only one
    assert "has run less" in first.preempt["longer"]
    assert first.pending["new"].code == RECLAIMING
    assert "that have run longer" in first.pending["new"].message
    assert first.reclaiming == {"new": "p"}
    # It stopped: the room is the new job's, not the requeued one's ahead of it.
    requeued = PendingJob("longer", "a", 0, 1, ONE, team="A", attained=8 * HOUR)
    second = schedule([requeued, new], [a for a in active if a.job_id != "longer"],
                      reclaiming=first.reclaiming)
    assert second.admit == ("new",) and second.preempt == {}
    assert second.pending["longer"].code == TEAM_QUOTA


def test_while_its_teams_jobs_stop_for_it_a_job_preempts_no_more() -> None:
    # As the live tracker sees it: the pass before asked "longer" to stop for "new"; it
    # still runs (stopping), and "long", of level 1, could be preempted too.
    active = [running("long", "A", 2 * HOUR, gpu="0"),
              replace(running("longer", "A", HOUR, 7 * HOUR, gpu="1"), preempting=True),
              running("b1", "B", 9 * HOUR, gpu="2"), running("b2", "B", 9 * HOUR, gpu="3")]
    new = PendingJob("new", "a", 0, 10, ONE, team="A", submitted_at=NOW)
    strict = replace(POLICY, teams={t: cfg.Team(t, quotas={"p": cfg.Quota(gpus=2)})
                                    for t in "AB"})
    decided = schedule([new], active, strict, reclaiming={"new": "p"})
    assert decided.preempt == {} and decided.reclaiming == {"new": "p"}
    assert decided.pending["new"].code == RECLAIMING
    assert "are stopping" in decided.pending["new"].message
    # A second new job of the team needs a room of its own: "long" goes for it.
    other = PendingJob("other", "a", 0, 11, ONE, team="A", submitted_at=NOW)
    decided = schedule([new, other], active, strict, reclaiming={"new": "p"})
    assert list(decided.preempt) == ["long"]
    assert decided.reclaiming == {"new": "p", "other": "p"}


def test_a_job_goes_where_there_is_room_before_anything_is_preempted_for_it() -> None:
    two_pools = replace(POLICY, pools={
        "p": cfg.Pool(PoolCapacity("p", max_jobs=10, gpu_ids=("0",))),
        "q": cfg.Pool(PoolCapacity("q", max_jobs=10, gpu_ids=("9",)))},
        queues={"a": cfg.Queue("a", pools=("p", "q"))}, teams={})
    long = RunningJob("long", "a", ONE, "p", ("0",), started_at=NOW - 5 * HOUR)
    new = PendingJob("new", "a", 0, 10, ONE, submitted_at=NOW)
    decided = schedule([new], [long], two_pools)
    assert decided.admit == ("new",) and decided.pools == {"new": "q"}
    assert decided.preempt == {}


def test_preemption_for_service_stops_only_jobs_that_free_what_is_needed() -> None:
    gpus_and_cpus = replace(POLICY, pools={"p": cfg.Pool(PoolCapacity(
        "p", max_jobs=10, cpus=8.0, gpu_ids=("0",)))}, teams={})
    etl = RunningJob("etl", "a", Resources(4.0, 0, 0), "p", (), started_at=NOW - 4 * HOUR)
    old = RunningJob("old", "a", Resources(1.0, 0, 1), "p", ("0",),
                     started_at=NOW - 1.5 * HOUR)
    new = PendingJob("new", "a", 0, 10, Resources(1.0, 0, 1), submitted_at=NOW)
    decided = schedule([new], [etl, old], gpus_and_cpus)
    # etl (4 CPU-hours a hour, level 4) ranks first, but frees no GPU: only old goes.
    assert list(decided.preempt) == ["old"]


def test_a_policy_without_service_levels_preempts_nothing_for_service() -> None:
    active = [running("long", "A", 2 * HOUR, gpu="0"), running("longer", "A", 8 * HOUR,
                                                                gpu="1"),
              running("b1", "B", 9 * HOUR, gpu="2"), running("b2", "B", 9 * HOUR, gpu="3")]
    new = PendingJob("new", "a", 0, 10, ONE, team="A", submitted_at=NOW)
    plain = replace(POLICY, service_levels=False)
    assert not QueuePolicy(plain).orders_by_service and QueuePolicy(POLICY).orders_by_service
    decided = schedule([new], active, plain)
    assert decided.preempt == {} and decided.pending["new"].code == TEAM_QUOTA


@pytest.mark.parametrize("case", ["other team", "same level", "too young", "not preemptible",
                                  "already stopping", "higher queue", "higher job priority"])
def test_no_preemption_for_service_where_it_is_not_allowed(case: str) -> None:
    victim = running("v", "A", 5 * HOUR, gpu="0")
    new = PendingJob("new", "a", 0, 10, ONE, team="A", submitted_at=NOW)
    if case == "other team":
        victim = replace(victim, team="B")
    elif case == "same level":
        new = replace(new, attained=4 * HOUR)  # level 3, as the victim's 5 hours
    elif case == "too young":
        victim = replace(victim, started_at=NOW - 200, attained=5 * HOUR)
    elif case == "not preemptible":
        victim = replace(victim, queue="keep")
    elif case == "higher queue":
        victim = replace(victim, queue="vip")
    elif case == "higher job priority":
        victim = replace(victim, priority=1)
    else:
        victim = replace(victim, preempting=True)
    # Team A's own two GPUs are taken (the victim and a level-0 job); B holds its own two.
    active = [victim, running("a0", "A", 100, gpu="1"),
              running("b1", "B", 100, gpu="2"), running("b2", "B", 100, gpu="3")]
    if case == "other team":  # A's two are both level 0; the long job is B's own
        active = [victim, running("a0", "A", 100, gpu="1"), running("a1", "A", 100, gpu="2"),
                  running("b1", "B", 100, gpu="3")]
    decided = schedule([new], active)
    assert decided.preempt == {} and decided.admit == ()
    assert decided.pending["new"].code != RECLAIMING or case == "already stopping"


def test_preempting_for_service_makes_room_within_the_teams_quota() -> None:
    # Team A uses its 2 GPUs with two long jobs; B's two are idle, so A borrows one and
    # preempts nothing.
    active = [running("l1", "A", 5 * HOUR, gpu="0"), running("l2", "A", 5 * HOUR, gpu="1")]
    new = PendingJob("new", "a", 0, 10, ONE, team="A", submitted_at=NOW)
    assert schedule([new], active).admit == ("new",)
    # Without borrowing, the quota is the limit: the most served (then newest) job goes.
    strict = replace(POLICY, teams={"A": cfg.Team("A", quotas={"p": cfg.Quota(gpus=2)})})
    active = [running("l1", "A", 5 * HOUR, gpu="0"), running("l2", "A", 4 * HOUR, gpu="1")]
    decided = schedule([new], active, strict)
    assert list(decided.preempt) == ["l2"] and decided.reclaiming == {"new": "p"}


def _decide_without_memo(policy: cfg.Policy, snapshot: Snapshot) -> Decisions:
    """QueuePolicy with its memos (failed shapes, and preemptions for service that could
    not make room) forgetting everything."""

    class Forgetful(dict):  # type: ignore[type-arg]
        def get(self, key, default=None):  # type: ignore[no-untyped-def]
            return default

    original = queue_module._Pass.__init__

    def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        original(self, *args, **kwargs)
        self.failed = Forgetful()
        self.cannot_demote = Forgetful()

    queue_module._Pass.__init__ = init  # type: ignore[method-assign]
    try:
        return QueuePolicy(policy).schedule(snapshot)
    finally:
        queue_module._Pass.__init__ = original  # type: ignore[method-assign]


def test_remembering_failures_changes_no_decision() -> None:
    rng = random.Random(7)
    gpus = tuple(str(i) for i in range(8))
    policy = replace(POLICY, pools={"p": cfg.Pool(PoolCapacity("p", max_jobs=12,
                                                                gpu_ids=gpus))},
                     teams={t: cfg.Team(t, quotas={"p": cfg.Quota(gpus=3, borrow_gpus=2)})
                            for t in "AB"}, reserve_after_s=600)
    preempted = 0
    for _ in range(400):
        taken = rng.sample(gpus, rng.randint(0, 8))
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
        snapshot = Snapshot(pending, active, max_concurrent=12, now=NOW, reclaiming=claims)
        mine, plain = QueuePolicy(policy).schedule(snapshot), \
            _decide_without_memo(policy, snapshot)
        assert (mine.admit, mine.preempt, mine.reclaiming, mine.gpu_ids) == \
            (plain.admit, plain.preempt, plain.reclaiming, plain.gpu_ids)
        assert dict(mine.pending.items()) == dict(plain.pending.items())
        preempted += len(mine.preempt)
    assert preempted > 50  # the snapshots do make it preempt, for service and for quota
