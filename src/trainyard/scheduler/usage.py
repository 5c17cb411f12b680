"""What running jobs hold, added up per pool and per team and pool: for the queue policy's
pass and for the queues overview, one function each.

Sums run in the order the jobs are given, from zero, as one `add()` after another would,
so every caller gets the very same floats."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from trainyard.domain.spec import Resources


class Holding(Protocol):
    """A running job as usage counts it (scheduler.RunningJob is one)."""

    @property
    def team(self) -> str: ...  # whose quota it draws on; "" for none

    @property
    def pool(self) -> str: ...  # the named pool it runs in

    @property
    def resources(self) -> Resources: ...  # all its workers' together


@dataclass(frozen=True)
class Held:
    team: str
    pool: str
    resources: Resources


@dataclass(frozen=True)
class PoolUse:
    used: Resources
    jobs: int


def held(running: Iterable[Holding]) -> Resources:
    """What the jobs hold together, added up in their order as one add() after another
    would: the one sum every figure of use is made by."""
    cpus, memory, gpus = 0.0, 0, 0
    for run in running:
        res = run.resources
        cpus += res.cpus
        memory += res.memory_mb
        gpus += res.gpus
    return Resources(cpus, memory, gpus)


def team_use(running: Iterable[Holding]) -> dict[tuple[str, str], Resources]:
    """(team, pool) -> what the team's running jobs hold of the pool. A job of no team
    counts for none."""
    by_team: dict[tuple[str, str], list[Holding]] = {}
    for run in running:
        if run.team:
            by_team.setdefault((run.team, run.pool), []).append(run)
    return {key: held(runs) for key, runs in by_team.items()}


def pool_use(running: Iterable[Holding]) -> dict[str, PoolUse]:
    """pool -> what its running jobs hold of it, and how many they are."""
    by_pool: dict[str, list[Holding]] = {}
    for run in running:
        by_pool.setdefault(run.pool, []).append(run)
    return {pool: PoolUse(held(runs), len(runs)) for pool, runs in by_pool.items()}
