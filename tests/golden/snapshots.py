"""Random scheduler snapshots, drawn from a fixed seed, and the decisions on them as plain
data: the golden record that every refactoring of the scheduler must reproduce exactly."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from trainyard.domain.policy import Policy, Pool, Queue, Quota, Team
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler.fifo import FifoPolicy
from trainyard.scheduler.model import Decisions, PendingJob, RunningJob, Snapshot
from trainyard.scheduler.queues import QueuePolicy

HOUR = 3600.0
NOW = 50 * HOUR
TEAMS = ("vision", "nlp", "speech")
USERS = ("ann", "bob", "cat", "dan")
GPUS = tuple(f"g{i}" for i in range(8))
POOLS = {
    "gpu": Pool(PoolCapacity("gpu", max_jobs=10, cpus=32, memory_mb=65536, gpu_ids=GPUS),
                executor="local"),
    "cpu": Pool(PoolCapacity("cpu", max_jobs=6, cpus=8, memory_mb=16384), executor="local"),
    "box": Pool(PoolCapacity("box", max_jobs=4, cpus=6, memory_mb=8192,
                             gpu_ids=("d0", "d1")), executor="docker"),
}
POOL_KINDS = {"gpu": "local", "cpu": "local", "box": "docker"}


def policy_for(rng: random.Random) -> Policy:
    queues = {
        "urgent": Queue("urgent", pools=("gpu", "cpu"), priority=rng.choice((5, 10)),
                        max_running=rng.choice((None, 2))),
        "a": Queue("a", pools=("gpu", "cpu"), max_running=rng.choice((None, None, 3)),
                   weight=rng.choice((1.0, 2.0))),
        "b": Queue("b", pools=rng.choice((("gpu", "cpu"), ("cpu", "gpu"))),
                   teams=rng.choice((frozenset(), frozenset({"vision"}))),
                   users=rng.choice((frozenset(), frozenset({"dan"})))),
        "box": Queue("box", pools=("box",), preemptible=rng.choice((None, True, False))),
        "safe": Queue("safe", pools=("gpu",), preemptible=False),
    }
    teams = {}
    for team in TEAMS:
        if rng.random() < 0.2:
            continue
        quotas = {"gpu": Quota(gpus=rng.choice((2, 3)), cpus=rng.choice((None, 8.0)),
                               borrow_gpus=rng.choice((0, 2, 4)),
                               borrow_cpus=rng.choice((0.0, 8.0)))}
        if rng.random() < 0.5:
            quotas["cpu"] = Quota(cpus=rng.choice((2.0, 4.0)), borrow_cpus=rng.choice((0, 2.0)))
        members = frozenset(u for u in USERS if rng.random() < 0.4)
        teams[team] = Team(team, members=members, quotas=quotas)
    return Policy(pools=POOLS, queues=queues, teams=teams,
                  max_running=rng.choice((6, 12, 30)),
                  reserve_after_s=rng.choice((600.0, 1800.0)),
                  min_runtime_s=rng.choice((0.0, 300.0)),
                  service_levels=rng.random() < 0.7)


def team_at_submit(policy: Policy, queue: str, owner: str) -> str:
    """The team a submit gives the job: the first of the owner's teams the queue names, or
    of all the owner's teams where the queue names none."""
    teams = sorted(name for name, team in policy.teams.items() if owner in team.members)
    named = policy.queues[queue].teams
    candidates = [team for team in teams if team in named] if named else teams
    return candidates[0] if candidates else ""


