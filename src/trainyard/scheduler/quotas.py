"""Team quotas in one pool: what each team owns, what it may borrow of what others leave
idle, and the running sums that let a pass check a job against every other team at once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from trainyard.domain import policy as cfg
from trainyard.domain.spec import Resources

ZERO = Resources(0.0, 0, 0)
NO_QUOTA = cfg.Quota(cpus=0.0, memory_mb=0, gpus=0)  # a team without quota in a pool
NO_TEAM = cfg.Quota(cpus=0.0, memory_mb=0, gpus=0, borrow_cpus=float("inf"),
                    borrow_memory_mb=2**62, borrow_gpus=2**31)  # a job of no team
# What a rounding may cost the borrowing sums, per operation and relative to the magnitudes
# added up: 2**9 times the 2**-53 of one rounding of a double (see Borrowing.cannot_borrow).
_ROUNDING = 2.0**-44

# A team's part in a pool's borrowing sums: what it owns and leaves unused (cpus, memory,
# gpus), then what it uses beyond what it owns (cpus, memory, gpus).
Terms = tuple[float, int, int, float, int, int]
Over = tuple[float, int, int]  # how far a team would go past its quota: cpus, memory, gpus
_Marked = tuple[tuple[float | int, ...], dict[str, Terms | None]]


@dataclass(frozen=True)
class PoolQuotas:
    """The team quotas in one pool (by pool name), as the policy declares them."""

    quotas: dict[str, cfg.Quota]  # team -> quota; of two teams of one name, the last
    first: dict[str, cfg.Quota]  # team -> quota; of two teams of one name, the first
    scale: float  # the sum of |quota cpus|, for the rounding bound


def pool_quotas(policy: cfg.Policy, pool: str) -> PoolQuotas | None:
    """The quotas teams hold in the pool; None where no team holds one."""
    quotas = {t.name: t.quotas[pool] for t in policy.teams.values() if pool in t.quotas}
    if not quotas:
        return None
    first: dict[str, cfg.Quota] = {}
    for team in policy.teams.values():
        if pool in team.quotas:
            first.setdefault(team.name, team.quotas[pool])
    return PoolQuotas(quotas, first, sum(abs(quota.cpus or 0.0) for quota in quotas.values()))


def unpromised(quotas: PoolQuotas, pool: cfg.Pool) -> Resources:
    """The pool's capacity that no team's quota promises."""
    cpus, memory, gpus = 0.0, 0, 0  # added up as add() would, a quota's None as 0
    for quota in quotas.quotas.values():
        cpus += quota.cpus or 0.0
        memory += quota.memory_mb or 0
        gpus += quota.gpus or 0
    cap = pool.capacity
    return beyond(Resources(cap.cpus or 0.0, cap.memory_mb or 0, cap.gpus),
                  Resources(cpus, memory, gpus))


@dataclass
class Borrowing:
    """In one pass, the sums over a pool's quota teams of quota owned but unused and of use
    beyond what is owned, with each team's part as no_idle_exactly computes it. They are
    kept up to date as jobs are admitted, so that checking a job subtracts its own team's
    part instead of adding up every other team's."""

    quotas: PoolQuotas
    terms: dict[str, Terms] = field(default_factory=dict)
    idle_cpus: float = 0.0
    idle_memory: int = 0
    idle_gpus: int = 0
    lent_cpus: float = 0.0
    lent_memory: int = 0
    lent_gpus: int = 0
    use_cpus: float = 0.0  # the sum of |use cpus| over the teams
    use_peak: float = 0.0  # its largest in the pass
    updates: int = 0

    @classmethod
    def of(cls, quotas: PoolQuotas, team_use: Mapping[tuple[str, str], Resources],
           pool: str) -> Borrowing:
        sums = cls(quotas)
        parts = sums.terms
        idle_cpus = lent_cpus = use_cpus = 0.0
        idle_memory = idle_gpus = lent_memory = lent_gpus = 0
        for team, quota in quotas.quotas.items():  # as set() would, for each in turn
            use = team_use.get((team, pool), ZERO)
            parts[team] = new = terms(quota, use)
            idle_cpus += new[0]
            idle_memory += new[1]
            idle_gpus += new[2]
            lent_cpus += new[3]
            lent_memory += new[4]
            lent_gpus += new[5]
            use_cpus += abs(use.cpus)
        sums.idle_cpus, sums.idle_memory, sums.idle_gpus = idle_cpus, idle_memory, idle_gpus
        sums.lent_cpus, sums.lent_memory, sums.lent_gpus = lent_cpus, lent_memory, lent_gpus
        sums.use_cpus = sums.use_peak = use_cpus
        sums.updates = len(parts)
        return sums

    def set(self, team: str, use: Resources, before: Resources) -> None:
        """The team, one of the pool's quota teams, now uses `use` of the pool, where it
        used `before`."""
        new = terms(self.quotas.quotas[team], use)
        old = self.terms.get(team)
        if old is not None:
            self.idle_cpus -= old[0]
            self.idle_memory -= old[1]
            self.idle_gpus -= old[2]
            self.lent_cpus -= old[3]
            self.lent_memory -= old[4]
            self.lent_gpus -= old[5]
        self.terms[team] = new
        self.idle_cpus += new[0]
        self.idle_memory += new[1]
        self.idle_gpus += new[2]
        self.lent_cpus += new[3]
        self.lent_memory += new[4]
        self.lent_gpus += new[5]
        self.use_cpus += abs(use.cpus) - abs(before.cpus)
        self.use_peak = max(self.use_peak, self.use_cpus)
        self.updates += 1

    def mark(self, teams: Iterable[str]) -> _Marked:
        """What back() restores: the sums, and these teams' parts."""
        return ((self.idle_cpus, self.idle_memory, self.idle_gpus, self.lent_cpus,
                 self.lent_memory, self.lent_gpus, self.use_cpus, self.use_peak, self.updates),
                {team: self.terms.get(team) for team in teams})

    def back(self, marked: _Marked) -> None:
        """The sums exactly as mark() found them (set() twice would leave roundings)."""
        sums, parts = marked
        (self.idle_cpus, self.idle_memory, self.idle_gpus, self.lent_cpus, self.lent_memory,
         self.lent_gpus, self.use_cpus, self.use_peak, self.updates) = sums  # type: ignore[assignment]
        for team, part in parts.items():
            if part is None:
                self.terms.pop(team, None)
            else:
                self.terms[team] = part

    def cannot_borrow(self, team: str, over: Over, base: Resources) -> bool | None:
        """Whether `over` is more than the team may borrow: the other teams' idle quota plus
        `base` (capacity promised to no team), less what the others borrowed already; as the
        team-by-team loop of no_idle_exactly finds, or None where the sums cannot settle it.

        Memory and GPUs are integers, whose sums are exact in any order. The CPU sums are
        floats added in another order than the loop adds them, so the two may differ by
        rounding: each of the fewer than 10 * (updates + 2) operations between them rounds
        by at most 2**-53 of a magnitude below `scale` (every term is at most its quota plus
        its use), so a difference beyond the bound below (50 times that) settles it as the
        loop would. Nearer than that (a tie, in practice), with a float in the integer sums,
        or with an inf or a nan anywhere, it is left to the loop."""
        mine = self.terms.get(team)
        if mine is None:
            idle_cpus, idle_memory, idle_gpus = self.idle_cpus, self.idle_memory, self.idle_gpus
            lent_cpus, lent_memory, lent_gpus = self.lent_cpus, self.lent_memory, self.lent_gpus
        else:
            idle_cpus = self.idle_cpus - mine[0]
            idle_memory = self.idle_memory - mine[1]
            idle_gpus = self.idle_gpus - mine[2]
            lent_cpus = self.lent_cpus - mine[3]
            lent_memory = self.lent_memory - mine[4]
            lent_gpus = self.lent_gpus - mine[5]
        free_memory = base.memory_mb + idle_memory - lent_memory
        free_gpus = base.gpus + idle_gpus - lent_gpus
        if type(free_memory) is not int or type(free_gpus) is not int:
            return None
        over_cpus, over_memory, over_gpus = over
        if over_memory > free_memory or over_gpus > free_gpus:
            return True
        beyond_cpus = over_cpus - ((base.cpus + idle_cpus - lent_cpus) + 1e-9)
        scale = 2 * (abs(base.cpus) + self.quotas.scale + self.use_peak + abs(over_cpus) + 1)
        bound = _ROUNDING * (self.updates + 2) * scale
        if beyond_cpus > bound:
            return True
        if beyond_cpus < -bound:
            return False
        return None


