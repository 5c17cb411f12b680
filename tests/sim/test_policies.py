"""Each policy on traces small enough to work out by hand: completion times, queueing
delay, utilization and preemptions, exactly."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from trainyard.domain import policy as cfg
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler.model import PendingJob, RunningJob
from trainyard.scheduler.snapshot import Feed
from trainyard.sim.cluster import Cluster, generated_policy, submit
from trainyard.sim.compare import compare
from trainyard.sim.policies import replay_for
from trainyard.sim.trace import Trace, TraceJob, generate_trace, queue_per_team


def job(job_id: str, submit: float, duration: float, gpus: int, team: str = "x",
        queue: str = "default", priority: int = 0) -> TraceJob:
    return TraceJob(job_id, submit, duration, gpus, team=team, user=f"{team}-user",
                    queue=queue, priority=priority)


def replay(jobs: list[TraceJob], policy: str, cluster: Cluster | None = None,
           **options: Any) -> tuple[dict[str, tuple[float, float]], dict[str, Any]]:
    """(job id -> (JCT, wait)), and the policy's summary."""
    trace = Trace(tuple(sorted(jobs, key=lambda j: j.submit_time)), "test", "trainyard", {})
    cluster = cluster or Cluster(generated_policy(trace.jobs, 2), generated=True)
    result = compare(trace, cluster, [policy], **options)
    outcome = result.outcomes[policy]
    per_job = {}
    for state in outcome.jobs:
        assert state.finish is not None
        jct = state.finish - state.pending.submitted_at
        per_job[state.pending.job_id] = (jct, jct - state.held)
    return per_job, result.summaries[policy]


def pool_policy(gpus: int, queues: dict[str, int], teams: dict[str, int] | None = None,
                min_runtime: float = 0.0) -> Cluster:
    """One pool of `gpus`; queues by name -> priority; teams by name -> GPUs of quota, each
    free to borrow the rest."""
    pool = cfg.Pool(PoolCapacity("gpu", max_jobs=100, gpu_ids=tuple(map(str, range(gpus)))))
    return Cluster(cfg.Policy(
        pools={"gpu": pool},
        queues={name: cfg.Queue(name, pools=("gpu",), priority=priority)
                for name, priority in queues.items()},
        teams={name: cfg.Team(name, quotas={"gpu": cfg.Quota(gpus=owned,
                                                             borrow_gpus=gpus - owned)})
               for name, owned in (teams or {}).items()},
        max_running=100, min_runtime_s=min_runtime))


# a: 1 GPU for 100 s and b: 1 GPU for 50 s at 0; c: both GPUs for 10 s at 10.
THREE = [job("a", 0, 100, 1), job("b", 0, 50, 1, team="y"), job("c", 10, 10, 2)]


def test_fifo_runs_in_submit_order() -> None:
    jobs, summary = replay(THREE, "fifo")
    # c waits for both GPUs until a ends at 100, then runs to 110.
    assert jobs == {"a": (100, 0), "b": (50, 0), "c": (100, 90)}
    assert summary["mean_jct"] == pytest.approx(250 / 3)
    assert summary["median_jct"] == 100
    assert summary["mean_wait"] == 30
    assert summary["makespan"] == 110
    assert summary["utilization"] == pytest.approx((100 + 50 + 2 * 10) / (2 * 110))
    assert summary["preemptions"] == 0


def test_fifo_holds_small_jobs_behind_a_large_one_and_priority_lets_them_pass() -> None:
    # a holds one GPU; b wants both; c wants one, which is free.
    trace = [job("a", 0, 100, 1), job("b", 1, 10, 2), job("c", 2, 10, 1)]
    fifo, _ = replay(trace, "fifo")
    assert fifo == {"a": (100, 0), "b": (109, 99), "c": (118, 108)}
    best_effort, _ = replay(trace, "priority")  # b has not waited reserve_after (10 min)
    assert best_effort == {"a": (100, 0), "b": (109, 99), "c": (10, 0)}


