"""Preemption: which running jobs may be stopped for a waiting one, and the two reasons a
pass stops them. Reclaim gives borrowed quota back to the team that owns it; demotion stops
a team's more-served jobs for its less-served one (service levels, scheduler.attained).
Both take their victims among the jobs preemptible() allows, and only for a job that fits
in none of its pools; what they free is claimed for that job (Decisions.reclaiming)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from trainyard.domain import policy as cfg
from trainyard.domain.pools import add, allocate_gpus, shortfall
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler.accounting import Ledger, PoolRoom
from trainyard.scheduler.model import PendingJob, PendingReason, RunningJob
from trainyard.scheduler.quotas import (
    NO_QUOTA,
    ZERO,
    PoolQuotas,
    beyond,
    beyond_borrowing,
    over_quota,
    pool_quotas,
)

_NEVER = cfg.Queue("", pools=(), preemptible=False)  # a queue the policy no longer has
# A service group's jobs in a pool: those that may be preempted, as (level, job), most
# served and then newest first; and those already asked to stop, whose room is on its way.
_Ranked = tuple[list[tuple[int, RunningJob]], list[RunningJob]]
_NO_VICTIMS: _Ranked = ([], [])


def preemptible_among(runs: Iterable[RunningJob], policy: cfg.Policy, now: float
                      ) -> list[RunningJob]:
    """Those of the running jobs that may be stopped for another at `now`, in their order:
    each is not stopping already, its queue allows preemption, and it has run the policy's
    minimum runtime (so that no job thrashes). The one rule for reclaim and for demotion
    alike, and for when the replay must look again."""
    queues, least = policy.queues, policy.min_runtime_s
    return [run for run in runs if not run.preempting and
            queues.get(run.queue, _NEVER).may_preempt and now - run.started_at >= least]


def preemptible(run: RunningJob, policy: cfg.Policy, now: float) -> bool:
    """Whether this one running job may be stopped for another at `now` (preemptible_among)."""
    return bool(preemptible_among((run,), policy, now))


def preemptible_from(run: RunningJob, policy: cfg.Policy) -> float | None:
    """The first time, to the float, at which preemptible() allows stopping the running
    job; None: never (its queue is protected, or it stops already)."""
    at = run.started_at + max(0.0, policy.min_runtime_s)
    if preemptible_among((run,), policy, at):  # the usual case: at the minimum already
        return at
    if not preemptible(run, policy, math.inf):
        return None
    while not preemptible(run, policy, at):  # a rounding short of it: a step or two
        at = math.nextafter(at, math.inf)
    return at


def reclaims_for(team: str, quotas: PoolQuotas, use: Resources, need: Resources) -> bool:
    """Whether a reclaim may take quota back for a waiting job of `team` asking `need`, in a
    pool with these quotas where its team's running jobs hold `use`: only quota a team owns
    is reclaimed for it, so the job must fit within its team's quota there. The one rule for
    Preemption.reclaim and for when the replay must look again."""
    quota = quotas.first.get(team)
    return quota is not None and over_quota(use, need, quota) == (0.0, 0, 0)


def gives_back(team: str, quotas: PoolQuotas, use: Resources) -> bool:
    """Whether a reclaim may stop a running job of `team` in a pool with these quotas, where
    its team's running jobs hold `use`: the team owns no quota there (a job of no team
    included), or holds more than it owns. The one rule for Preemption.reclaim and for
    when the replay must look again."""
    quota = quotas.quotas.get(team)
    return quota is None or beyond(use, quota) != ZERO


def _gives_back_once(found: dict[str, bool], team: str, quotas: PoolQuotas,
                     use: Resources) -> bool:
    gives = found.get(team)
    if gives is None:
        gives = found[team] = gives_back(team, quotas, use)
    return gives


# (team, pool) -> what the team's running jobs hold of the pool, as
# scheduler.usage.team_use adds it up in the snapshot's order.
TeamUse = Mapping[tuple[str, str], Resources]
# For the replay: the running job; what each team's running jobs hold of each pool; and,
# for each team with jobs waiting, at most what the least of them asks of each resource.
ReclaimVictim = Callable[[RunningJob, TeamUse, Mapping[str, Resources]], bool]


def _quotas_by_pool(policy: cfg.Policy) -> Callable[[str], PoolQuotas | None]:
    """pool_quotas for the policy, each pool's worked out once: the replay asks often."""
    found: dict[str, PoolQuotas | None] = {}

    def of(pool: str) -> PoolQuotas | None:
        if pool not in found:
            found[pool] = pool_quotas(policy, pool)
        return found[pool]

    return of


