"""Teams' quotas must fit in their pools: each quota alone, and all of a pool's quotas added
up, for each resource the pool counts. A pool whose jobs Kueue admits takes no quota: Kueue
holds its quotas."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic_core import InitErrorDetails

from trainyard.services.policy_file.problems import problem_at, show

if TYPE_CHECKING:
    from trainyard.services.policy_file.schema import PoolModel, QuotaModel, TeamModel

# The problems this module finds.
KINDS = frozenset({"over_pool", "over_pool_together", "kueue_quota"})
_SLACK = 1e-9  # CPUs are fractional: what rounding may add up to


def quota_problems(pools: Mapping[str, PoolModel], teams: Mapping[str, TeamModel]
                   ) -> list[InitErrorDetails]:
    found: list[InitErrorDetails] = []
    for team_name, team in teams.items():
        for pool_name, quota in team.quota.items():
            if pool_name in pools and _kueue(pools[pool_name]):
                found.append(problem_at(("teams", team_name, "quota", pool_name),
                                        "kueue_quota", None, pool=show(pool_name)))
            elif pool_name in pools:
                found += _alone(("teams", team_name, "quota", pool_name), quota,
                                pool_name, pools[pool_name])
    for pool_name, pool in pools.items():
        if _kueue(pool):
            continue
        owed = {name: team.quota[pool_name] for name, team in teams.items()
                if pool_name in team.quota}
        found += _together(pool_name, pool, owed)
    return found


def _kueue(pool: PoolModel) -> bool:
    table = pool.kubernetes  # as written, where the rest of the pool's table was not valid
    admission = table.get("admission") if isinstance(table, dict) else \
        getattr(table, "admission", None)
    return admission == "kueue"


def _alone(path: tuple[str, ...], quota: QuotaModel, pool_name: str, pool: PoolModel
           ) -> list[InitErrorDetails]:
    found = []
    pool_shown = show(pool_name)
    if pool.cpus is not None and quota.cpus is not None and quota.cpus > pool.cpus + _SLACK:
        found.append(problem_at((*path, "cpus"), "over_pool", quota.cpus, pool=pool_shown,
                                amount=f"{quota.cpus:g}", limit=f"{pool.cpus:g} CPUs"))
    if (pool.memory_mb is not None and quota.memory_mb is not None
            and quota.memory_mb > pool.memory_mb):
        found.append(problem_at((*path, "memory_mb"), "over_pool", quota.memory_mb,
                                pool=pool_shown, amount=f"{quota.memory_mb} MiB",
                                limit=f"{pool.memory_mb} MiB"))
    if quota.gpus is not None and quota.gpus > pool.gpu_count:
        found.append(problem_at((*path, "gpus"), "over_pool", quota.gpus, pool=pool_shown,
                                amount=f"{quota.gpus}", limit=f"{pool.gpu_count} GPUs"))
    return found


def _together(pool_name: str, pool: PoolModel, owed: Mapping[str, QuotaModel]
              ) -> list[InitErrorDetails]:
    """Reported at the pool, and only when each quota fits on its own, so that one mistake
    reads as one problem."""
    found = []
    limits = (("cpus", "cpus", "CPUs", pool.cpus),
              ("memory_mb", "memory_mb", "MiB", pool.memory_mb),
              ("gpus", pool.gpu_key, "GPUs", pool.gpu_count))
    for field, key, unit, limit in limits:
        if limit is None or not owed:
            continue
        amounts: dict[str, float] = {team: getattr(quota, field) for team, quota in owed.items()
                                     if getattr(quota, field) is not None}
        total = sum(amounts.values())
        if total > limit + _SLACK and all(a <= limit + _SLACK for a in amounts.values()):
            parts = ", ".join(f"{team} {amount:g}" for team, amount in amounts.items() if amount)
            found.append(problem_at(("pools", pool_name, key), "over_pool_together", total,
                                    total=f"{total:g}", unit=unit, parts=parts,
                                    limit=f"{limit:g}"))
    return found