def test_priority_takes_the_higher_queue_first() -> None:
    cluster = pool_policy(1, {"lo": 0, "hi": 5})
    trace = [job("x", 0, 100, 1, queue="lo"), job("y", 1, 10, 1, queue="lo"),
             job("z", 2, 10, 1, queue="hi")]
    jobs, summary = replay(trace, "priority", cluster)
    assert jobs == {"x": (100, 0), "z": (108, 98), "y": (119, 109)}
    assert summary["utilization"] == 1.0
    fifo, _ = replay(trace, "fifo", cluster)
    assert fifo == {"x": (100, 0), "y": (109, 99), "z": (118, 108)}


def test_default_reclaims_borrowed_quota_by_preemption_and_the_job_resumes() -> None:
    # x's two jobs use both GPUs, one of them borrowed from y; y's job comes at 50, in a
    # queue of its own, and x's newest job makes room, resuming when y's job is done.
    cluster = pool_policy(2, {"xq": 0, "yq": 0}, {"x": 1, "y": 1})
    trace = [job("x1", 0, 100, 1, queue="xq"), job("x2", 0, 100, 1, queue="xq"),
             job("y1", 50, 10, 1, team="y", queue="yq")]
    jobs, summary = replay(trace, "default", cluster)
    assert jobs["y1"] == (10, 0)
    assert sorted(jobs[j] for j in ("x1", "x2")) == [(100, 0), (110, 10)]
    assert summary["preemptions"] == 1
    assert summary["makespan"] == 110
    assert summary["utilization"] == pytest.approx((100 + 100 + 10) / (2 * 110))
    assert summary["teams"]["x"]["preemptions"] == 1


def test_default_waits_for_min_runtime_before_it_preempts() -> None:
    # y's job comes at 10, but x's jobs may be preempted only once they ran 20 s: the
    # replay wakes then, as the tracker's periodic passes would.
    cluster = pool_policy(2, {"xq": 0, "yq": 0}, {"x": 1, "y": 1}, min_runtime=20)
    trace = [job("x1", 0, 100, 1, queue="xq"), job("x2", 0, 100, 1, queue="xq"),
             job("y1", 10, 10, 1, team="y", queue="yq")]
    jobs, summary = replay(trace, "default", cluster)
    assert jobs["y1"] == (20, 10)
    assert sorted(jobs[j] for j in ("x1", "x2")) == [(100, 0), (110, 10)]
    assert summary["preemptions"] == 1


def test_default_in_one_queue_keeps_reclaimed_quota_for_its_owner() -> None:
    """The borrower's preempted job is older, so it is ahead of the owner's in their one
    queue; what comes back is held for the owner's job, and the borrower waits for it
    instead of taking it again (which would make the owner reclaim again, and again)."""
    cluster = pool_policy(2, {"default": 0}, {"x": 1, "y": 1})
    trace = [job("x1", 0, 100, 1), job("x2", 0, 100, 1), job("y1", 50, 10, 1, team="y")]
    jobs, summary = replay(trace, "default", cluster)
    assert jobs["y1"] == (10, 0)  # starts at once, on the GPU taken back from x2
    # One of x's jobs ran 50 s, waited 10 s for y1, then ran its last 50 s.
    assert sorted([jobs["x1"], jobs["x2"]]) == [(100, 0), (110, 10)]
    assert summary["preemptions"] == 1


def test_srtf_oracle_preempts_for_the_shortest_remaining_work() -> None:
    jobs, summary = replay(THREE, "srtf-oracle")
    # At 10: c (10 s left) goes before b (40) and a (90), which stop and resume at 20.
    assert jobs == {"a": (110, 10), "b": (60, 10), "c": (10, 0)}
    assert summary["preemptions"] == 2
    assert summary["mean_jct"] == 60
    assert summary["utilization"] == pytest.approx(170 / 220)


def test_restart_overhead_is_added_to_each_resumed_job() -> None:
    jobs, _ = replay(THREE, "srtf-oracle", restart_overhead=5)
    assert jobs == {"a": (115, 10), "b": (65, 10), "c": (10, 0)}


