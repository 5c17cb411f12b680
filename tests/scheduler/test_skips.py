"""A replay's passes that pass over the jobs whose turn can change nothing
(scheduler/skips.py, QueuePolicy(every_reason=False), OrderedPreemptive's early end) decide
exactly what passes that look at every waiting job decide: each job starts, ends and is
preempted at the same times, under each policy, on backlogs deep enough that most of every
pass is passed over, and on clusters that reach each rule (quotas and borrowing, long
waiters holding room, service levels, queue limits, priorities, two pools, CPU-only jobs)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

import pytest

from trainyard.domain import policy as cfg
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler.backlog import Backlog, ShapeIndex, queue_order
from trainyard.scheduler.model import PendingJob
from trainyard.sim.cluster import generated_policy, submit
from trainyard.sim.policies import replay_for
from trainyard.sim.trace import TraceJob, generate_trace

GPUS = 16
POLICIES = ("priority", "default", "srtf-oracle", "las")


def trace(seed: int, load: float, count: int = 260) -> list[TraceJob]:
    """A generated trace, a queue per team, some jobs asking for no GPU and some CPUs."""
    rng = random.Random(seed)
    jobs = []
    for job in generate_trace(count, GPUS, load=load, seed=seed):
        gpus = 0 if rng.random() < 0.1 else job.gpus
        jobs.append(replace(job, queue=job.team, gpus=gpus, cpus=float(rng.choice((1, 2, 4))),
                            memory_mb=rng.choice((512, 1024))))
    return jobs


def plain(jobs: list[TraceJob]) -> cfg.Policy:
    return generated_policy(jobs, GPUS)


def no_reserve(jobs: list[TraceJob]) -> cfg.Policy:
    return replace(plain(jobs), reserve_after_s=0.0)


def no_levels(jobs: list[TraceJob]) -> cfg.Policy:
    return replace(plain(jobs), service_levels=False, min_runtime_s=0.0)


def limited(jobs: list[TraceJob]) -> cfg.Policy:
    """Queues of unequal priority, one capped, and a global limit under the GPUs' jobs."""
    policy = plain(jobs)
    queues = {name: replace(queue, priority=i % 2, max_running=3 if i == 0 else None)
              for i, (name, queue) in enumerate(sorted(policy.queues.items()))}
    return replace(policy, queues=queues, max_running=9)


def no_teams(jobs: list[TraceJob]) -> cfg.Policy:
    return replace(plain(jobs), teams={})


def counted(jobs: list[TraceJob]) -> cfg.Policy:
    """A pool that counts CPUs and memory too: a job can lack those with GPUs free."""
    policy = plain(jobs)
    pool = policy.pools["gpu"]
    capacity = replace(pool.capacity, cpus=24.0, memory_mb=12 * 1024)
    return replace(policy, pools={"gpu": replace(pool, capacity=capacity)})


def two_pools(jobs: list[TraceJob]) -> cfg.Policy:
    """Two pools, the queues preferring one or the other, quotas in the first only."""
    policy = plain(jobs)
    a = cfg.Pool(PoolCapacity("a", max_jobs=len(jobs), gpu_ids=tuple(f"a{i}" for i in range(12))))
    b = cfg.Pool(PoolCapacity("b", max_jobs=6, gpu_ids=tuple(f"b{i}" for i in range(4))))
    queues = {name: replace(queue, pools=("a", "b") if i % 2 else ("b", "a"))
              for i, (name, queue) in enumerate(sorted(policy.queues.items()))}
    teams = {name: cfg.Team(name, quotas={"a": cfg.Quota(gpus=3, borrow_gpus=9)})
             for name in policy.teams}
    return replace(policy, pools={"a": a, "b": b}, queues=queues, teams=teams)


CLUSTERS: dict[str, Callable[[list[TraceJob]], cfg.Policy]] = {
    "plain": plain, "no-reserve": no_reserve, "no-levels": no_levels, "limited": limited,
    "no-teams": no_teams, "counted": counted, "two-pools": two_pools}


def lives(name: str, policy: cfg.Policy, jobs: list[TraceJob], exhaustive: bool
          ) -> tuple[list[tuple[str, float | None, float | None, int]], int]:
    submitted = submit(jobs, policy)
    teams = sorted({job.team for job in submitted.jobs})
    gpus = sum(len(pool.capacity.gpu_ids) for pool in policy.pools.values())
    replay = replay_for(name, policy, gpus, teams, exhaustive=exhaustive)
    outcome = replay.run(submitted.pending, [j.duration for j in submitted.jobs],
                         [j.team for j in submitted.jobs], 0.0)
    assert outcome.completed
    return ([(j.pending.job_id, j.first_start, j.finish, j.preemptions) for j in outcome.jobs],
            outcome.preemptions)


@pytest.mark.parametrize("cluster", list(CLUSTERS))
@pytest.mark.parametrize("seed,load", [(1, 6.0), (2, 1.5)])
def test_passing_over_decides_what_looking_at_every_job_decides(
        cluster: str, seed: int, load: float) -> None:
    jobs = trace(seed, load)
    policy = CLUSTERS[cluster](jobs)
    for name in POLICIES:
        looked, looked_preemptions = lives(name, policy, jobs, exhaustive=True)
        passed, passed_preemptions = lives(name, policy, jobs, exhaustive=False)
        assert len(looked) == len(jobs)
        assert sum(1 for _, start, _, _ in looked if start is not None) > 0
        differ = [(a, b) for a, b in zip(looked, passed, strict=True) if a != b]
        assert not differ, f"{cluster}/{name}: first of {len(differ)} differing: {differ[0]}"
        assert passed_preemptions == looked_preemptions


def pending(seq: int, queue: str, gpus: int, priority: int = 0) -> PendingJob:
    return PendingJob(job_id=f"j{seq}", queue=queue, priority=priority, seq=seq,
                      resources=Resources(1.0, 1, gpus), owner="ann")


def fresh_index(backlog: Backlog, queue: str) -> ShapeIndex:
    index = ShapeIndex()
    for at, job in enumerate(backlog.queues.get(queue, ())):
        index.add(at, job, queue_order(job))
    return index


def test_the_shape_index_stays_what_a_fresh_one_would_be_as_jobs_come_and_go() -> None:
    rng = random.Random(7)
    backlog = Backlog()
    for seq in range(40):
        backlog.add(pending(seq, rng.choice("xy"), rng.choice((0, 1, 4)), rng.choice((0, 1))))
    assert backlog.index("x").keys  # from now on kept by add and remove
    waiting = [f"j{seq}" for seq in range(40)]
    for seq in range(40, 160):
        if rng.random() < 0.5 and waiting:
            backlog.remove(waiting.pop(rng.randrange(len(waiting))))
        else:
            backlog.add(pending(seq, rng.choice("xy"), rng.choice((0, 1, 4)),
                                rng.choice((0, 1))))
            waiting.append(f"j{seq}")
        for queue in "xy":
            assert backlog.index(queue) == fresh_index(backlog, queue)
        gpus = [backlog.get(job_id).resources.gpus for job_id in waiting]  # type: ignore[union-attr]
        assert backlog.fewest_gpus == (min(gpus) if gpus else None)
    for job_id in waiting:
        backlog.remove(job_id)
    assert backlog.index("x") == ShapeIndex() and backlog.fewest_gpus is None
