"""Preemption: the one rule for who may be stopped, reclaiming borrowed quota for its owner,
and stopping a team's more-served jobs for its less-served one."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from tests import factories
from tests.scheduler.builders import job, policy, quota_policy, run
from trainyard.domain import policy as cfg
from trainyard.domain.policy import Quota, Team
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler.attained import FIRST_LEVEL_S
from trainyard.scheduler.model import Decisions, PendingJob, RunningJob, Snapshot
from trainyard.scheduler.preemption import (
    admissions_settle,
    gives_back,
    preemptible,
    preemptible_from,
    reclaim_victim,
    reclaims_for,
    service_group,
)
from trainyard.scheduler.queues import QueuePolicy
from trainyard.scheduler.quotas import pool_quotas

# --- who may be preempted -------------------------------------------------------------------

RULES = cfg.Policy(pools={}, queues={"open": cfg.Queue("open", pools=()),
                                     "high": cfg.Queue("high", pools=(), priority=1),
                                     "kept": cfg.Queue("kept", pools=(), preemptible=False)},
                   min_runtime_s=300.0)


def test_preemptible_is_past_the_minimum_runtime_in_a_queue_that_allows_it() -> None:
    run_ = RunningJob("r", "open", started_at=1000.0)
    assert not preemptible(run_, RULES, 1299.0) and preemptible(run_, RULES, 1300.0)
    assert not preemptible(replace(run_, preempting=True), RULES, 5000.0)  # stopping already
    assert not preemptible(replace(run_, queue="high"), RULES, 5000.0)  # priority > 0
    assert not preemptible(replace(run_, queue="kept"), RULES, 5000.0)
    assert not preemptible(replace(run_, queue="gone"), RULES, 5000.0)  # no longer declared


def test_a_job_is_ranked_by_service_among_its_teams_or_else_its_queues() -> None:
    assert service_group(RunningJob("r", "open", team="A")) == "A"
    assert service_group(PendingJob("j", "open", 0, 0)) == "/open"


def test_preemptible_from_is_the_first_time_the_rule_allows_it() -> None:
    # 0.1 + 0.2 is a rounding past 0.3: the first time is where the rule, to the float, agrees.
    run_ = RunningJob("r", "open", started_at=0.1)
    fast = replace(RULES, min_runtime_s=0.2)
    at = preemptible_from(run_, fast)
    assert at is not None and preemptible(run_, fast, at)
    assert not preemptible(run_, fast, math.nextafter(at, -math.inf))
    assert preemptible_from(replace(run_, queue="kept"), fast) is None
    assert preemptible_from(replace(run_, preempting=True), fast) is None
    assert preemptible_from(RunningJob("r", "open", started_at=50.0), RULES) == 350.0


# --- reclaim: borrowed quota back to its owner -----------------------------------------------


def test_a_reclaim_stops_jobs_of_teams_holding_more_than_they_own_for_jobs_within_theirs(
) -> None:
    quotas = pool_quotas(quota_policy(), "gpu")  # vision and nlp own 4 GPUs each
    assert quotas is not None
    assert not gives_back("vision", quotas, Resources(0.0, 0, 4))  # holds what it owns
    assert gives_back("vision", quotas, Resources(0.0, 0, 5))  # one borrowed
    assert gives_back("", quotas, Resources())  # no team: owns nothing here
    assert gives_back("other", quotas, Resources())  # a team without quota here
    # Only quota a team owns is reclaimed for it: the job must fit within it.
    assert reclaims_for("nlp", quotas, Resources(0.0, 0, 2), Resources(0.0, 0, 2))
    assert not reclaims_for("nlp", quotas, Resources(0.0, 0, 3), Resources(0.0, 0, 2))
    assert not reclaims_for("other", quotas, Resources(), Resources(0.0, 0, 1))


def test_the_replay_asks_of_a_run_whether_a_reclaim_may_stop_it_now() -> None:
    victim = reclaim_victim(quota_policy())
    ann = RunningJob("r", "a", Resources(0.0, 0, 1), pool="gpu", team="vision")
    borrowing = {("vision", "gpu"): Resources(0.0, 0, 6), ("nlp", "gpu"): Resources(0.0, 0, 2)}
    one_gpu = Resources(0.0, 0, 1)
    assert victim(ann, borrowing, {"nlp": one_gpu})
    # Its team holds no more than it owns: nothing to give back.
    assert not victim(ann, {("vision", "gpu"): Resources(0.0, 0, 4)}, {"nlp": one_gpu})
    # No other team waits, or the one waiting asks more than its own quota leaves it.
    assert not victim(ann, borrowing, {"vision": one_gpu, "": one_gpu})
    assert not victim(ann, borrowing, {"nlp": Resources(0.0, 0, 3)})
    # No team holds quota in the cpu pool: nothing there is ever taken back.
    assert not victim(replace(ann, pool="cpu"), {("vision", "cpu"): Resources(8.0, 0, 0)},
                      {"nlp": Resources(1.0, 0, 0)})


def test_the_replay_asks_whether_a_pass_that_admitted_jobs_leaves_the_next_one_as_it_was(
) -> None:
    settles = admissions_settle(quota_policy())  # the default minimum runtime: 5 minutes
    started = [RunningJob("a", "a", Resources(0.0, 0, 2), pool="gpu", team="vision")]

    def gpus(held: int) -> dict[tuple[str, str], Resources]:
        return {("vision", "gpu"): Resources(0.0, 0, held)}

    # vision owns 4: holding 4 with them, it gives nothing back either way.
    assert settles(started, gpus(2), gpus(4))
    # Beyond 4 already before them: its older jobs could be reclaimed already.
    assert settles(started, gpus(5), gpus(7))
    # They take it beyond its quota: a job tried before them may now reclaim its older ones.
    assert not settles(started, gpus(3), gpus(5))
    assert not settles(started, {}, gpus(5))
    # No quotas in the pool, or a job of no team: nothing a reclaim may stop changes.
    assert settles([replace(started[0], pool="cpu")], {}, {("vision", "cpu"): Resources()})
    assert settles([replace(started[0], team="")], {}, {})
    # Without a minimum runtime the admitted jobs may be stopped at once by the next pass.
    assert not admissions_settle(replace(quota_policy(), min_runtime_s=0.0))(
        started, gpus(2), gpus(4))


def test_borrowed_quota_is_reclaimed_by_preempting_the_newest_borrowers() -> None:
    borrowers = [RunningJob(f"v{i}", "a", Resources(1, 1024, 1), "gpu", (f"g{i}",),
                            team="vision", started_at=float(i)) for i in range(8)]
    p = policy(teams={"vision": Team("vision", frozenset(), {"gpu": Quota(gpus=4,
                                                                            borrow_gpus=4)}),
                      "nlp": Team("nlp", frozenset(), {"gpu": Quota(gpus=4)})},
               min_runtime_s=5.0)
    decided = run(p, [job(1, "urgent", gpus=2, team="nlp")], borrowers, now=100.0)
    assert decided.admit == ()
    assert set(decided.preempt) == {"v7", "v6"}  # the two started last
    assert decided.pending["j1"].code == ReasonCode.RECLAIMING
    # Jobs younger than the minimum runtime (started after t=3) are left alone.
    young = run(p, [job(1, "urgent", gpus=2, team="nlp")], borrowers, now=8.0)
    assert set(young.preempt) == {"v3", "v2"}
    # While they stop, nobody else is preempted for the same claim.
    stopping = [r if r.job_id not in ("v7", "v6") else
                RunningJob(r.job_id, r.queue, r.resources, r.pool, r.gpu_ids, r.team,
                           r.started_at, preempting=True) for r in borrowers]
    again = run(p, [job(1, "urgent", gpus=2, team="nlp")], stopping, now=100.0)
    assert again.preempt == {} and again.pending["j1"].code == ReasonCode.RECLAIMING


def test_no_preemption_beyond_a_teams_own_quota_or_from_protected_queues() -> None:
    borrowers = [RunningJob(f"v{i}", "urgent", Resources(1, 1024, 1), "gpu", (f"g{i}",),
                            team="vision", started_at=0.0) for i in range(8)]
    p = policy(teams={"vision": Team("vision", frozenset(), {"gpu": Quota(gpus=4,
                                                                            borrow_gpus=4)}),
                      "nlp": Team("nlp", frozenset(), {"gpu": Quota(gpus=4)})},
               min_runtime_s=0.0)
    protected = run(p, [job(1, "a", gpus=1, team="nlp")], borrowers, now=100.0)
    assert protected.preempt == {}  # queue "urgent" (priority 10) is not preemptible
    over = run(p, [job(1, "a", gpus=5, team="nlp")],
               [RunningJob("v", "a", Resources(1, 1024, 8), "gpu",
                           tuple(f"g{i}" for i in range(8)), team="vision")], now=100.0)
    assert over.preempt == {}  # 5 GPUs is beyond nlp's 4 of quota: nothing is reclaimed


# --- demotion: a team's more-served jobs for its less-served one -----------------------------

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
    return factories.running(job_id, queue, cpus=ONE.cpus, memory_mb=ONE.memory_mb,
                             gpus=ONE.gpus, pool="p", gpu_ids=(gpu,), team=team,
                             started_at=NOW - ran_s, attained=earlier_s)


def schedule(pending: list[PendingJob], active: list[RunningJob],
             policy: cfg.Policy = POLICY, reclaiming: dict[str, str] | None = None
             ) -> Decisions:
    return QueuePolicy(policy).schedule(Snapshot(pending, active, now=NOW,
                                                 reclaiming=reclaiming or {}))


def test_a_new_job_preempts_its_teams_most_served_job_to_fit() -> None:
    active = [running("long", "A", 2 * HOUR, gpu="0"),       # level 1
              running("longer", "A", HOUR, 7 * HOUR, gpu="1"),  # level 3
              running("b1", "B", 9 * HOUR, gpu="2"), running("b2", "B", 9 * HOUR, gpu="3")]
    new = PendingJob("new", "a", 0, 10, ONE, team="A", submitted_at=NOW)
    first = schedule([new], active)
    assert list(first.preempt) == ["longer"]  # the most served one, and only one
    assert "has run less" in first.preempt["longer"]
    assert first.pending["new"].code == ReasonCode.RECLAIMING
    assert "that have run longer" in first.pending["new"].message
    assert first.reclaiming == {"new": "p"}
    # It stopped: the room is the new job's, not the requeued one's ahead of it.
    requeued = PendingJob("longer", "a", 0, 1, ONE, team="A", attained=8 * HOUR)
    second = schedule([requeued, new], [a for a in active if a.job_id != "longer"],
                      reclaiming=first.reclaiming)
    assert second.admit == ("new",) and second.preempt == {}
    assert second.pending["longer"].code == ReasonCode.TEAM_QUOTA


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
    assert decided.pending["new"].code == ReasonCode.RECLAIMING
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
    assert decided.preempt == {} and decided.pending["new"].code == ReasonCode.TEAM_QUOTA


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
    assert decided.pending["new"].code != ReasonCode.RECLAIMING or case == "already stopping"


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