def test_las_keeps_jobs_of_one_level_in_order() -> None:
    jobs, summary = replay(THREE, "las")  # all below the first level (1 GPU-hour)
    assert jobs == {"a": (100, 0), "b": (50, 0), "c": (100, 90)}
    assert summary["preemptions"] == 0


def test_las_preempts_a_job_that_passed_a_level_for_a_newer_one() -> None:
    cluster = pool_policy(1, {"default": 0})
    trace = [job("a", 0, 5000, 1), job("b", 4000, 100, 1)]
    jobs, summary = replay(trace, "las", cluster)  # a passed 3600 GPU-seconds at 3600
    assert jobs == {"a": (5100, 100), "b": (100, 0)}
    assert summary["preemptions"] == 1
    fifo, _ = replay(trace, "fifo", cluster)
    assert fifo == {"a": (5000, 0), "b": (1100, 1000)}


def test_las_wakes_when_a_running_job_passes_a_level() -> None:
    cluster = pool_policy(1, {"default": 0})
    trace = [job("a", 0, 5000, 1), job("b", 1000, 100, 1)]
    jobs, _ = replay(trace, "las", cluster)
    # b waits behind a, of the same level, until a passes 1 GPU-hour at 3600.
    assert jobs == {"a": (5100, 100), "b": (2700, 2600)}


def test_default_preempts_a_teams_job_that_passed_a_level_for_its_new_one() -> None:
    cluster = pool_policy(1, {"default": 0}, {"x": 1}, min_runtime=300)
    trace = [job("a", 0, 5000, 1), job("b", 1000, 100, 1)]
    jobs, summary = replay(trace, "default", cluster)
    # b waits behind a, of the same level, until a passes 1 GPU-hour at 3600 and is
    # preempted for it; a resumes when b ends.
    assert jobs == {"a": (5100, 100), "b": (2700, 2600)}
    assert summary["preemptions"] == 1
    off = Cluster(replace(cluster.policy, service_levels=False))
    assert replay(trace, "default", off)[0] == {"a": (5000, 0), "b": (4100, 4000)}


def test_default_without_teams_wakes_at_min_runtime_to_preempt_for_service() -> None:
    # b waits until a passes 1 GPU-hour at 3600 and preempts it; a restarts at 3700, past
    # level 1. c comes at 3750 and may preempt a once this run of a has lasted
    # min_runtime, at 4000: the replay must pass then, with no team to reclaim for.
    cluster = pool_policy(1, {"default": 0}, min_runtime=300)
    trace = [job("a", 0, 5000, 1), job("b", 3000, 100, 1), job("c", 3750, 100, 1)]
    jobs, summary = replay(trace, "default", cluster)
    assert jobs["b"] == (700, 600) and jobs["c"] == (350, 250)
    assert summary["preemptions"] == 2


@pytest.mark.parametrize(("trace", "gpus"), [
    (Trace(tuple(generate_trace(3000, 32, load=0.95, teams=3, seed=5)), "gen", "trainyard",
           {}), 32),
    # A deep backlog, a queue per team: teams borrow and give back all the time, so a
    # wake-up right after a pass that started jobs may matter (Replay._settled).
    (queue_per_team(Trace(tuple(generate_trace(400, 64, load=12.0, teams=4, seed=7)), "gen",
                          "trainyard", {})), 64),
], ids=["busy", "deep"])
def test_skipping_wake_ups_that_cannot_matter_changes_nothing(trace: Trace, gpus: int) -> None:
    cluster = Cluster(generated_policy(trace.jobs, gpus), generated=True)
    submitted = submit(trace.jobs, cluster.policy)
    teams = sorted({j.team for j in submitted.jobs})
    outcomes = []
    for quiet in (False, True):
        replay_ = replay_for("default", cluster.policy, cluster.gpus, teams)
        replay_.quiet_wakes = quiet
        outcomes.append(replay_.run(submitted.pending, [j.duration for j in submitted.jobs],
                                    [j.team for j in submitted.jobs]))
    loud, quiet_ = outcomes
    assert [(j.finish, j.preemptions) for j in loud.jobs] == \
        [(j.finish, j.preemptions) for j in quiet_.jobs]
    assert loud.preemptions > 0 and quiet_.passes < loud.passes


