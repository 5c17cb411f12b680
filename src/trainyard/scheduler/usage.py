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


def team_use(running: Iterable[Holding]) -> dict[tuple[str, str], Resources]:
    """(team, pool) -> what the team's running jobs hold of the pool. A job of no team
    counts for none."""
    totals: dict[tuple[str, str], list[float]] = {}
    for run in running:
        if not run.team:
            continue
        key = (run.team, run.pool)
        total = totals.get(key)
        if total is None:
            total = totals[key] = [0.0, 0, 0]
        res = run.resources
        total[0] += res.cpus
        total[1] += res.memory_mb
        total[2] += res.gpus
    return {key: _resources(total) for key, total in totals.items()}


def pool_use(running: Iterable[Holding]) -> dict[str, PoolUse]:
    """pool -> what its running jobs hold of it, and how many they are."""
    totals: dict[str, list[float]] = {}
    jobs: dict[str, int] = {}
    for run in running:
        total = totals.get(run.pool)
        if total is None:
            total = totals[run.pool] = [0.0, 0, 0]
            jobs[run.pool] = 0
        res = run.resources
        total[0] += res.cpus
        total[1] += res.memory_mb
        total[2] += res.gpus
        jobs[run.pool] += 1
    return {pool: PoolUse(_resources(total), jobs[pool]) for pool, total in totals.items()}


def _resources(total: list[float]) -> Resources:
    return Resources(total[0], int(total[1]), int(total[2]))
