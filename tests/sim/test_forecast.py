"""The roll-forward: starts known exactly when run times are, and jobs that never start."""

from __future__ import annotations

import random
from dataclasses import dataclass

from trainyard.domain import policy as cfg
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler.model import PendingJob
from trainyard.scheduler.snapshot import active_job
from trainyard.sim.engine import Replay
from trainyard.sim.estimates import RunTimes
from trainyard.sim.forecast import ActiveJob, LiveQueue, Scheduling, WaitingJob, forecast

NOW = 1_000_000.0


def known(seconds: float) -> RunTimes:
    return RunTimes((seconds,), "known", jitter=0.0)


def waiting(job_id: str, seq: int, run_s: float, *, gpus: int = 0, team: str = "",
            owner: str = "u", queue: str = "default") -> WaitingJob:
    return WaitingJob(PendingJob(job_id, queue, 0, seq, Resources(1, 0, gpus), owner=owner,
                                 team=team, submitted_at=NOW), known(run_s))


def running(job_id: str, seq: int, total_s: float, elapsed_s: float, *, gpus: tuple[str, ...] = (),
            team: str = "", pool: str = "local", queue: str = "default") -> ActiveJob:
    resources = Resources(1, 0, len(gpus))
    run = active_job(job_id, queue, resources, pool, gpus, team, NOW - elapsed_s, NOW)
    return ActiveJob(run, PendingJob(job_id, queue, 0, seq, resources, team=team),
                     known(total_s), elapsed_s)


def offsets(result: dict[str, object], *ids: str) -> list[tuple[float | None, float | None]]:
    out = []
    for job_id in ids:
        p = result[job_id]
        out.append((None if p.p50 is None else p.p50 - NOW,  # type: ignore[attr-defined]
                    None if p.p90 is None else p.p90 - NOW))  # type: ignore[attr-defined]
    return out


def test_fifo_starts_as_computed_by_hand() -> None:
    # Two slots. A has 200 s left, B 600 s; C (400 s) takes A's slot at 200 and ends at 600,
    # when B ends too: D and E start together then.
    queue = LiveQueue(NOW, [waiting("c", 3, 400), waiting("d", 4, 100), waiting("e", 5, 50)],
                      [running("a", 1, 300, 100), running("b", 2, 600, 0)],
                      {"local": PoolCapacity("local", max_jobs=2)})
    result = forecast(queue, Scheduling(None, max_running=2), rolls=5).predictions
    assert offsets(result, "c", "d", "e") == [(200, 200), (600, 600), (600, 600)]
    assert all(p.as_of == NOW and not p.cannot_start for p in result.values())


def quota_policy(**queue: object) -> cfg.Policy:
    ids = ("0", "1", "2", "3")
    return cfg.Policy(
        pools={"gpu": cfg.Pool(PoolCapacity("gpu", max_jobs=10, gpu_ids=ids))},
        queues={"default": cfg.Queue("default", pools=("gpu",), **queue)},  # type: ignore[arg-type]
        teams={name: cfg.Team(name, quotas={"gpu": cfg.Quota(gpus=2)}) for name in "ab"},
        max_running=10, service_levels=False)


def test_quotas_starts_as_computed_by_hand() -> None:
    # Four GPUs, teams a and b two each, no borrowing. a1 holds a's two (100 s left), b1 one
    # of b's (50 s left). a2 waits for a1; b2 (two GPUs) for b1; b3 (one) starts at once, in
    # the room b2 cannot use, and c1 (three GPUs of b's two) never can.
    queue = LiveQueue(
        NOW,
        [waiting("a2", 3, 200, gpus=1, team="a"), waiting("b2", 4, 100, gpus=2, team="b"),
         waiting("b3", 5, 30, gpus=1, team="b"), waiting("c1", 6, 10, gpus=3, team="b")],
        [running("a1", 1, 150, 50, gpus=("0", "1"), team="a", pool="gpu"),
         running("b1", 2, 60, 10, gpus=("2",), team="b", pool="gpu")],
        {"gpu": PoolCapacity("gpu", max_jobs=10, gpu_ids=("0", "1", "2", "3"))})
    result = forecast(queue, Scheduling(quota_policy()), rolls=3).predictions
    assert offsets(result, "b3", "b2", "a2") == [(0, 0), (50, 50), (100, 100)]
    never = result["c1"]
    assert never.p50 is None and never.p90 is None
    assert "team 'b'" in never.cannot_start and "quota" in never.cannot_start