Ended = dict[str, tuple[float | None, float | None, int]]  # job -> first start, end, preemptions


def replay_both_ways(policy: cfg.Policy, gpus: int, running: list[tuple[RunningJob, float]],
                     waiting: list[tuple[PendingJob, float]], usage: dict[str, float] | None = None,
                     claims: dict[str, str] | None = None) -> tuple[Ended, Ended]:
    """`default` from one state, with every wake-up passed and with those that cannot
    matter passed over: how each job ended, each way. `running` jobs (with the work they
    have left) come first in the submit order, then `waiting` (with their work)."""
    outcomes = []
    for quiet in (False, True):
        replay_ = replay_for("default", policy, gpus, ())
        replay_.quiet_wakes = quiet
        replay_.feed = Feed(dict(usage or {}), 0.0, dict(claims or {}))
        for seq, (run_, remaining) in enumerate(running, 1):
            replay_.resume(run_, PendingJob(run_.job_id, run_.queue, 0, seq, run_.resources,
                                            team=run_.team), remaining, 0.0, run_.team)
        for seq, (pending, work) in enumerate(waiting, len(running) + 1):
            replay_.submit(replace(pending, seq=seq), work)
        now: float | None = 0.0
        while now is not None:
            replay_.account_usage(now)
            replay_.finish_due(now)
            replay_.schedule(now)
            now = replay_.next_event(now, None)
        outcomes.append({job_id: (state.first_start, state.finish, state.preemptions)
                         for job_id, state in replay_.states.items()})
    loud, quiet_ = outcomes
    return loud, quiet_


def pool(name: str, gpus: int = 0, cpus: float = 32.0) -> cfg.Pool:
    return cfg.Pool(PoolCapacity(name, max_jobs=16, cpus=cpus, memory_mb=65536,
                                 gpu_ids=tuple(f"{name}{i}" for i in range(gpus))))


def quota_cluster(pools: dict[str, cfg.Pool], queues: dict[str, tuple[str, ...]],
                  quotas: dict[str, cfg.Quota], *, reserve_after_s: float = 0.0,
                  **options: dict[str, Any]) -> cfg.Policy:
    """Queues by name -> pools (with `options` by queue name), teams by name -> their quota
    in pool b; jobs past 300 s may be stopped for quota, none for service."""
    return cfg.Policy(
        pools=pools,
        queues={name: cfg.Queue(name, pools=names, **options.get(name, {}))
                for name, names in queues.items()},
        teams={name: cfg.Team(name, quotas={"b": quota}) for name, quota in quotas.items()},
        max_running=100, reserve_after_s=reserve_after_s, min_runtime_s=300.0,
        service_levels=False)


def test_a_wake_up_after_a_pass_that_held_room_for_a_long_waiter_is_not_passed_over() -> None:
    """Three queues of equal priority share 8 GPUs. R (5 GPUs) and Y1 (1) run; H (4, of
    qy) has waited past reserve_after_s and holds its room, so J (1, of qz, with more usage
    than qy at first) waits behind the hold though 2 GPUs are free. As qy uses and qz's usage
    decays, qz's turn comes first: J starts at the next pass, R's wake-up at 200 (its
    minimum runtime), though neither a reclaim nor a demotion can stop R."""
    policy = cfg.Policy(pools={"gpu": pool("gpu", 8)},
                        queues={q: cfg.Queue(q, pools=("gpu",)) for q in ("qx", "qy", "qz")},
                        teams={}, max_running=100, reserve_after_s=600.0,
                        min_runtime_s=300.0)
    loud, quiet = replay_both_ways(
        policy, 8,
        [(RunningJob("R", "qx", Resources(1, 1, 5), "gpu", tuple(f"gpu{i}" for i in range(5)),
                     "X", -100.0), 5000),
         (RunningJob("Y1", "qy", Resources(1, 1, 1), "gpu", ("gpu5",), "Y", -10000.0), 3000)],
        [(PendingJob("H", "qy", 0, 0, Resources(1, 1, 4), team="Y", submitted_at=-1000.0),
          100),
         (PendingJob("J", "qz", 0, 0, Resources(1, 1, 1), team="Z"), 100)],
        usage={"qz": 50.0})
    assert loud["J"][0] == quiet["J"][0] == 200.0