def snapshot_for(rng: random.Random, policy: Policy) -> tuple[Snapshot, int]:
    """A snapshot, and the limit on running jobs FifoPolicy decides it under."""
    running: list[RunningJob] = []
    free = {name: list(pool.capacity.gpu_ids) for name, pool in policy.pools.items()}
    for i in range(rng.randint(0, 9)):
        pool = rng.choice(("gpu", "gpu", "cpu", "box"))
        gpus = min(rng.choice((0, 1, 1, 2)), len(free[pool]))
        ids = tuple(free[pool][:gpus])
        del free[pool][:gpus]
        queue = rng.choice(("a", "b", "urgent", "safe")) if pool != "box" else "box"
        running.append(RunningJob(
            f"r{i}", queue, Resources(rng.choice((0.5, 1.0, 2.0)), rng.choice((512, 2048)),
                                      gpus),
            pool, ids, team=rng.choice(TEAMS + ("",)),
            started_at=NOW - rng.uniform(0, 8 * HOUR), preempting=rng.random() < 0.08,
            sweep=rng.choice(("", "", "s1")), attained=rng.choice((0.0, 2 * HOUR, 9 * HOUR)),
            priority=rng.choice((0, 0, 1))))
    pending: list[PendingJob] = []
    for i in range(rng.randint(0, 14)):
        kind = rng.choice(("local", "local", "local", "docker"))
        queue = "box" if kind == "docker" and rng.random() < 0.8 else \
            rng.choice(("a", "a", "b", "urgent", "safe"))
        owner = rng.choice(USERS)
        pending.append(PendingJob(
            f"w{i}", queue, rng.choice((0, 0, 1, -1)), i,
            Resources(rng.choice((0.5, 1.0, 4.0)), rng.choice((512, 4096)),
                      rng.choice((0, 1, 1, 2, 4))),
            kind, owner, team_at_submit(policy, queue, owner),
            submitted_at=NOW - rng.uniform(0, 3600),
            sweep=rng.choice(("", "", "", "s1", "p1")),
            attained=rng.choice((0.0, 0.0, 3 * HOUR))))
    claims = {job.job_id: rng.choice(("gpu", "cpu")) for job in pending
              if rng.random() < 0.1}
    unavailable = {"docker": "the Docker engine is not reachable"} \
        if rng.random() < 0.1 else {}
    usage = {q: rng.uniform(0, 4 * HOUR) for q in ("a", "b", "urgent") if rng.random() < 0.6}
    sweep_limits = {"s1": rng.choice((1, 2))} if rng.random() < 0.5 else {}
    if rng.random() < 0.3:
        sweep_limits["p1"] = 1
    pools = {name: pool.capacity for name, pool in policy.pools.items()}
    max_running = rng.choice((4, 10, 30))
    return Snapshot(pending, running, now=NOW,
                    pools=pools if rng.random() < 0.9 else {}, unavailable=unavailable,
                    usage=usage, sweep_limits=sweep_limits,
                    sweep_titles={"p1": "pipeline 'etl'"}, reclaiming=claims), max_running


def by_kind(snapshot: Snapshot) -> Snapshot:
    """The snapshot as FifoPolicy reads it: one pool per kind of job, named after it."""
    local = replace(POOLS["gpu"].capacity, name="local")
    docker = replace(POOLS["box"].capacity, name="docker")
    running = [replace(run, pool=POOL_KINDS[run.pool]) for run in snapshot.running]
    return replace(snapshot, running=running,
                   pools={"local": local, "docker": docker} if snapshot.pools else {})


def as_data(decisions: Decisions) -> dict[str, Any]:
    saturated = decisions.saturated
    return {
        "admit": list(decisions.admit),
        "pools": dict(sorted(decisions.pools.items())),
        "gpu_ids": {k: list(v) for k, v in sorted(decisions.gpu_ids.items())},
        "preempt": dict(sorted(decisions.preempt.items())),
        "reclaiming": dict(sorted(decisions.reclaiming.items())),
        "saturated": None if saturated is None else [saturated.code, saturated.message],
        "pending": {k: [r.code, r.message] for k, r in sorted(decisions.pending.items())},
    }


def cases(count: int, seed: int = 14) -> Iterator[dict[str, Any]]:
    """Each case: the decisions of QueuePolicy and of FifoPolicy on one random snapshot."""
    rng = random.Random(seed)
    for _ in range(count):
        policy = policy_for(rng)
        snapshot, max_running = snapshot_for(rng, policy)
        yield {"queue": as_data(QueuePolicy(policy).schedule(snapshot)),
               "fifo": as_data(FifoPolicy(max_running).schedule(by_kind(snapshot)))}