def no_idle_exactly(team: str, over: Resources, pool: str, idle: Resources,
                    quotas: PoolQuotas, team_use: Mapping[tuple[str, str], Resources]) -> bool:
    """What Borrowing.cannot_borrow answers, added up team by team: the quota each other team
    owns and does not use, and what it uses beyond what it owns (terms() gives both), in
    plain numbers in the order add() would add them, from `idle` (capacity promised to no
    team)."""
    idle_cpus, idle_memory, idle_gpus = idle.cpus, idle.memory_mb, idle.gpus
    lent_cpus, lent_memory, lent_gpus = 0.0, 0, 0
    for other, quota in quotas.quotas.items():
        if other != team:
            part = terms(quota, team_use.get((other, pool), ZERO))
            idle_cpus += part[0]
            idle_memory += part[1]
            idle_gpus += part[2]
            lent_cpus += part[3]
            lent_memory += part[4]
            lent_gpus += part[5]
    return over.cpus > (idle_cpus - lent_cpus) + 1e-9 or \
        over.memory_mb > idle_memory - lent_memory or over.gpus > idle_gpus - lent_gpus


def over_quota(use: Resources, need: Resources, quota: cfg.Quota) -> Over:
    """How far `use` and `need` together go past the quota: beyond(add(use, need), quota),
    as a tuple."""
    return (max(0.0, (use.cpus + need.cpus) - quota.cpus) if quota.cpus is not None else 0.0,
            max(0, (use.memory_mb + need.memory_mb) - quota.memory_mb)
            if quota.memory_mb is not None else 0,
            max(0, (use.gpus + need.gpus) - quota.gpus) if quota.gpus is not None else 0)