def test_a_pass_whose_claimant_started_in_another_pool_leaves_the_next_one_a_reclaim(
) -> None:
    """C holds a claim of 2 GPUs in pool b, where V1 (2 GPUs, of team V, which owns none
    there) and V2 (4, not preemptible) run. K (4, of team U, which owns 4 of b) cannot
    reclaim: with the claim counted as taken, stopping V1 leaves it short. C starts in pool
    a instead, its claim gone: at C's minimum runtime (300), the next wake-up, K reclaims
    V1, though neither a reclaim nor a demotion could stop C itself."""
    policy = quota_cluster(
        {"a": pool("a", 2), "b": pool("b", 8)},
        {"qk": ("b",), "qc": ("a", "b"), "qv": ("b",), "qp": ("b",)},
        {"U": cfg.Quota(gpus=4), "V": cfg.Quota(gpus=0, borrow_gpus=8)},
        qk={"priority": 1}, qp={"preemptible": False})
    loud, quiet = replay_both_ways(
        policy, 10,
        [(RunningJob("V1", "qv", Resources(1, 1, 2), "b", ("b0", "b1"), "V", -1000.0), 5000),
         (RunningJob("V2", "qp", Resources(1, 1, 4), "b", ("b2", "b3", "b4", "b5"), "V",
                     -1000.0), 5000)],
        [(PendingJob("C", "qc", 0, 0, Resources(1, 1, 2), team="W"), 1000),
         (PendingJob("K", "qk", 0, 0, Resources(1, 1, 4), team="U"), 100)],
        claims={"C": "b"})
    assert loud == quiet
    assert loud["C"][0] == 0.0 and loud["K"][0] == 300.0 and loud["V1"][2] == 1


def test_a_pass_whose_admission_takes_a_team_just_past_its_quota_leaves_a_reclaim() -> None:
    """Team T owns 0.1 of pool b's CPU and holds exactly that (T1), so a reclaim cannot stop
    T1 for J (of team U, within its own 0.5) while R takes most of the rest. A (0.05, of T)
    starts, taking T past its quota by an amount a subtraction of floats can lose: at the
    next wake-up (Z's minimum runtime, 200), J reclaims: T1 stops for it."""
    policy = quota_cluster(
        {"b": pool("b", cpus=1.0), "z": pool("z", 1, cpus=8.0)},
        {"qj": ("b",), "qa": ("b",), "qr": ("b",), "qz": ("z",)},
        {"U": cfg.Quota(cpus=0.5), "T": cfg.Quota(cpus=0.1, borrow_cpus=1.0)},
        qj={"priority": 1}, qr={"preemptible": False})
    loud, quiet = replay_both_ways(
        policy, 1,
        [(RunningJob("T1", "qa", Resources(0.1, 0, 0), "b", (), "T", -1000.0), 5000),
         (RunningJob("R", "qr", Resources(0.42, 0, 0), "b", (), "", -1000.0), 5000),
         (RunningJob("Z", "qz", Resources(1, 0, 1), "z", ("z0",), "", -100.0), 5000)],
        [(PendingJob("J", "qj", 0, 0, Resources(0.5, 0, 0), team="U"), 100),
         (PendingJob("A", "qa", 0, 0, Resources(0.05, 0, 0), team="T"), 1000)])
    assert loud == quiet
    assert loud["A"][0] == 0.0 and loud["J"][0] == 200.0 and loud["T1"][2] == 1


