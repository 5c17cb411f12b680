"""The order of a pass: queue priorities, turns, limits, access, claims carried from one
pass to the next, long waiters' holds, and invariants over random workloads."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import factories
from tests.scheduler.builders import TEAMS, job, policy, quota_policy, run
from trainyard.domain import policy as cfg
from trainyard.domain.policy import Queue, Quota, Team
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler.model import Decisions, PendingJob, RunningJob, Snapshot
from trainyard.scheduler.queues import QueuePolicy


def test_higher_priority_queues_go_first() -> None:
    p = policy(max_running=1)
    decided = run(p, [job(1, "a"), job(2, "urgent")])
    assert decided.admit == ("j2",)
    assert decided.pending["j1"].code == ReasonCode.GLOBAL_CONCURRENCY_LIMIT


def test_inside_a_queue_job_priority_then_submit_order() -> None:
    decided = run(policy(max_running=2), [job(1), job(2, priority=5), job(3)])
    assert decided.admit == ("j2", "j1")


def test_queues_of_equal_priority_take_turns() -> None:
    pending = [job(i, "a") for i in range(1, 5)] + [job(i, "b") for i in range(5, 9)]
    decided = run(policy(max_running=4), pending)
    assert Counter(j[:2] for j in decided.admit) == Counter({"j1": 1, "j2": 1, "j5": 1,
                                                             "j6": 1})


def test_a_queue_limit_holds_only_that_queue() -> None:
    p = policy(queues={**policy().queues, "a": Queue("a", pools=("cpu",), max_running=1)})
    decided = run(p, [job(1, "a"), job(2, "a"), job(3, "b")])
    assert set(decided.admit) == {"j1", "j3"}
    assert decided.pending["j2"].code == ReasonCode.QUEUE_LIMIT
    assert decided.pending["j2"].message == "queue 'a' is at its limit of 1 running jobs"


def test_an_unchanged_reason_is_the_same_object_from_pass_to_pass() -> None:
    # The tracker tells unchanged reasons by identity: the global limit's and those made by
    # key (a queue's limit here) are carried from one pass to the next, and only those the
    # last pass used.
    p = QueuePolicy(policy(max_running=3, queues={
        **policy().queues, "a": Queue("a", pools=("cpu",), max_running=1)}))
    jobs = [job(1, "a"), job(2, "a"), job(3, "b"), job(4, "b"), job(5, "b"), job(6, "b")]
    first = p.schedule(Snapshot(jobs, [], now=0))
    assert set(first.admit) == {"j1", "j3", "j4"}
    held = [run_of(j) for j in first.admit]
    second = p.schedule(Snapshot([j for j in jobs if j.job_id not in first.admit], held,
                                 now=1))
    assert second.admit == ()
    assert second.pending["j2"].code is ReasonCode.QUEUE_LIMIT
    assert second.pending["j5"].code is ReasonCode.GLOBAL_CONCURRENCY_LIMIT
    assert all(second.pending[j] is first.pending[j] for j in ("j2", "j5", "j6"))
    # A pass that needs no queue's limit carries none of it on.
    p.schedule(Snapshot([job(7, "b")], [], now=2))
    third = p.schedule(Snapshot([job(2, "a")], [run_of("j1")], now=3))
    assert third.pending["j2"] == first.pending["j2"]
    assert third.pending["j2"] is not first.pending["j2"]


def run_of(job_id: str) -> RunningJob:
    return factories.running(job_id, "a" if job_id in ("j1", "j2") else "b", pool="cpu")


def test_a_big_job_blocks_only_what_it_must_until_it_has_waited_long() -> None:
    busy = [RunningJob(f"r{i}", "a", Resources(1, 1024, 1), "gpu", (f"g{i}",))
            for i in range(6)]
    pending = [job(1, gpus=4), job(2, gpus=1), job(3, gpus=1)]
    fresh = run(policy(), pending, busy, now=10.0)
    assert fresh.admit == ("j2", "j3")  # small jobs fill in behind the big one
    assert fresh.pending["j1"].message == "waiting for 4 GPUs to be free at once in pool 'gpu'"
    old = run(policy(), pending, busy, now=10_000.0)
    assert old.admit == ()  # the big job has waited too long: its GPUs are held for it
    assert old.pending["j2"].code == ReasonCode.RESERVED


def test_pools_are_chosen_by_the_kind_of_job_and_the_queue() -> None:
    decided = run(policy(), [job(1, "box", kind="docker"), job(2, "a", kind="docker")])
    assert decided.admit == ("j1",) and decided.pools == {"j1": "box"}
    assert decided.pending["j2"].code == ReasonCode.NO_POOL


def test_a_job_spills_to_the_queues_next_pool() -> None:
    busy = [RunningJob(f"r{i}", "a", Resources(2, 1024, 0), "gpu") for i in range(16)]
    decided = run(policy(), [job(1)], busy)
    assert decided.pools == {"j1": "cpu"}


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
    urgent = sorted((j for j in pending if j.queue == "urgent" and j.kind == "local"),
                    key=lambda j: (-j.priority, j.seq))
    if urgent:
        assert urgent[0].job_id in decided.admit  # an empty cluster fits any of these


# --- holds: long waiters, and room taken back for a job -------------------------------------

def test_quota_taken_back_is_held_for_its_owner_against_the_requeued_borrower() -> None:
    p = policy(teams={"vision": Team("vision", frozenset(), {"gpu": Quota(gpus=4,
                                                                            borrow_gpus=4)}),
                      "nlp": Team("nlp", frozenset(), {"gpu": Quota(gpus=4)})})
    # vision holds 6 of the 8 GPUs; its preempted job (older, so first in queue a) and
    # nlp's job, for which 2 GPUs were taken back, both wait for the 2 that are free.
    running = [RunningJob(f"v{i}", "a", Resources(1, 1024, 1), "gpu", (f"g{i}",),
                          team="vision") for i in range(6)]
    pending = [job(1, "a", gpus=2, team="vision"), job(2, "a", gpus=2, team="nlp")]
    snapshot = Snapshot(pending, running, now=0.0,
                        reclaiming={"j2": "gpu"})
    decided = QueuePolicy(p).schedule(snapshot)
    assert decided.admit == ("j2",)
    assert decided.pending["j1"].code == ReasonCode.RESERVED
    assert decided.held_out  # j1 fit but for the hold: the replay must look again
    # Without the hold the borrower would take them back, and nlp would reclaim again.
    unheld = run(p, pending, running)
    assert unheld.admit == ("j1",) and not unheld.held_out
    # A hold for a job that left the queue, or for a pool the policy lacks, holds nothing.
    gone = Snapshot(pending[:1], running, now=0.0,
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
    decided = QueuePolicy(p).schedule(Snapshot(pending, running, now=0.0,
                                               reclaiming={"j1": "gpu"}))
    assert decided.pending["j1"].code == decided.pending["j2"].code == ReasonCode.RECLAIMING
    assert decided.reclaiming == {"j1": "gpu"}  # j2 waits for its turn to take back
    # Behind the global limit it is not even tried, and its claim carries on.
    full = Snapshot(pending, running, now=0.0, reclaiming={"j1": "gpu"})
    capped = QueuePolicy(replace(p, max_running=8)).schedule(full)
    assert capped.pending["j1"].code == ReasonCode.GLOBAL_CONCURRENCY_LIMIT
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
    assert held.admit == () and held.pending["j2"].code == ReasonCode.RESERVED


def test_a_sweep_runs_at_most_its_limit_under_either_policy() -> None:
    from trainyard.scheduler import FifoPolicy

    pending = [PendingJob(f"j{i}", "a", 0, i, Resources(1, 512, 0), sweep="s1")
               for i in range(5)] + [job(10)]
    running = [RunningJob("r", "a", Resources(1, 512, 0), "cpu", sweep="s1")]
    snapshot = Snapshot(pending, running, now=0, sweep_limits={"s1": 2})
    for decided in (QueuePolicy(policy()).schedule(snapshot),
                    FifoPolicy(10).schedule(snapshot)):
        assert sorted(decided.admit) == ["j0", "j10"]
        assert decided.pending["j1"].code == ReasonCode.SWEEP_LIMIT


# Claims: room taken back for a job is held for it in the passes after, while it waits.
TWO = Resources(1.0, 0, 2)
CLAIMS = cfg.Policy(
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


def claims_pass(policy: cfg.Policy, pending: list[PendingJob], running: list[RunningJob],
                reclaiming: dict[str, str], now: float = 5000) -> Decisions:
    return QueuePolicy(policy).schedule(Snapshot(pending, running, now=now,
                                                 reclaiming=reclaiming))


def test_a_claim_and_a_long_waiters_hold_do_not_block_each_other() -> None:
    waiter = PendingJob("L", "hi", 0, 1, TWO, team="A", submitted_at=0)  # waited long
    first = claims_pass(CLAIMS, [CLAIMANT, waiter], [OWN, BORROWED, HI_BUSY], {})
    assert list(first.preempt) == ["c1"] and first.reclaiming == {"J": "p"}
    # The borrower stopped; the long waiter's queue is free again and goes first.
    second = claims_pass(CLAIMS, [CLAIMANT, waiter, REQUEUED], [OWN], first.reclaiming)
    assert second.admit == ("J",)  # the claim is not kept out by the waiter's hold
    assert second.pending["L"].code == ReasonCode.RESERVED
    third = claims_pass(CLAIMS, [waiter, REQUEUED], [OWN], second.reclaiming)
    assert third.admit == ("L",)


def test_a_claim_ends_when_the_queue_stops_taking_its_job() -> None:
    first = claims_pass(CLAIMS, [CLAIMANT], [OWN, BORROWED], {})
    assert first.reclaiming == {"J": "p"}
    closed = replace(CLAIMS, queues={**CLAIMS.queues, "lo": replace(CLAIMS.queues["lo"],
                                                                    users=frozenset({"x"}))})
    other = PendingJob("M", "hi", 0, 20, TWO, team="A", submitted_at=5000)
    second = claims_pass(closed, [CLAIMANT, other], [OWN], first.reclaiming, now=9000)
    assert second.pending["J"].code == ReasonCode.QUEUE_ACCESS and second.reclaiming == {}
    third = claims_pass(closed, [CLAIMANT, other], [OWN], second.reclaiming, now=9001)
    assert third.admit == ("M",)


# --- one pass over a long backlog: the shortcuts decide as taking every turn would ------------

def test_behind_the_global_limit_sweep_access_and_queue_limits_still_hold() -> None:
    p = policy(max_running=3, queues={**policy().queues,
                                      "a": Queue("a", pools=("cpu",), teams=frozenset({"vision"})),
                                      "b": Queue("b", pools=("cpu",), max_running=1)},
               teams={team: Team(team, frozenset({f"{team}-u"})) for team in ("vision", "nlp")})

    def of_a(seq: int, team: str, sweep: str = "") -> PendingJob:
        return PendingJob(f"j{seq}", "a", 0, seq, Resources(1, 1024, 0), owner=f"{team}-u",
                          team=team, sweep=sweep)

    pending = [job(1, "urgent"), of_a(2, "nlp"), of_a(3, "vision", "s1"), of_a(4, "vision"),
               of_a(5, "nlp"), of_a(6, "vision", "s1"), job(7, "b"), job(8, "b")]
    running = [RunningJob("r1", "b", Resources(1, 1024, 0), "cpu"),
               RunningJob("r2", "gone", Resources(1, 1024, 0), "cpu", sweep="s1")]
    decided = QueuePolicy(p).schedule(Snapshot(pending, running, now=0.0,
                                               sweep_limits={"s1": 1}))
    assert decided.admit == ("j1",)
    assert {k: r.code for k, r in decided.pending.items()} == {
        # Held before their queue's first in line:
        "j2": ReasonCode.QUEUE_ACCESS, "j3": ReasonCode.SWEEP_LIMIT,
        "j4": ReasonCode.GLOBAL_CONCURRENCY_LIMIT,  # the first that could start, and all after it
        "j5": ReasonCode.GLOBAL_CONCURRENCY_LIMIT, "j6": ReasonCode.GLOBAL_CONCURRENCY_LIMIT,
        "j7": ReasonCode.QUEUE_LIMIT, "j8": ReasonCode.QUEUE_LIMIT}
    assert decided.saturated == decided.pending["j4"]


def test_turns_with_a_nan_usage_go_as_the_heap_orders_them() -> None:
    queues = {"q0": Queue("q0", pools=("cpu",)),
              "q1": Queue("q1", pools=("cpu",), teams=frozenset({"vision"}))}
    pending = [PendingJob("j0", "q1", 0, 0, Resources(1, 512, 0), owner="bob", team="nlp"),
               PendingJob("j1", "q0", 0, 1, Resources(1, 512, 0), owner="bob", team="nlp"),
               PendingJob("j2", "q1", 0, 2, Resources(1, 512, 0), owner="ann", team="vision")]
    decided = run(policy(queues=queues, max_running=2, teams=TEAMS), pending,
                  usage={"q0": 0.0, "q1": float("nan")})
    assert decided.admit == ("j1", "j2")


def test_two_waiting_jobs_of_one_id_are_refused() -> None:
    pending = [job(1, "a"), PendingJob("j1", "urgent", 0, 2, Resources(1, 1024, 0))]
    with pytest.raises(ValueError, match="share the id 'j1'"):
        run(policy(max_running=1), pending)
