"""The declared-policy scheduler: each rule, then invariants over random workloads."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainyard.domain.policy import Policy, Pool, Queue, Quota, Team
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler.fifo import GLOBAL_CONCURRENCY_LIMIT
from trainyard.scheduler.model import Decisions, PendingJob, RunningJob, Snapshot
from trainyard.scheduler.queues import (
    NO_POOL,
    NO_QUOTA,
    NO_TEAM,
    QUEUE_ACCESS,
    QUEUE_LIMIT,
    RESERVED,
    TEAM_QUOTA,
    QueuePolicy,
    decayed_usage,
)

GPU = Pool(PoolCapacity("gpu", max_jobs=16, cpus=32, memory_mb=65536,
                        gpu_ids=tuple(f"g{i}" for i in range(8))), executor="local")
CPU = Pool(PoolCapacity("cpu", max_jobs=8, cpus=8, memory_mb=16384), executor="local")
BOX = Pool(PoolCapacity("box", max_jobs=4, cpus=4, memory_mb=8192), executor="docker")


def policy(**overrides: object) -> Policy:
    base: dict[str, object] = {
        "pools": {"gpu": GPU, "cpu": CPU, "box": BOX},
        "queues": {
            "urgent": Queue("urgent", pools=("gpu", "cpu"), priority=10),
            "a": Queue("a", pools=("gpu", "cpu")),
            "b": Queue("b", pools=("gpu", "cpu")),
            "box": Queue("box", pools=("box",)),
        },
        "teams": {},
        "max_running": 100,
        "reserve_after_s": 600.0,
    }
    base.update(overrides)
    return Policy(**base)  # type: ignore[arg-type]


def job(seq: int, queue: str = "a", *, gpus: int = 0, cpus: float = 1.0, priority: int = 0,
        team: str = "", owner: str = "u", pool: str = "local",
        submitted_at: float = 0.0) -> PendingJob:
    return PendingJob(f"j{seq}", queue, priority, seq, Resources(cpus, 1024, gpus), pool,
                      owner, team, submitted_at)


def run(p: Policy, pending: list[PendingJob], running: list[RunningJob] | None = None,
        now: float = 0.0, usage: dict[str, float] | None = None) -> Decisions:
    return QueuePolicy(p).schedule(Snapshot(pending, running or [], max_concurrent=0, now=now,
                                            usage=usage or {}))


def test_higher_priority_queues_go_first() -> None:
    p = policy(max_running=1)
    decided = run(p, [job(1, "a"), job(2, "urgent")])
    assert decided.admit == ("j2",)
    assert decided.pending["j1"].code == GLOBAL_CONCURRENCY_LIMIT


def test_inside_a_queue_job_priority_then_submit_order() -> None:
    decided = run(policy(max_running=2), [job(1), job(2, priority=5), job(3)])
    assert decided.admit == ("j2", "j1")


def test_queues_of_equal_priority_take_turns() -> None:
    pending = [job(i, "a") for i in range(1, 5)] + [job(i, "b") for i in range(5, 9)]
    decided = run(policy(max_running=4), pending)
    assert Counter(j[:2] for j in decided.admit) == Counter({"j1": 1, "j2": 1, "j5": 1,
                                                             "j6": 1})


def test_fair_share_favours_the_queue_that_used_less() -> None:
    pending = [job(i, "a") for i in range(1, 5)] + [job(i, "b") for i in range(5, 9)]
    decided = run(policy(max_running=3), pending, usage={"a": 10.0, "b": 0.0})
    assert sorted(decided.admit) == ["j5", "j6", "j7"]


def test_a_queue_limit_holds_only_that_queue() -> None:
    p = policy(queues={**policy().queues, "a": Queue("a", pools=("cpu",), max_running=1)})
    decided = run(p, [job(1, "a"), job(2, "a"), job(3, "b")])
    assert set(decided.admit) == {"j1", "j3"}
    assert decided.pending["j2"].code == QUEUE_LIMIT
    assert decided.pending["j2"].message == "queue 'a' is at its limit of 1 running jobs"


def test_a_big_job_blocks_only_what_it_must_until_it_has_waited_long() -> None:
    busy = [RunningJob(f"r{i}", "a", Resources(1, 1024, 1), "gpu", (f"g{i}",))
            for i in range(6)]
    pending = [job(1, gpus=4), job(2, gpus=1), job(3, gpus=1)]
    fresh = run(policy(), pending, busy, now=10.0)
    assert fresh.admit == ("j2", "j3")  # small jobs fill in behind the big one
    assert fresh.pending["j1"].message == "waiting for 4 GPUs to be free at once in pool 'gpu'"
    old = run(policy(), pending, busy, now=10_000.0)
    assert old.admit == ()  # the big job has waited too long: its GPUs are held for it
    assert old.pending["j2"].code == RESERVED


def test_pools_are_chosen_by_the_kind_of_job_and_the_queue() -> None:
    decided = run(policy(), [job(1, "box", pool="docker"), job(2, "a", pool="docker")])
    assert decided.admit == ("j1",) and decided.pools == {"j1": "box"}
    assert decided.pending["j2"].code == NO_POOL


def test_a_job_spills_to_the_queues_next_pool() -> None:
    busy = [RunningJob(f"r{i}", "a", Resources(2, 1024, 0), "gpu") for i in range(16)]
    decided = run(policy(), [job(1)], busy)
    assert decided.pools == {"j1": "cpu"}


def test_changed_access_rules_stop_jobs_already_queued() -> None:
    p = policy(queues={**policy().queues, "a": Queue("a", pools=("cpu",),
                                                     teams=frozenset({"vision"}))})
    decided = run(p, [job(1, owner="bob", team="nlp"), job(2, owner="ann", team="vision")])
    assert decided.admit == ("j2",)
    assert decided.pending["j1"].code == QUEUE_ACCESS


def quota_policy() -> Policy:
    teams = {
        "vision": Team("vision", frozenset({"ann"}),
                       {"gpu": Quota(gpus=4, borrow_gpus=4)}),
        "nlp": Team("nlp", frozenset({"bob"}), {"gpu": Quota(gpus=4, borrow_gpus=0)}),
    }
    return policy(teams=teams)


def test_a_team_uses_its_quota_then_borrows_what_others_leave_idle() -> None:
    decided = run(quota_policy(), [job(i, gpus=2, team="vision") for i in range(1, 6)])
    assert len(decided.admit) == 4  # 4 of its own GPUs and 4 borrowed from idle nlp
    assert decided.pending["j5"].code == TEAM_QUOTA
    assert "team 'vision' has used its 4 GPUs of quota in pool 'gpu'" in \
        decided.pending["j5"].message


def test_no_borrowing_beyond_the_limit_or_from_quota_in_use() -> None:
    nlp_busy = [RunningJob("r", "a", Resources(1, 1024, 4), "gpu", ("g0", "g1", "g2", "g3"),
                           team="nlp")]
    decided = run(quota_policy(), [job(1, gpus=4, team="vision"),
                                   job(2, gpus=1, team="vision")], nlp_busy)
    assert decided.admit == ("j1",)
    assert "no idle quota can be borrowed" in decided.pending["j2"].message
    limited = run(quota_policy(), [job(1, gpus=5, team="nlp")])
    assert limited.pending["j1"].code == TEAM_QUOTA


# --- invariants over random workloads ---------------------------------------------------

QUEUES = ("urgent", "a", "b", "box")
jobs_strategy = st.lists(
    st.tuples(st.sampled_from(QUEUES), st.integers(0, 3), st.floats(0.5, 4.0),
              st.integers(-2, 2), st.sampled_from(("vision", "nlp", "")),
              st.sampled_from(("local", "docker"))),
    max_size=40)
running_strategy = st.lists(
    st.tuples(st.sampled_from(QUEUES), st.integers(0, 2), st.sampled_from(("gpu", "cpu", "box")),
              st.sampled_from(("vision", "nlp", ""))),
    max_size=10)


def build(raw_jobs: list[tuple[str, int, float, int, str, str]],
          raw_running: list[tuple[str, int, str, str]]) -> tuple[list[PendingJob],
                                                                  list[RunningJob]]:
    pending = [PendingJob(f"j{i}", q, prio, i, Resources(cpus, 512, gpus), kind,
                          "ann" if team == "vision" else "bob", team, 0.0)
               for i, (q, gpus, cpus, prio, team, kind) in enumerate(raw_jobs)]
    running: list[RunningJob] = []
    next_gpu = 0
    for i, (q, gpus, pool, team) in enumerate(raw_running):
        gpus = gpus if pool == "gpu" else 0
        ids = tuple(f"g{next_gpu + k}" for k in range(gpus))
        if next_gpu + gpus > 8:
            continue
        next_gpu += gpus
        running.append(RunningJob(f"r{i}", q, Resources(1.0, 512, gpus), pool, ids, team))
    return pending, running


@settings(max_examples=150, deadline=None)
@given(jobs_strategy, running_strategy, st.integers(1, 12))
def test_invariants(raw_jobs: list[tuple[str, int, float, int, str, str]],
                    raw_running: list[tuple[str, int, str, str]], max_running: int) -> None:
    p = policy(max_running=max_running, teams=quota_policy().teams,
               queues={**policy().queues,
                       "b": Queue("b", pools=("gpu", "cpu"), max_running=2,
                                  teams=frozenset({"vision"}))})
    pending, running = build(raw_jobs, raw_running)
    decided = run(p, pending, running)
    by_id = {j.job_id: j for j in pending}
    # Every waiting job is admitted or has a reason, never both.
    assert set(decided.admit) | set(decided.pending) == set(by_id)
    assert not set(decided.admit) & set(decided.pending)
    # Global and queue limits hold.
    assert len(running) + len(decided.admit) <= max(max_running, len(running))
    in_b = sum(1 for r in running if r.queue == "b") + \
        sum(1 for j in decided.admit if by_id[j].queue == "b")
    assert in_b <= max(2, sum(1 for r in running if r.queue == "b"))
    # ACLs are never bypassed.
    assert all(by_id[j].team == "vision" for j in decided.admit if by_id[j].queue == "b")
    # No GPU is given twice, and each admitted job gets exactly what it asked.
    given_ids = [g for ids in decided.gpu_ids.values() for g in ids]
    running_ids = [g for r in running for g in r.gpu_ids]
    assert len(given_ids) == len(set(given_ids)) and not set(given_ids) & set(running_ids)
    for job_id in decided.admit:
        assert len(decided.gpu_ids.get(job_id, ())) == by_id[job_id].resources.gpus
    # Pool capacity holds.
    for name, pool in p.pools.items():
        placed = [by_id[j].resources for j in decided.admit if decided.pools[j] == name]
        users = [r.resources for r in running if r.pool == name] + placed
        cap = pool.capacity
        assert len(placed) == 0 or len(users) <= cap.max_jobs
        if placed:
            assert cap.cpus is None or sum(r.cpus for r in users) <= cap.cpus + 1e-9 or \
                sum(r.cpus for r in users) - sum(r.cpus for r in placed) > cap.cpus
    # Team quotas: nobody goes past nominal plus borrowing limit by admission.
    for team, spec in p.teams.items():
        quota = spec.quotas["gpu"]
        before = sum(r.resources.gpus for r in running if r.team == team and r.pool == "gpu")
        added = sum(by_id[j].resources.gpus for j in decided.admit
                    if by_id[j].team == team and decided.pools[j] == "gpu")
        if added:
            assert before + added <= quota.gpus + quota.borrow_gpus


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6))
def test_equal_priority_queues_alternate(in_a: int, in_b: int) -> None:
    pending = [job(i, "a") for i in range(in_a)] + [job(100 + i, "b") for i in range(in_b)]
    slots = min(in_a, in_b) * 2
    decided = run(policy(max_running=slots), pending)
    taken = Counter(by.queue for by in pending if by.job_id in decided.admit)
    assert taken["a"] == taken["b"] == slots // 2


@settings(max_examples=100, deadline=None)
@given(jobs_strategy)
def test_a_job_that_fits_and_is_first_in_line_is_admitted(
        raw_jobs: list[tuple[str, int, float, int, str, str]]) -> None:
    pending, _ = build(raw_jobs, [])
    decided = run(policy(), pending)
    urgent = sorted((j for j in pending if j.queue == "urgent" and j.pool == "local"),
                    key=lambda j: (-j.priority, j.seq))
    if urgent:
        assert urgent[0].job_id in decided.admit  # an empty cluster fits any of these


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
    assert decided.pending["j1"].code == "RECLAIMING"
    # Jobs younger than the minimum runtime (started after t=3) are left alone.
    young = run(p, [job(1, "urgent", gpus=2, team="nlp")], borrowers, now=8.0)
    assert set(young.preempt) == {"v3", "v2"}
    # While they stop, nobody else is preempted for the same claim.
    stopping = [r if r.job_id not in ("v7", "v6") else
                RunningJob(r.job_id, r.queue, r.resources, r.pool, r.gpu_ids, r.team,
                           r.started_at, preempting=True) for r in borrowers]
    again = run(p, [job(1, "urgent", gpus=2, team="nlp")], stopping, now=100.0)
    assert again.preempt == {} and again.pending["j1"].code == "RECLAIMING"


def test_quota_taken_back_is_held_for_its_owner_against_the_requeued_borrower() -> None:
    p = policy(teams={"vision": Team("vision", frozenset(), {"gpu": Quota(gpus=4,
                                                                            borrow_gpus=4)}),
                      "nlp": Team("nlp", frozenset(), {"gpu": Quota(gpus=4)})})
    # vision holds 6 of the 8 GPUs; its preempted job (older, so first in queue a) and
    # nlp's job, for which 2 GPUs were taken back, both wait for the 2 that are free.
    running = [RunningJob(f"v{i}", "a", Resources(1, 1024, 1), "gpu", (f"g{i}",),
                          team="vision") for i in range(6)]
    pending = [job(1, "a", gpus=2, team="vision"), job(2, "a", gpus=2, team="nlp")]
    snapshot = Snapshot(pending, running, max_concurrent=0, now=0.0,
                        reclaiming={"j2": "gpu"})
    decided = QueuePolicy(p).schedule(snapshot)
    assert decided.admit == ("j2",)
    assert decided.pending["j1"].code == RESERVED
    # Without the hold the borrower would take them back, and nlp would reclaim again.
    assert run(p, pending, running).admit == ("j1",)
    # A hold for a job that left the queue, or for a pool the policy lacks, holds nothing.
    gone = Snapshot(pending[:1], running, max_concurrent=0, now=0.0,
                    reclaiming={"j2": "gpu", "j1": "nowhere"})
    assert QueuePolicy(p).schedule(gone).admit == ("j1",)


def test_the_hold_lasts_while_its_claimant_waits_and_only_the_claimant_holds() -> None:
    p = policy(teams={"vision": Team("vision", frozenset(), {"gpu": Quota(gpus=4,
                                                                            borrow_gpus=4)}),
                      "nlp": Team("nlp", frozenset(), {"gpu": Quota(gpus=4)})})
    # All 8 GPUs run vision's jobs; two of them were asked to stop for nlp's j1.
    running = [RunningJob(f"v{i}", "a", Resources(1, 1024, 1), "gpu", (f"g{i}",),
                          team="vision", preempting=i >= 6) for i in range(8)]
    pending = [job(1, "a", gpus=2, team="nlp"), job(2, "a", gpus=1, team="nlp")]
    decided = QueuePolicy(p).schedule(Snapshot(pending, running, max_concurrent=0, now=0.0,
                                               reclaiming={"j1": "gpu"}))
    assert decided.pending["j1"].code == decided.pending["j2"].code == "RECLAIMING"
    assert decided.reclaiming == {"j1": "gpu"}  # j2 waits for its turn to take back
    # Behind the global limit it is not even tried, and its claim carries on.
    full = Snapshot(pending, running, max_concurrent=0, now=0.0, reclaiming={"j1": "gpu"})
    capped = QueuePolicy(replace(p, max_running=8)).schedule(full)
    assert capped.pending["j1"].code == GLOBAL_CONCURRENCY_LIMIT
    assert capped.reclaiming == {"j1": "gpu"}


def test_a_long_waiting_job_that_would_borrow_holds_nothing() -> None:
    p = policy(teams={"vision": Team("vision", frozenset(), {"cpu": Quota(cpus=2,
                                                                            borrow_cpus=6)}),
                      "nlp": Team("nlp", frozenset(), {"cpu": Quota(cpus=6)})},
               queues={"a": Queue("a", pools=("cpu",))})
    running = [RunningJob(f"r{i}", "a", Resources(1, 1024, 0), "cpu", team="nlp")
               for i in range(5)]
    # 3 CPUs are free. vision's 4-CPU job, waiting for an hour, would borrow 2 of them: it
    # holds no room, so nlp's later 1-CPU job starts.
    big = job(1, "a", cpus=4, team="vision", submitted_at=-3600.0)
    decided = run(p, [big, job(2, "a", cpus=1, team="nlp")], running)
    assert decided.admit == ("j2",)
    # The same wait within the team's own quota holds the room it needs (vision's jobs are
    # too young to be preempted for it).
    theirs = [RunningJob(f"r{i}", "a", Resources(1, 1024, 0), "cpu", team="vision")
              for i in range(5)]
    mine = job(1, "a", cpus=4, team="nlp", submitted_at=-3600.0)
    held = run(p, [mine, job(2, "a", cpus=1, team="vision")], theirs)
    assert held.admit == () and held.pending["j2"].code == RESERVED


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


def test_a_sweep_runs_at_most_its_limit_under_either_policy() -> None:
    from trainyard.scheduler import FifoPolicy

    pending = [PendingJob(f"j{i}", "a", 0, i, Resources(1, 512, 0), sweep="s1")
               for i in range(5)] + [job(10)]
    running = [RunningJob("r", "a", Resources(1, 512, 0), "cpu", sweep="s1")]
    snapshot = Snapshot(pending, running, max_concurrent=10, now=0, sweep_limits={"s1": 2})
    for decided in (QueuePolicy(policy()).schedule(snapshot),
                    FifoPolicy().schedule(snapshot)):
        assert sorted(decided.admit) == ["j0", "j10"]
        assert decided.pending["j1"].code == "SWEEP_LIMIT"


# --- one pass over a long backlog: the shortcuts decide as taking every turn would ------------


def test_behind_the_global_limit_sweep_access_and_queue_limits_still_hold() -> None:
    p = policy(max_running=3, queues={**policy().queues,
                                      "a": Queue("a", pools=("cpu",), teams=frozenset({"vision"})),
                                      "b": Queue("b", pools=("cpu",), max_running=1)})

    def of_a(seq: int, team: str, sweep: str = "") -> PendingJob:
        return PendingJob(f"j{seq}", "a", 0, seq, Resources(1, 1024, 0), owner=f"{team}-u",
                          team=team, sweep=sweep)

    pending = [job(1, "urgent"), of_a(2, "nlp"), of_a(3, "vision", "s1"), of_a(4, "vision"),
               of_a(5, "nlp"), of_a(6, "vision", "s1"), job(7, "b"), job(8, "b")]
    running = [RunningJob("r1", "b", Resources(1, 1024, 0), "cpu"),
               RunningJob("r2", "gone", Resources(1, 1024, 0), "cpu", sweep="s1")]
    decided = QueuePolicy(p).schedule(Snapshot(pending, running, max_concurrent=0, now=0.0,
                                               sweep_limits={"s1": 1}))
    assert decided.admit == ("j1",)
    assert {k: r.code for k, r in decided.pending.items()} == {
        "j2": QUEUE_ACCESS, "j3": "SWEEP_LIMIT",  # held before their queue's first in line
        "j4": GLOBAL_CONCURRENCY_LIMIT,  # the first that could start, and all after it
        "j5": GLOBAL_CONCURRENCY_LIMIT, "j6": GLOBAL_CONCURRENCY_LIMIT,
        "j7": QUEUE_LIMIT, "j8": QUEUE_LIMIT}
    assert decided.saturated == decided.pending["j4"]


def test_turns_with_a_nan_usage_go_as_the_heap_orders_them() -> None:
    queues = {"q0": Queue("q0", pools=("cpu",)),
              "q1": Queue("q1", pools=("cpu",), teams=frozenset({"vision"}))}
    pending = [PendingJob("j0", "q1", 0, 0, Resources(1, 512, 0), owner="u", team="nlp"),
               PendingJob("j1", "q0", 0, 1, Resources(1, 512, 0), owner="u", team="nlp"),
               PendingJob("j2", "q1", 0, 2, Resources(1, 512, 0), owner="u", team="vision")]
    decided = run(policy(queues=queues, max_running=2), pending,
                  usage={"q0": 0.0, "q1": float("nan")})
    assert decided.admit == ("j1", "j2")


def test_two_waiting_jobs_of_one_id_are_refused() -> None:
    pending = [job(1, "a"), PendingJob("j1", "urgent", 0, 2, Resources(1, 1024, 0))]
    with pytest.raises(ValueError, match="share the id 'j1'"):
        run(policy(max_running=1), pending)


def borrowable(quotas: dict[str, Quota], use: dict[str, float], team: str,
               need: float) -> bool:
    """The borrowing rule for CPUs in a pool that counts nothing else, team by team."""
    mine = quotas.get(team, NO_TEAM if not team else NO_QUOTA)
    over = max(0.0, (use.get(team, 0.0) + need) - mine.cpus) if mine.cpus is not None else 0.0
    if over == 0.0:
        return True
    if over > mine.borrow_cpus:
        return False
    idle, borrowed = 0.0, 0.0
    for other, quota in quotas.items():
        if other != team:
            idle += max(0.0, (quota.cpus or 0.0) - use.get(other, 0.0))
            borrowed += max(0.0, use.get(other, 0.0) - quota.cpus) \
                if quota.cpus is not None else 0.0
    return not over > (idle - borrowed) + 1e-9


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.none() | st.integers(0, 30), st.integers(0, 40)), min_size=1,
                max_size=12),
       st.lists(st.tuples(st.integers(0, 13), st.integers(1, 30)), max_size=30),
       st.lists(st.tuples(st.integers(0, 13), st.integers(1, 30), st.integers(0, 2)),
                max_size=30))
def test_borrowing_among_many_teams_is_decided_as_adding_them_up(
        raw_quotas: list[tuple[int | None, int]], raw_running: list[tuple[int, int]],
        raw_pending: list[tuple[int, int, int]]) -> None:
    # CPUs in tenths, whose float sums round: the running sums must decide as the rule does.
    teams = [f"t{i}" for i in range(len(raw_quotas))]
    quotas = {t: Quota(cpus=None if c is None else c / 10, borrow_cpus=b / 10)
              for t, (c, b) in zip(teams, raw_quotas, strict=True)}

    def team(index: int) -> str:  # past the teams: a team without quota, then none
        return teams[index] if index < len(teams) else ("other" if index % 2 else "")

    pool = Pool(PoolCapacity("cpu", max_jobs=1000))  # counts neither CPUs nor memory
    p = Policy(pools={"cpu": pool}, queues={"a": Queue("a", pools=("cpu",))},
               teams={t: Team(t, quotas={"cpu": q}) for t, q in quotas.items()},
               max_running=1000)
    running = [RunningJob(f"r{i}", "a", Resources(c / 10, 0, 0), "cpu", team=team(t))
               for i, (t, c) in enumerate(raw_running)]
    pending = [PendingJob(f"j{i}", "a", prio, i, Resources(c / 10, 0, 0), team=team(t))
               for i, (t, c, prio) in enumerate(raw_pending)]
    decided = QueuePolicy(p).schedule(Snapshot(pending, running, max_concurrent=0, now=0.0))
    use: dict[str, float] = {}
    for r in running:
        if r.team:
            use[r.team] = use.get(r.team, 0.0) + r.resources.cpus
    admitted = []
    for j in sorted(pending, key=lambda j: (-j.priority, j.seq)):
        if borrowable(quotas, use, j.team, j.resources.cpus):
            admitted.append(j.job_id)
            use[j.team] = use.get(j.team, 0.0) + j.resources.cpus
        else:
            assert decided.pending[j.job_id].code == TEAM_QUOTA
    assert decided.admit == tuple(admitted)


def test_a_borrowing_tie_is_settled_as_adding_up_team_by_team() -> None:
    # The job goes beyond its quota by just what the other teams leave free, plus the 1e-9
    # of slack, as adding up team by team rounds it; adding up in another order rounds the
    # other way, and would hold it.
    teams = {f"t{i}": Team(f"t{i}", quotas={"cpu": Quota(cpus=cpus, borrow_cpus=100.0)})
             for i, cpus in enumerate((2.6, 3.0, 2.8, 0.2))}
    p = Policy(pools={"cpu": Pool(PoolCapacity("cpu", max_jobs=100))},
               queues={"a": Queue("a", pools=("cpu",))}, teams=teams, max_running=100)
    running = [RunningJob(f"r{i}", "a", Resources(cpus, 0, 0), "cpu", team=f"t{i}")
               for i, cpus in enumerate((1.3, 1.5, 3.2, 0.3))]
    pending = [PendingJob("j", "a", 0, 0, Resources(2.300000001, 0, 0), team="t0")]
    decided = QueuePolicy(p).schedule(Snapshot(pending, running, max_concurrent=0, now=0.0))
    assert decided.admit == ("j",)


def test_usage_over_a_long_gap_is_bounded_by_the_half_life() -> None:
    gpu_job = RunningJob("r", "a", Resources(1, 1024, 8), "gpu")
    short = decayed_usage({}, [gpu_job], 1.0, 3600.0)["a"]
    assert short == pytest.approx(8.0, rel=1e-3)  # a second of 8 GPUs
    day = decayed_usage({}, [gpu_job], 86_400.0, 3600.0)["a"]
    assert day == pytest.approx(8 * 3600.0 / math.log(2), rel=1e-6)  # not 8 x 86,400
    # Two steps give what one step of the same length gives.
    halves = decayed_usage(decayed_usage({}, [gpu_job], 1800.0, 3600.0), [gpu_job], 1800.0,
                           3600.0)["a"]
    assert halves == pytest.approx(decayed_usage({}, [gpu_job], 3600.0, 3600.0)["a"])