def test_a_pass_that_kept_a_job_out_by_a_lasting_claim_leaves_the_next_one_a_reclaim(
) -> None:
    """C holds a claim of 2 GPUs in pool b but waits behind its queue's limit, so the claim
    goes on. X (5 GPUs, of team U, which owns 5 of b) fits in b but for the claim: it waits
    as RESERVED, which tries no preemption. A (2, of no team) then starts in room nobody
    held, and X no longer fits at all: at the next wake-up (Q1's minimum runtime, 200) X
    reclaims W, though neither a reclaim nor a demotion could stop Q1 itself."""
    policy = quota_cluster(
        {"a": pool("a", 2), "b": pool("b", 10)},
        {"qx": ("b",), "qa": ("b",), "qc": ("a", "b"), "qw": ("b",)},
        {"U": cfg.Quota(gpus=5), "V": cfg.Quota(gpus=0, borrow_gpus=10)},
        reserve_after_s=1e9, qx={"priority": 1}, qc={"max_running": 1})
    loud, quiet = replay_both_ways(
        policy, 12,
        [(RunningJob("W", "qw", Resources(1, 1, 4), "b", ("b0", "b1", "b2", "b3"), "V",
                     -1000.0), 5000),
         (RunningJob("Q1", "qc", Resources(1, 1, 1), "a", ("a0",), "V", -100.0), 5000)],
        [(PendingJob("C", "qc", 0, 0, Resources(1, 1, 2)), 100),
         (PendingJob("X", "qx", 0, 0, Resources(1, 1, 5), team="U"), 100),
         (PendingJob("A", "qa", 0, 0, Resources(1, 1, 2)), 1000)],
        claims={"C": "b"})
    assert loud == quiet
    assert loud["A"][0] == 0.0 and loud["X"][0] == 200.0 and loud["W"][2] == 1


def test_a_job_too_large_for_every_pool_is_refused_not_replayed() -> None:
    trace = Trace((job("ok", 0, 10, 1), job("huge", 0, 10, 3)), "t", "trainyard", {})
    result = compare(trace, Cluster(generated_policy(trace.jobs, 2), generated=True),
                     ["fifo"])
    assert [j.job_id for j in result.submitted.jobs] == ["ok"]
    (reason,) = result.submitted.refused
    assert "3 is more than the 2 GPUs of pool 'gpu'" in reason


def test_the_generated_policy_shares_the_gpus_among_the_teams() -> None:
    trace = [job("a", 0, 1, 1, team="t1"), job("b", 0, 1, 1, team="t2"),
             job("c", 0, 1, 1, team="t3", queue="ls")]
    policy = generated_policy(trace, 64)
    assert {name: team.quotas["gpu"].gpus for name, team in policy.teams.items()} == \
        {"t1": 22, "t2": 21, "t3": 21}
    assert policy.teams["t2"].quotas["gpu"].borrow_gpus == 43
    assert {name: q.priority for name, q in policy.queues.items()} == {"default": 0, "ls": 2}
    assert policy.pools["gpu"].capacity.gpus == 64


def test_jain_is_one_without_contention_and_falls_when_one_team_waits() -> None:
    _, fifo = replay([job("a", 0, 10, 1), job("b", 0, 10, 1, team="y")], "fifo")
    assert fifo["jain"] == 1.0 and fifo["contended_seconds"] == 0
    _, srtf = replay(THREE, "srtf-oracle")
    # Contended only from 10 to 20, when c holds both GPUs: x gets 2 of its fair 1, y 0 of 1.
    assert srtf["contended_seconds"] == 10
    assert srtf["jain"] == pytest.approx(0.5)
    assert math.isclose(srtf["teams"]["y"]["fair_share_ratio"], 0.0)


def test_a_replay_stopped_by_its_time_limit_says_how_far_it_got() -> None:
    trace = Trace(tuple(job(str(i), i * 10.0, 5.0, 1) for i in range(500)), "t", "trainyard",
                  {})
    cluster = Cluster(generated_policy(trace.jobs, 2), generated=True)
    stopped = compare(trace, cluster, ["fifo"], time_limit=1e-9).summaries["fifo"]
    assert stopped["completed"] is False and stopped["unfinished"] == 500
    done = compare(trace, cluster, ["fifo"]).summaries["fifo"]
    assert done["completed"] is True and done["unfinished"] == 0 and done["jobs"] == 500
    assert done["simulated_until"] == 4995.0