def reclaim_victim(policy: cfg.Policy) -> ReclaimVictim:
    """For the replay: whether a reclaim may stop this running job now, with nothing else
    happening: its pool has team quotas, gives_back() says a reclaim may stop it, and a job
    of another team waits that reclaims_for() allows, taking the least that team's waiting
    jobs ask (a job asking more only goes further past its quota). Not whether it has run
    long enough (preemptible())."""
    quotas = _quotas_by_pool(policy)

    def victim(run: RunningJob, team_use: TeamUse, least: Mapping[str, Resources]) -> bool:
        pool = run.pool
        found = quotas(pool)
        if found is None or not gives_back(run.team, found,
                                           team_use.get((run.team, pool), ZERO)):
            return False
        return any(reclaims_for(team, found, team_use.get((team, pool), ZERO), need)
                   for team, need in least.items() if team and team != run.team)

    return victim


def service_group(job: PendingJob | RunningJob) -> str:
    """Whose jobs a job is ranked among by service: its team's (the team's name), or for a
    job of no team its queue's ("/" and the queue's name: no name starts with "/")."""
    return job.team or "/" + job.queue


def _group_title(job: PendingJob) -> str:
    return f"team {job.team!r}" if job.team else f"queue {job.queue!r}"


# The words that make a preemption's sentence a reclaim's; cause_of reads them back.
RECLAIM_WORDS = "to return borrowed capacity"


PreemptionCause = Literal["reclaim", "demotion"]


def cause_of(why: str) -> PreemptionCause:
    """'reclaim' or 'demotion': which of the two reasons to stop a job gave this sentence."""
    return "reclaim" if RECLAIM_WORDS in why else "demotion"