def test_a_queue_closed_to_the_owner_says_so() -> None:
    policy = quota_policy(users=frozenset({"alice"}))
    queue = LiveQueue(NOW, [waiting("x", 1, 10, gpus=1, team="a", owner="mallory")], [],
                      {"gpu": PoolCapacity("gpu", max_jobs=10, gpu_ids=("0", "1", "2", "3"))})
    result = forecast(queue, Scheduling(policy), rolls=2).predictions
    assert result["x"].p50 is None
    assert "no longer takes jobs from 'mallory'" in result["x"].cannot_start


def test_the_bound_spreads_with_the_run_times() -> None:
    # One slot; the running job ends in 100 s or 1,000 s, as often each: the waiting job's
    # median lies at one of them and its bound at the later.
    spread = RunTimes((100.0, 1000.0), "two", jitter=0.0)
    run = running("a", 1, 0, 0)
    queue = LiveQueue(NOW, [waiting("b", 2, 10)], [ActiveJob(run.run, run.job, spread, 0.0)],
                      {"local": PoolCapacity("local", max_jobs=1)})
    result = forecast(queue, Scheduling(None, max_running=1), rolls=20, seed=3).predictions
    p50, p90 = offsets(result, "b")[0]
    assert p50 in (100, 1000) and p90 == 1000


def test_a_backing_off_job_waits_for_its_back_off() -> None:
    queue = LiveQueue(NOW, [WaitingJob(waiting("r", 1, 10).job, known(10), held_s=5,
                                       arrives_at=NOW + 40)], [],
                      {"local": PoolCapacity("local", max_jobs=1)})
    result = forecast(queue, Scheduling(None, max_running=1), rolls=2).predictions
    assert offsets(result, "r") == [(40, 40)]


def test_past_the_horizon_there_is_no_time() -> None:
    queue = LiveQueue(NOW, [waiting("late", 2, 10)], [running("a", 1, 10_000, 0)],
                      {"local": PoolCapacity("local", max_jobs=1)})
    result = forecast(queue, Scheduling(None, max_running=1), rolls=2, horizon_s=3600)
    late = result.predictions["late"]
    assert late.p50 is None and late.p90 is None and not late.cannot_start
    assert late.horizon_s == 3600


def test_a_window_gives_the_starts_a_whole_backlog_gives() -> None:
    jobs = [waiting(f"w{i}", i + 10, 60 + i) for i in range(40)]
    queue = LiveQueue(NOW, jobs, [running("a", 1, 100, 0), running("b", 2, 30, 0)],
                      {"local": PoolCapacity("local", max_jobs=2)})
    whole = forecast(queue, Scheduling(None, max_running=2), rolls=1, window=1000,
                     resolution=0.0).predictions
    windowed = forecast(queue, Scheduling(None, max_running=2), rolls=1, window=4,
                        resolution=0.0).predictions
    assert whole == windowed


def test_a_cpu_budget_stops_the_rolls_after_the_fewest() -> None:
    queue = LiveQueue(NOW, [waiting(f"w{i}", i + 2, 50 + i) for i in range(30)],
                      [running("a", 1, 100, 0)], {"local": PoolCapacity("local", max_jobs=1)})
    budgeted = forecast(queue, Scheduling(None, max_running=1), rolls=10, cpu_budget_s=0.0)
    assert budgeted.rolls == 3
    assert forecast(queue, Scheduling(None, max_running=1), rolls=10).rolls == 10
    assert all(p.p50 is not None for p in budgeted.predictions.values())