def beyond_borrowing(over: Over, quota: cfg.Quota) -> bool:
    """Whether using `over` beyond its quota is more than the team may borrow."""
    return over[0] > quota.borrow_cpus or over[1] > quota.borrow_memory_mb or \
        over[2] > quota.borrow_gpus


def terms(quota: cfg.Quota, use: Resources) -> Terms:
    """What the team owns and leaves unused (the quota, a None as 0, beyond `use`), then
    beyond(use, quota), as one tuple."""
    return (max(0.0, (quota.cpus or 0.0) - use.cpus),
            max(0, (quota.memory_mb or 0) - use.memory_mb),
            max(0, (quota.gpus or 0) - use.gpus),
            max(0.0, use.cpus - quota.cpus) if quota.cpus is not None else 0.0,
            max(0, use.memory_mb - quota.memory_mb) if quota.memory_mb is not None else 0,
            max(0, use.gpus - quota.gpus) if quota.gpus is not None else 0)


def beyond(used: Resources, limit: Resources | cfg.Quota) -> Resources:
    """How far `used` goes past `limit`, per resource; a resource it does not name is never
    exceeded."""
    return Resources(
        max(0.0, used.cpus - limit.cpus) if limit.cpus is not None else 0.0,
        max(0, used.memory_mb - limit.memory_mb) if limit.memory_mb is not None else 0,
        max(0, used.gpus - limit.gpus) if limit.gpus is not None else 0)


def quota_sentence(team: str, pool: str, quota: cfg.Quota, why: str) -> str:
    owned = ", ".join(part for part in (
        f"{quota.gpus} GPUs" if quota.gpus else "",
        f"{quota.cpus:g} CPUs" if quota.cpus else "",
        f"{quota.memory_mb} MiB" if quota.memory_mb else "") if part) or "no quota"
    who = f"team {team!r}" if team else "a job of no team"
    return f"{who} has used its {owned} of quota in pool {pool!r} and {why}"