class Preemption:
    """The preemptions of one pass, on its Ledger. `reclaiming` is the pass's: the waiting
    jobs room is taken back for, each with the pool."""

    def __init__(self, policy: cfg.Policy, now: float, ledger: Ledger,
                 reclaiming: dict[str, str]) -> None:
        self.policy = policy
        self.now = now
        self.ledger = ledger
        self.reclaiming = reclaiming
        self.preempt: dict[str, str] = {}  # victim -> why
        # By (pool, group, level, claimant, queue priority, job priority): what jobs asked
        # for whom preempting every more-served job there would not make room for. The pass
        # only fills up, but for a claim let go (each counts in Ledger.freed), so a job
        # asking as much or more need not look again.
        self.cannot_demote: dict[tuple[str, str, int, bool, int, int],
                                 tuple[int, list[Resources]]] = {}
        # By pool, once a pass when first needed: the preemptible running jobs, in the
        # snapshot's order; those, most served (with service levels) and then newest first;
        # and the service groups' (_Ranked).
        self._preemptible: dict[str, list[RunningJob]] = {}
        self._reclaimable: dict[str, list[RunningJob]] = {}
        self._demotable: dict[str, dict[str, _Ranked]] = {}

    def reclaim(self, job: PendingJob, room: PoolRoom, claimant: bool
                ) -> PendingReason | None:
        """A job within its team's nominal quota that does not fit because other teams
        borrowed: preempt borrowers' jobs (the most served first, with service levels,
        then the newest) until it would fit. While any jobs of the pool are stopping, it
        waits for them instead. None if that cannot make room. What is taken back is for
        this job (`claimant`: it was, in an earlier pass): it is listed in reclaiming, and
        the next pass holds the room for it."""
        ledger = self.ledger
        pool = room.pool
        quotas = room.quotas
        if quotas is None or not reclaims_for(
                job.team, quotas, ledger.team_use.get((job.team, room.name), ZERO),
                job.resources):
            return None
        if room.returning is not ZERO and room.returning != ZERO:
            if claimant:
                self.reclaiming[job.job_id] = room.name
            # Jobs stop there (taking quota back, or for service): what they free may be
            # enough, so nothing more is taken back until they have.
            return ledger.reasons.of(("returning", job.team, room.name), lambda: PendingReason(
                ReasonCode.RECLAIMING, f"jobs in pool {room.name!r} are stopping, freeing "
                f"capacity; it starts then, or takes back team {job.team!r}'s quota if it "
                "still must"))
        team_use = ledger.team_use
        gives: dict[str, bool] = {}  # by team: whether its jobs here give quota back
        reclaimable = self._reclaimable.get(room.name)
        if reclaimable is None:  # sorted once a pass: the order is the same
            now, served = self.now, self.policy.service_levels
            reclaimable = self._reclaimable[room.name] = sorted(
                self._preemptible_in(room), key=lambda run: (
                    -run.service_level(now) if served else 0, -run.started_at))
        preempt = self.preempt
        victims = [run for run in reclaimable
                   if run.team != job.team and run.job_id not in preempt and
                   _gives_back_once(gives, run.team, quotas,
                                    team_use.get((run.team, room.name), ZERO))]
        freed = ZERO
        chosen: list[RunningJob] = []
        free_ids = set(ledger.gpus_taken)
        # What is held for other jobs stays theirs: preempting for room they would take
        # would only make this job reclaim again.
        base = add(room.used, room.held) if room.held_jobs else room.used
        base_jobs = room.jobs + room.held_jobs
        for run in victims:
            chosen.append(run)
            freed = add(freed, run.resources)
            free_ids -= set(run.gpu_ids)
            used = Resources(base.cpus - freed.cpus, base.memory_mb - freed.memory_mb,
                             base.gpus - freed.gpus)
            if shortfall(pool.capacity, job.resources, used, base_jobs - len(chosen)) \
                    is None and allocate_gpus(pool.capacity, free_ids,
                                              job.resources.gpus) is not None:
                why = (f"preempted {RECLAIM_WORDS} in pool {room.name!r} to team "
                       f"{job.team!r}; it resumes from its checkpoint")
                for victim in chosen:
                    preempt[victim.job_id] = why
                room.returning = add(room.returning, freed)
                self.reclaiming[job.job_id] = room.name
                return PendingReason(ReasonCode.RECLAIMING, f"preempting {len(chosen)} job(s) "
                                     f"that borrowed team {job.team!r}'s quota in pool "
                                     f"{room.name!r}; it starts when they stop")
        return None

    def demote(self, job: PendingJob, room: PoolRoom, claimant: bool
               ) -> PendingReason | None:
        """A job that does not fit, or not within its team's quota, while jobs of its own
        team (or, for a job of no team, its queue) that have held more service run: preempt
        those (highest level first, then newest; in queues of no higher priority, of no
        higher job priority) until it would fit, as for a reclaim. None if that cannot make
        room."""
        if not self.policy.service_levels:
            return None
        ledger, preempt = self.ledger, self.preempt
        group = service_group(job)
        mine = job.service_level
        demotable = self._demotable.get(room.name)
        if demotable is None:
            demotable = self._demotable[room.name] = self._rank(room)
        ranked, asked = demotable.get(group, _NO_VICTIMS)
        # Its group's jobs stopping already, since an earlier pass or for an earlier job of
        # this one: what they free counts first, so no more stop than it needs.
        stopping = asked + [run for _, run in ranked if run.job_id in preempt] \
            if preempt else asked
        if not stopping and (not ranked or ranked[0][0] <= mine):
            return None
        if room.quotas is not None and room.name not in ledger.borrowing:
            ledger.sums(room, room.quotas)  # made now, from what is in use, before without()
        if stopping:
            with ledger.without(room, stopping):
                covered = ledger.fits(job, room, claimant) is None
            if covered:
                self.reclaiming[job.job_id] = room.name
                return ledger.reasons.of(("stopping", group, room.name), lambda: (
                    PendingReason(ReasonCode.RECLAIMING, f"jobs of {_group_title(job)} that "
                                  f"have run longer are stopping in pool {room.name!r}; it "
                                  "starts when they stop")))
        # Only jobs that do not rank above it otherwise: of a queue of no higher priority,
        # and no higher job priority.
        queues = self.policy.queues
        above = queues[job.queue].priority
        victims = [run for run_level, run in ranked
                   if run_level > mine and run.job_id not in preempt
                   and run.priority <= job.priority
                   and queues.get(run.queue, _NEVER).priority <= above]
        if not victims:
            return None
        key = (room.name, group, mine, claimant, above, job.priority)
        need = job.resources
        known = self.cannot_demote.get(key)
        if known is not None and known[0] == ledger.freed:
            failed = known[1]
            if any(need.cpus >= r.cpus and need.memory_mb >= r.memory_mb and
                   need.gpus >= r.gpus for r in failed):
                return None
        else:
            failed = []
            self.cannot_demote[key] = (ledger.freed, failed)
        if not self._might_fit(job, room, claimant, stopping, victims):
            failed.append(need)
            return None
        # If all of them cannot make room, none do.
        with ledger.without(room, stopping + victims):
            possible = ledger.fits(job, room, claimant) is None
        if not possible:
            failed.append(need)
            return None
        # The fewest of them, in their order, that make room: stopping more frees more, so
        # the shortest such prefix is found by halving.
        low, high = 0, len(victims)  # victims[:high] make room, victims[:low] do not
        while high - low > 1:
            middle = (low + high) // 2
            with ledger.without(room, stopping + victims[:middle]):
                fits = ledger.fits(job, room, claimant) is None
            low, high = (low, middle) if fits else (middle, high)
        chosen = victims[:high]
        # Of those, keep only the ones it needs: one that frees nothing it lacks (a CPU job
        # ahead of the GPU job it needs, say) stays, least served first.
        for run in reversed(victims[:high - 1]):
            rest = [other for other in chosen if other is not run]
            with ledger.without(room, stopping + rest):
                if ledger.fits(job, room, claimant) is None:
                    chosen = rest
        freed = ZERO
        why = (f"preempted for a job of {_group_title(job)} that has run less; it resumes "
               "from its checkpoint")
        for victim in chosen:
            preempt[victim.job_id] = why
            freed = add(freed, victim.resources)
        room.returning = add(room.returning, freed)
        self.reclaiming[job.job_id] = room.name
        return PendingReason(ReasonCode.RECLAIMING, f"preempting {len(chosen)} job(s) of "
                             f"{_group_title(job)} that have run longer, in pool "
                             f"{room.name!r}; it starts when they stop")

    def _might_fit(self, job: PendingJob, room: PoolRoom, claimant: bool,
                   stopping: Sequence[RunningJob], victims: Sequence[RunningJob]) -> bool:
        """Cheap checks before without(): the room alone, as fits() counts it (holds
        included), with all of them gone; then the team's limit on borrowing, with its own
        jobs there gone (the group is the team): no quota sums needed to see it would
        still be over."""
        cpus, memory, gpus = 0.0, 0, 0
        for run in (*stopping, *victims):
            cpus += run.resources.cpus
            memory += run.resources.memory_mb
            gpus += run.resources.gpus
        held, holding = (room.claimed_jobs, room.claimed) if claimant else \
            (room.held_jobs, room.held)
        used, need = room.used, job.resources
        left = Resources(used.cpus + holding.cpus - cpus,
                         used.memory_mb + holding.memory_mb - memory,
                         used.gpus + holding.gpus - gpus)
        if shortfall(room.pool.capacity, need, left,
                     room.jobs + held - len(stopping) - len(victims)) is not None:
            return False
        if room.quotas is not None and job.team:
            quota = room.quotas.quotas.get(job.team, NO_QUOTA)
            use = self.ledger.team_use.get((job.team, room.name), ZERO)
            over = over_quota(Resources(use.cpus - cpus, use.memory_mb - memory,
                                        use.gpus - gpus), need, quota)
            if beyond_borrowing(over, quota):
                return False
        return True

    def _preemptible_in(self, room: PoolRoom) -> list[RunningJob]:
        found = self._preemptible.get(room.name)
        if found is None:
            found = self._preemptible[room.name] = preemptible_among(room.running,
                                                                     self.policy, self.now)
        return found

    def _rank(self, room: PoolRoom) -> dict[str, _Ranked]:
        now = self.now
        found: dict[str, list[tuple[int, float, RunningJob]]] = defaultdict(list)
        asked: dict[str, list[RunningJob]] = defaultdict(list)
        for run in room.running:
            if run.preempting:
                asked[service_group(run)].append(run)
        for run in self._preemptible_in(room):
            run_level = run.service_level(now)
            if run_level > 0:
                found[service_group(run)].append((run_level, run.started_at, run))
        ranked: dict[str, _Ranked] = {}
        for group in found.keys() | asked.keys():
            runs = found.get(group, [])
            runs.sort(key=lambda item: (-item[0], -item[1]))
            ranked[group] = ([(run_level, run) for run_level, _, run in runs],
                             asked.get(group, []))
        return ranked