def test_a_window_keeps_each_group_of_alike_jobs_in_sight() -> None:
    # A sweep that may run one trial at a time waits ahead of another user's job, and a team
    # over its quota ahead of another team's: the later job starts at once either way, as
    # with the whole backlog in sight.
    trials = [WaitingJob(PendingJob(f"t{i}", "default", 0, i + 2, Resources(1, 0, 0),
                                    owner="u", submitted_at=NOW, sweep="s"), known(100))
              for i in range(10)]
    other = waiting("x", 20, 10, owner="v")
    queue = LiveQueue(NOW, [*trials, other], [], {"local": PoolCapacity("local", max_jobs=20)},
                      sweep_limits={"s": 1})
    for window in (2, 1000):
        result = forecast(queue, Scheduling(None, max_running=20), rolls=1,
                          window=window).predictions
        assert offsets(result, "x", "t9") == [(0, 0), (900, 900)]
    team_a = [waiting(f"a{i}", i + 2, 100, gpus=2, team="a") for i in range(6)]
    queue = LiveQueue(NOW, [*team_a, waiting("b1", 20, 10, gpus=1, team="b")],
                      [running("r", 1, 400, 0, gpus=("0", "1"), team="a", pool="gpu")],
                      {"gpu": PoolCapacity("gpu", max_jobs=10, gpu_ids=("0", "1", "2", "3"))})
    for window in (3, 1000):
        result = forecast(queue, Scheduling(quota_policy()), rolls=1, window=window)
        assert offsets(result.predictions, "b1") == [(0, 0)]


def test_more_than_a_window_starts_at_once_when_there_is_room() -> None:
    jobs = [waiting(f"w{i}", i + 1, 10) for i in range(30)]
    queue = LiveQueue(NOW, jobs, [], {"local": PoolCapacity("local", max_jobs=30)})
    result = forecast(queue, Scheduling(None, max_running=30), rolls=1, window=4).predictions
    assert {p.p50 for p in result.values()} == {NOW}


@dataclass(frozen=True)
class Wakes(Scheduling):
    """The same policy, its replay passing at every wake-up (not quiet), or at those after
    each pass that admitted jobs (not settling)."""

    quiet: bool = True
    settling: bool = True

    def replay(self, queue: LiveQueue) -> Replay:
        replay = super().replay(queue)
        replay.quiet_wakes = replay.quiet_wakes and self.quiet
        if not self.settling:
            replay.admissions_settle = None
        return replay


def test_passing_over_the_wake_ups_that_cannot_matter_predicts_the_same_starts() -> None:
    # Three teams own 4 of 8 GPUs between them and borrow the rest; a job may be preempted
    # after 300 s, for its team's quota or for a less-served job of its team.
    ids = tuple(str(i) for i in range(8))
    policy = cfg.Policy(
        pools={"gpu": cfg.Pool(PoolCapacity("gpu", max_jobs=20, gpu_ids=ids))},
        queues={"default": cfg.Queue("default", pools=("gpu",))},
        teams={name: cfg.Team(name, quotas={"gpu": cfg.Quota(gpus=owned, borrow_gpus=8)})
               for name, owned in (("a", 2), ("b", 1), ("c", 1))},
        max_running=20, min_runtime_s=300.0)
    draw = random.Random(5)
    jobs = [waiting(f"w{i}", 10 + i, draw.choice((60, 400, 1500, 7000)),
                    gpus=draw.choice((1, 1, 2, 4)), team=draw.choice("abc")) for i in range(40)]
    active = [running("r0", 1, 5000, 400, gpus=("0", "1", "2"), team="a", pool="gpu"),
              running("r1", 2, 900, 100, gpus=("3", "4", "5", "6"), team="b", pool="gpu")]
    queue = LiveQueue(NOW, jobs, active,
                      {"gpu": PoolCapacity("gpu", max_jobs=20, gpu_ids=ids)})
    # At full resolution: a coarser one takes together what falls near each event, and
    # the wake-ups passed over are events the other roll's grid has.
    quiet, unsettled, loud = (forecast(queue, scheduling, rolls=1, resolution=0.0) for
                              scheduling in (Scheduling(policy), Wakes(policy, settling=False),
                                             Wakes(policy, quiet=False)))
    starts = [offsets(f.predictions, *(j.job.job_id for j in jobs))
              for f in (quiet, unsettled, loud)]
    assert starts[0] == starts[1] == starts[2]
    assert quiet.passes < unsettled.passes < loud.passes