# For the replay: the jobs one pass admitted, and what each team's running jobs held of
# each pool before them and hold with them (both summed in the snapshot's order, so that
# they compare as the passes' own sums do).
AdmissionsSettle = Callable[[Sequence[RunningJob], TeamUse, TeamUse], bool]


def admissions_settle(policy: cfg.Policy) -> AdmissionsSettle:
    """For the replay: whether a pass that admitted these jobs, and did nothing else, leaves
    the pass after it nothing to decide, as far as the admissions themselves go. Every job
    it tried failed, those tried before an admission with more room than is left now: less
    room, and more held by their teams, only fails them again (the engine checks the
    exceptions: a job kept out by held room alone, which tried no preemption, and held
    room gone back to a pool). The admitted jobs may not be stopped before the policy's
    minimum runtime; a policy without one always gets False. What admissions do change is
    which jobs a reclaim may stop: a team they take beyond its quota in a pool (gives_back,
    False before them) gives its older jobs there up to a reclaim a job tried before them
    could not make."""
    if policy.min_runtime_s <= 0:
        return lambda admitted, before, after: False
    quotas = _quotas_by_pool(policy)

    def settles(admitted: Sequence[RunningJob], before: TeamUse, after: TeamUse) -> bool:
        for team, pool in {(run.team, run.pool) for run in admitted if run.team}:
            found = quotas(pool)
            if found is None:
                continue
            key = (team, pool)
            if gives_back(team, found, before.get(key, ZERO)) != \
                    gives_back(team, found, after.get(key, ZERO)):
                return False
        return True

    return settles
