"""Admission under a declared policy: queue priorities, fair turns between queues of equal
priority, queue and global concurrency, team quotas with borrowing, and resource fit in the
pools a queue may use. Pure: a snapshot in, decisions out.

A pass costs what it tries before the global limit, plus a little per queue, however long
the backlog: each queue's jobs come in order (a Backlog the tracker keeps between passes),
the quota check takes the same time however many teams there are, and once a queue meets a
limit the rest of its jobs share that reason as one entry (PendingReasons)."""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from typing import cast

from trainyard.domain import policy as cfg
from trainyard.domain.pools import add, allocate_gpus, shortfall
from trainyard.domain.spec import Resources
from trainyard.scheduler.attained import rate
from trainyard.scheduler.backlog import Backlog
from trainyard.scheduler.fifo import GLOBAL_CONCURRENCY_LIMIT, POOL_CAPACITY, POOL_UNAVAILABLE
from trainyard.scheduler.model import (
    Decisions,
    PendingJob,
    PendingReason,
    PendingReasons,
    RunningJob,
    Snapshot,
)
from trainyard.scheduler.sweeps import SweepSlots

QUEUE_ACCESS = "QUEUE_ACCESS"  # the queue no longer takes jobs from this job's owner
QUEUE_LIMIT = "QUEUE_LIMIT"  # the queue runs as many jobs as it may
TEAM_QUOTA = "TEAM_QUOTA"  # the team's quota is used and nothing idle can be borrowed
NO_POOL = "NO_POOL"  # none of the queue's pools runs this kind of job
RESERVED = "RESERVED"  # capacity is held for a job that has waited too long
RECLAIMING = "RECLAIMING"  # borrowed quota is being taken back for it by preemption

ZERO = Resources(0.0, 0, 0)
NO_QUOTA = cfg.Quota(cpus=0.0, memory_mb=0, gpus=0)
_NEVER = cfg.Queue("", pools=(), preemptible=False)
_NO_VICTIMS: tuple[list[tuple[int, RunningJob]], list[RunningJob]] = ([], [])
NO_TEAM = cfg.Quota(cpus=0.0, memory_mb=0, gpus=0, borrow_cpus=float("inf"),
                    borrow_memory_mb=2**62, borrow_gpus=2**31)

_SWEEP = attrgetter("sweep")
# What a rounding may cost the borrowing sums, per operation and relative to the magnitudes
# added up: 2**9 times the 2**-53 of one rounding of a double (see _Borrowing.cannot_borrow).
_ROUNDING = 2.0**-44

# A team's part in a pool's borrowing sums: what it owns and leaves unused (cpus, memory,
# gpus), then what it uses beyond what it owns (cpus, memory, gpus).
_Terms = tuple[float, int, int, float, int, int]
# A waiting job's shape, for _Pass.failed: queue, executor, team, cpus, memory, GPUs, level.
_Shape = tuple[str, str, str, float, int, int, int]


@dataclass(frozen=True)
class _PoolQuotas:
    """The team quotas in one pool (by pool name), as the policy declares them."""

    quotas: dict[str, cfg.Quota]  # team -> quota; of two teams of one name, the last
    first: dict[str, cfg.Quota]  # team -> quota; of two teams of one name, the first
    scale: float  # the sum of |quota cpus|, for the rounding bound


@dataclass(frozen=True)
class _QueueRules:
    queue: cfg.Queue
    restricted: bool  # takes jobs only from some users or teams
    pools: Mapping[str, tuple[str, ...]]  # executor -> the queue's pools that run it, in order


@dataclass
class _PoolState:
    pool: cfg.Pool
    name: str  # the pool's
    quotas: _PoolQuotas | None = None  # None: no team has a quota in this pool
    idle: Resources = ZERO  # with quotas: capacity promised to no team
    used: Resources = ZERO
    jobs: int = 0
    held: Resources = ZERO  # held for other jobs this pass: claims and long waiters
    held_jobs: int = 0
    claimed: Resources = ZERO  # the part of it claimed: taken back for a team's job
    claimed_jobs: int = 0
    running: list[RunningJob] = field(default_factory=list)
    returning: Resources = ZERO  # held by jobs already asked to stop
    newest_first: list[RunningJob] | None = None  # the running jobs, once _reclaim sorts them
    # By service group, once a pass when first needed: the running jobs a less-served job of
    # their team (or, without one, their queue) may preempt, as (level, job), most served
    # and then newest first; and those already asked to stop, whose room is on its way.
    demotable: dict[str, tuple[list[tuple[int, RunningJob]], list[RunningJob]]] | None = None


@dataclass
class _Borrowing:
    """In one pass, the sums over a pool's quota teams of quota owned but unused and of use
    beyond what is owned, with each team's part as _no_idle_exactly computes it. They are
    kept up to date as jobs are admitted, so that checking a job subtracts its own team's
    part instead of adding up every other team's."""

    quotas: _PoolQuotas
    terms: dict[str, _Terms] = field(default_factory=dict)
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
    def of(cls, quotas: _PoolQuotas, team_use: Mapping[tuple[str, str], Resources],
           pool: str) -> _Borrowing:
        sums = cls(quotas)
        terms = sums.terms
        idle_cpus = lent_cpus = use_cpus = 0.0
        idle_memory = idle_gpus = lent_memory = lent_gpus = 0
        for team, quota in quotas.quotas.items():  # as set() would, for each in turn
            use = team_use.get((team, pool), ZERO)
            terms[team] = new = _terms(quota, use)
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
        sums.updates = len(terms)
        return sums

    def set(self, team: str, quota: cfg.Quota, use: Resources, before: Resources) -> None:
        """The team now uses `use` of the pool, where it used `before`."""
        new = _terms(quota, use)
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

    def mark(self, teams: Iterable[str]) -> tuple[tuple[float | int, ...],
                                                  dict[str, _Terms | None]]:
        """What back() restores: the sums, and these teams' parts."""
        return ((self.idle_cpus, self.idle_memory, self.idle_gpus, self.lent_cpus,
                 self.lent_memory, self.lent_gpus, self.use_cpus, self.use_peak, self.updates),
                {team: self.terms.get(team) for team in teams})

    def back(self, marked: tuple[tuple[float | int, ...], dict[str, _Terms | None]]) -> None:
        """The sums exactly as mark() found them (set() twice would leave roundings)."""
        sums, terms = marked
        (self.idle_cpus, self.idle_memory, self.idle_gpus, self.lent_cpus, self.lent_memory,
         self.lent_gpus, self.use_cpus, self.use_peak, self.updates) = sums  # type: ignore[assignment]
        for team, part in terms.items():
            if part is None:
                self.terms.pop(team, None)
            else:
                self.terms[team] = part

    def cannot_borrow(self, team: str, over: tuple[float, int, int],
                      base: Resources) -> bool | None:
        """Whether `over` is more than the team may borrow: the other teams' idle quota plus
        `base` (capacity promised to no team), less what the others borrowed already; as the
        team-by-team loop of _no_idle_exactly finds, or None where the sums cannot settle it.

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
        beyond = over_cpus - ((base.cpus + idle_cpus - lent_cpus) + 1e-9)
        scale = 2 * (abs(base.cpus) + self.quotas.scale + self.use_peak + abs(over_cpus) + 1)
        bound = _ROUNDING * (self.updates + 2) * scale
        if beyond > bound:
            return True
        if beyond < -bound:
            return False
        return None


@dataclass
class _Pass:
    """What the jobs admitted so far in this pass, and those running, hold."""

    policy: cfg.Policy
    pools: dict[str, _PoolState]
    gpus_taken: set[str]
    running: int
    by_queue: dict[str, int]
    team_use: dict[tuple[str, str], Resources]  # (team, pool) -> used
    unavailable: Mapping[str, str]
    admitted: list[str] = field(default_factory=list)
    gpu_ids: dict[str, tuple[str, ...]] = field(default_factory=dict)
    placed: dict[str, str] = field(default_factory=dict)  # job -> pool
    preempt: dict[str, str] = field(default_factory=dict)  # victim -> why
    sweeps: SweepSlots = field(default_factory=lambda: SweepSlots({}, ()))
    borrowing: dict[str, _Borrowing] = field(default_factory=dict)  # by pool name
    candidates: dict[tuple[str, str], list[_PoolState]] = field(default_factory=dict)
    heads: dict[str, int] = field(default_factory=dict)  # queue -> how many jobs it decided
    each: dict[str, PendingReason] = field(default_factory=dict)  # job -> why it waits
    tails: list[tuple[Sequence[PendingJob], PendingReason]] = field(default_factory=list)
    shared: dict[tuple[str, str, str], PendingReason] = field(default_factory=dict)
    pre_held: dict[str, _PoolState] = field(default_factory=dict)  # job -> held for it
    reclaiming: dict[str, str] = field(default_factory=dict)  # job -> pool taken back for it
    # By (pool, group, level, claimant, queue priority, job priority): what jobs asked for
    # whom preempting every more-served job there would not make room for. The pass only
    # fills up, but for a claim let go (each counts in `freed`), so a job asking as much or
    # more need not look again.
    cannot_demote: dict[tuple[str, str, int, bool, int, int], tuple[int, list[Resources]]] = \
        field(default_factory=dict)
    freed: int = 0
    # Why a job of one shape (queue, kind, team, resources, level) could not start, and
    # whether it would borrow: a later job of that shape holding no claim fails the same
    # way, with the same reason, while nothing is admitted, held, let go or taken back in
    # the pass (each of those counts in `changes`).
    failed: dict[_Shape, tuple[PendingReason, bool, int]] = field(default_factory=dict)
    changes: int = 0


class QueuePolicy:
    """A scheduler.Policy that decides by a declared cfg.Policy."""

    def __init__(self, policy: cfg.Policy) -> None:
        self.policy = policy
        # The policy does not change, so what the checks look up in it is worked out once.
        quotas: dict[str, _PoolQuotas | None] = {}
        self._pools: dict[str, tuple[_PoolQuotas | None, Resources]] = {}
        for key, pool in policy.pools.items():
            if pool.name not in quotas:
                quotas[pool.name] = _pool_quotas(policy, pool.name)
            found = quotas[pool.name]
            self._pools[key] = (found, ZERO if found is None else _unpromised(found, pool))
        self._queues: dict[str, _QueueRules] = {}  # filled as queues are first looked up

    @property
    def orders_by_service(self) -> bool:
        return self.policy.service_levels

    def schedule(self, snapshot: Snapshot) -> Decisions:
        policy = self.policy
        pending = snapshot.pending
        backlog = pending if isinstance(pending, Backlog) else Backlog.of(pending)
        queues = backlog.queues
        state = self._state(snapshot, backlog)
        limit = PendingReason(GLOBAL_CONCURRENCY_LIMIT, _limit_sentence(policy.max_running))
        levels: dict[int, list[str]] = defaultdict(list)
        for name in queues:
            if name in policy.queues:
                levels[policy.queues[name].priority].append(name)
        for priority in sorted(levels, reverse=True):
            if state.running >= policy.max_running:
                break
            self._take_turns(levels[priority], queues, snapshot, state, limit)
        if state.running >= policy.max_running:
            # Nothing more starts in this pass, and each job still waiting gets the reason
            # it would get on its turn, without taking turns.
            self._at_limit(queues, state, limit)
        heads, tails = state.heads, state.tails
        for name, jobs in queues.items():
            start = heads.get(name, 0)
            if start >= len(jobs):
                continue
            if name in policy.queues:
                # Jobs that took no turn: the global limit stopped the pass before them.
                tails.append((jobs[start:], limit))
            else:
                tails.append((jobs[start:], PendingReason(
                    NO_POOL, f"queue {name!r} is not declared by the current policy; it "
                    "starts once a policy declares it")))
        for job_id, held in state.pre_held.items():  # behind a limit: still its claim
            queued = backlog.get(job_id)
            if queued is not None and queued.queue in policy.queues:
                state.reclaiming[job_id] = held.name
        full = state.running >= policy.max_running
        return Decisions(admit=tuple(state.admitted), pending=PendingReasons(state.each, tails),
                         saturated=limit if full else None, gpu_ids=state.gpu_ids,
                         pools=state.placed, preempt=state.preempt,
                         reclaiming=state.reclaiming)

    # --- one pass --------------------------------------------------------------------------

    def _state(self, snapshot: Snapshot, backlog: Backlog) -> _Pass:
        pools = {key: _PoolState(pool, pool.name, *self._pools[key])
                 for key, pool in self.policy.pools.items()}
        gpus_taken: set[str] = set()
        by_queue: dict[str, int] = defaultdict(int)
        # Added up in the order of the running jobs, as one add() after another would, in
        # lists of [cpus, memory_mb, gpus].
        used: dict[str, list[float]] = {}
        returning: dict[str, list[float]] = {}
        teams: dict[tuple[str, str], list[float]] = {}
        for run in snapshot.running:
            if run.gpu_ids:
                gpus_taken.update(run.gpu_ids)
            by_queue[run.queue] += 1
            res = run.resources
            pool_state = pools.get(run.pool)
            if pool_state is not None:
                pool_state.running.append(run)
                total = used.get(run.pool)
                if total is None:
                    total = used[run.pool] = [0.0, 0, 0]
                total[0] += res.cpus
                total[1] += res.memory_mb
                total[2] += res.gpus
                if run.preempting:
                    total = returning.get(run.pool)
                    if total is None:
                        total = returning[run.pool] = [0.0, 0, 0]
                    total[0] += res.cpus
                    total[1] += res.memory_mb
                    total[2] += res.gpus
            if run.team:
                total = teams.get((run.team, run.pool))
                if total is None:
                    total = teams[(run.team, run.pool)] = [0.0, 0, 0]
                total[0] += res.cpus
                total[1] += res.memory_mb
                total[2] += res.gpus
        for key, total in used.items():
            pools[key].used = _resources(total)
            pools[key].jobs = len(pools[key].running)
        for key, total in returning.items():
            pools[key].returning = _resources(total)
        team_use = {team_pool: _resources(total) for team_pool, total in teams.items()}
        state = _Pass(self.policy, pools, gpus_taken, len(snapshot.running), by_queue,
                      team_use, snapshot.unavailable,
                      sweeps=SweepSlots(snapshot.sweep_limits, snapshot.running,
                                        snapshot.sweep_titles))
        # Capacity on its way back to a team is held for the job it was taken back for, so
        # that the borrower, requeued ahead of it, cannot take it again (and again).
        for job_id, pool_name in snapshot.reclaiming.items():
            job = backlog.get(job_id)
            held = pools.get(pool_name)
            if job is not None and held is not None:
                _hold(state, held, job, claim=True)
                state.pre_held[job_id] = held
        return state

    def _rules(self, name: str) -> _QueueRules:
        rules = self._queues.get(name)
        if rules is None:
            queue = self.policy.queues[name]
            kinds: dict[str, list[str]] = defaultdict(list)
            for p in queue.pools:
                if p in self.policy.pools:
                    kinds[self.policy.pools[p].executor].append(p)
            rules = self._queues[name] = _QueueRules(
                queue, bool(queue.users or queue.teams), {k: tuple(v) for k, v in kinds.items()})
        return rules

    def _take_turns(self, names: list[str], queues: Mapping[str, Sequence[PendingJob]],
                    snapshot: Snapshot, state: _Pass, limit: PendingReason) -> None:
        """Queues of one priority take turns: the one with the least usage per weight goes
        next, and each admission adds to its usage for the rest of the pass. Stop at the
        global limit, where _at_limit takes over."""
        turn: list[tuple[float, str]] = []
        heads, each, tails = state.heads, state.each, state.tails
        max_running = self.policy.max_running
        # With finite usage and weights, no share is ever nan (each adds to a finite one a
        # cost over the queue's weight, of one sign per queue), so the shares are ordered:
        # which queue goes next depends only on what is in the heap, not on its layout. Then
        # a queue whose job waits goes again at once, as it would if put back in the heap
        # and popped first, and a queue with no jobs left need not be put back.
        comparable = True
        for name in names:
            weight = self.policy.queues[name].weight
            share = snapshot.usage.get(name, 0.0) / weight
            comparable = comparable and math.isfinite(share) and math.isfinite(weight)
            heapq.heappush(turn, (share, name))
        while turn:
            if state.running >= max_running:
                return
            share, name = heapq.heappop(turn)
            jobs = queues[name]
            index = heads.get(name, 0)
            if index >= len(jobs):
                continue
            # After a job of the queue fails and nothing changes in the pass, the queue's
            # and the global limit still let its next job by, and only the shape memo (and
            # the job's own claim, sweep and access) can tell it apart.
            plain = not state.sweeps.limits and not self._rules(name).restricted
            quiet = -1
            while True:
                job = jobs[index]
                index += 1
                reason = None
                looked = plain and quiet == state.changes and \
                    (not state.pre_held or job.job_id not in state.pre_held)
                if looked:
                    reason = self._known(job, job.shape, snapshot, state)
                if reason is None:
                    reason = self._try(job, snapshot, state, limit, looked)
                if reason is None:
                    cost = max(1.0, rate(job.resources))
                    after = share + cost / self.policy.queues[name].weight
                    heapq.heappush(turn, (after, name))
                    break
                if reason.code in (QUEUE_LIMIT, GLOBAL_CONCURRENCY_LIMIT):
                    # Nothing later in this queue can start either: the same reason holds.
                    tails.append((jobs[index - 1:], reason))
                    index = len(jobs)
                    break
                each[job.job_id] = reason
                quiet = state.changes
                # Best-effort FIFO: a job that cannot fit holds back only what it must, so
                # the queue's later jobs still get their turn (at once, when comparable).
                if not comparable:
                    heapq.heappush(turn, (share, name))
                    break
                if index >= len(jobs):
                    break
            heads[name] = index

    def _at_limit(self, queues: Mapping[str, Sequence[PendingJob]], state: _Pass,
                  limit: PendingReason) -> None:
        """Once the global limit is reached: the reason _try would give each job still
        waiting, on its turn, where it differs from the global limit's (schedule() gives
        the rest that one). Before the global limit _try checks only the job's sweep, the
        queue's access rules and the queue's limit, none of which changes once nothing more
        starts; the first of a queue's jobs that passes the first two gets the queue's limit
        or the global one, and so does every job after it. So no job's reason depends on the
        order the queues go in, and they need not take turns."""
        sweeps = state.sweeps
        full = {sweep for sweep, most in sweeps.limits.items()
                if not sweeps.running[sweep] < most}  # as SweepSlots.blocked has it
        heads, each, tails = state.heads, state.each, state.tails
        for name, jobs in queues.items():
            if name not in self.policy.queues:
                continue  # not declared: schedule() writes their reason
            start = heads.get(name, 0)
            if start >= len(jobs):
                continue  # decided before the limit
            queue = self.policy.queues[name]
            if queue.users or queue.teams or \
                    (full and not full.isdisjoint(map(_SWEEP, jobs[start:]))):
                # Some may be held by their sweep or the queue's access: in the queue's order,
                # those before the first that is not get their own reason.
                rules = self._rules(name)
                while start < len(jobs):
                    blocked = self._blocked(jobs[start], rules, state)
                    if blocked is None:
                        break
                    if blocked.code == QUEUE_ACCESS:
                        _drop_claim(jobs[start], state)
                    each[jobs[start].job_id] = blocked
                    start += 1
                heads[name] = start
            if start < len(jobs) and queue.max_running is not None and \
                    state.by_queue[queue.name] >= queue.max_running:
                tails.append((jobs[start:], _queue_limit(state, queue)))
                heads[name] = len(jobs)

    def _blocked(self, job: PendingJob, rules: _QueueRules,
                 state: _Pass) -> PendingReason | None:
        """The first two checks of _try: the job's sweep, and the queue's access rules."""
        if state.sweeps.limits:
            capped = state.sweeps.blocked(job)
            if capped is not None:
                return capped
        queue = rules.queue
        if rules.restricted and job.owner not in queue.users and job.team not in queue.teams:
            return PendingReason(QUEUE_ACCESS, f"queue {queue.name!r} no longer takes jobs "
                                 f"from {job.owner!r}")
        return None

    def _try(self, job: PendingJob, snapshot: Snapshot, state: _Pass,
             limit: PendingReason, looked: bool = False) -> PendingReason | None:
        """Admit the job, or say why it waits. The checks run in the policy's order.
        `looked`: _known found nothing for it already, and nothing changed since."""
        policy = self.policy
        rules = self._queues.get(job.queue) or self._rules(job.queue)
        # A claim on room taken back for this job (state.pre_held) lasts while the job waits
        # behind a limit, and ends when its queue no longer takes it.
        if rules.restricted or state.sweeps.limits:
            blocked = self._blocked(job, rules, state)
            if blocked is not None:
                if blocked.code == QUEUE_ACCESS:
                    _drop_claim(job, state)
                return blocked
        queue = rules.queue
        if queue.max_running is not None and state.by_queue[queue.name] >= queue.max_running:
            return _queue_limit(state, queue)
        if state.running >= policy.max_running:
            return limit
        shape: _Shape | None = None
        if not state.pre_held or job.job_id not in state.pre_held:
            shape = job.shape
            known = None if looked else self._known(job, shape, snapshot, state)
            if known is not None:
                return known
        candidates = state.candidates.get((job.queue, job.pool))
        if candidates is None:
            candidates = [state.pools[p] for p in rules.pools.get(job.pool, ())]
            state.candidates[(job.queue, job.pool)] = candidates
        if not candidates:
            _drop_claim(job, state)
            return PendingReason(NO_POOL, f"none of the pools of queue {queue.name!r} runs "
                                 f"{'containers' if job.pool == 'docker' else 'commands'}")
        mine = state.pre_held.pop(job.job_id, None) if shape is None else None
        if mine is not None:
            _release(state, mine, job, claim=True)  # its own claim does not keep it out
        problems: list[tuple[_PoolState, PendingReason]] = []
        for pool_state in candidates:
            problem = self._fit(job, pool_state, state, mine is pool_state)
            if problem is None:
                self._admit(job, pool_state, state)
                return None
            problems.append((pool_state, problem))
        # It fits in none of them: only then is anything preempted for it, in the first
        # pool where that makes room.
        first_problem: PendingReason | None = None
        for pool_state, problem in problems:
            claimant = mine is pool_state
            if problem.code == POOL_CAPACITY:
                reclaiming = self._reclaim(job, pool_state, snapshot, state, claimant)
                if reclaiming is not None:
                    if job.job_id in state.reclaiming:  # taken back for this job: claimed
                        _hold(state, pool_state, job, claim=True)
                    return reclaiming
            if problem.code in (POOL_CAPACITY, TEAM_QUOTA):
                demoting = self._demote(job, pool_state, snapshot, state, claimant)
                if demoting is not None:
                    _hold(state, pool_state, job, claim=True)
                    return demoting
            first_problem = first_problem or problem
        assert first_problem is not None
        if mine is not None and first_problem.code in (POOL_CAPACITY, RESERVED):
            # It still waits for what was taken back for it (the jobs stopping for it, or
            # room claimed for others before it): the claim goes on to the next pass.
            _hold(state, mine, job, claim=True)
            state.reclaiming[job.job_id] = mine.name
            return first_problem
        borrows, epoch = False, state.changes
        if snapshot.now - job.submitted_at >= policy.reserve_after_s > 0:
            borrows = _borrows(job, candidates[0], state)
            if not borrows:
                # Waited too long: hold what it needs in its first pool from later jobs. Not
                # for a job that would borrow there: what it holds is others' to take back.
                _hold(state, candidates[0], job)
        if shape is not None:
            state.failed[shape] = (first_problem, borrows, epoch)
        return first_problem

    def _known(self, job: PendingJob, shape: _Shape, snapshot: Snapshot,
               state: _Pass) -> PendingReason | None:
        """Why a job of this shape, holding no claim, could not start earlier in the pass,
        if nothing changed since (see _Pass.failed); a long waiter's hold is taken as _try
        would take it. None: it must be checked in full."""
        known = state.failed.get(shape)
        if known is None or known[2] != state.changes:
            return None
        reason, borrows, epoch = known
        if snapshot.now - job.submitted_at >= self.policy.reserve_after_s > 0 and \
                not borrows:
            # It failed in its first pools before, so it has some.
            first = state.candidates[(job.queue, job.pool)][0]
            if not _borrows(job, first, state):
                _hold(state, first, job)  # and the next job of its shape looks again
            else:
                state.failed[shape] = (reason, True, epoch)
        return reason

    def _fit(self, job: PendingJob, pool_state: _PoolState, state: _Pass,
             claimant: bool = False) -> PendingReason | None:
        """None if the job fits the pool now, else why not. Room held for others keeps it
        out, except that a claimant (the job quota was taken back for) gives way only to
        other claims, not to long-waiting jobs' holds."""
        pool = pool_state.pool
        name = pool_state.name
        if state.unavailable and pool.executor in state.unavailable:
            return PendingReason(POOL_UNAVAILABLE, state.unavailable[pool.executor])
        if pool_state.quotas is not None:
            quota = self._quota_problem(job, pool_state, pool_state.quotas, state)
            if quota is not None:
                return quota
        cap, need = pool.capacity, job.resources
        held, holding = (pool_state.claimed_jobs, pool_state.claimed) if claimant else \
            (pool_state.held_jobs, pool_state.held)
        # Nothing is held unless a job is, and adding ZERO changes no comparison.
        in_use = add(pool_state.used, holding) if held else pool_state.used
        why = shortfall(cap, need, in_use, pool_state.jobs + held)
        if why is None and allocate_gpus(cap, state.gpus_taken, need.gpus) is not None:
            return None
        if held and shortfall(cap, need, pool_state.used, pool_state.jobs) is None:
            return _shared(state, ("reserved", "", name), lambda: PendingReason(
                RESERVED, f"pool {name!r} holds capacity for a job that has waited longer, or "
                "for which others are being preempted; it starts after that one"))
        if need.gpus > 1 and (why is None or "GPUs" in why):
            return PendingReason(POOL_CAPACITY, f"waiting for {need.gpus} GPUs to be free at "
                                 f"once in pool {name!r}")
        return _shared(state, ("capacity", why or "", name), lambda: PendingReason(
            POOL_CAPACITY, f"{why or f'pool {name!r} has too few GPUs free'}; it starts when "
            "enough of the pool is free."))

    def _reclaim(self, job: PendingJob, pool_state: _PoolState, snapshot: Snapshot,
                 state: _Pass, claimant: bool) -> PendingReason | None:
        """A job within its team's nominal quota that does not fit because other teams
        borrowed: preempt borrowers' jobs (the most served first, with service levels,
        then the newest; past the minimum runtime, in preemptible queues) until it would
        fit. While any jobs of the pool are stopping, it waits for them instead. None if
        that cannot make room. What is taken back is for this job (`claimant`: it was, in
        an earlier pass): it is listed in Decisions.reclaiming, and the next pass holds the
        room for it."""
        pool = pool_state.pool
        rules = pool_state.quotas
        quota = None if rules is None else rules.first.get(job.team)
        if rules is None or quota is None or _over(
                state.team_use.get((job.team, pool_state.name), ZERO), job.resources,
                quota) != (0.0, 0, 0):
            return None  # only quota a team owns is reclaimed for it
        if pool_state.returning is not ZERO and pool_state.returning != ZERO:
            if claimant:
                state.reclaiming[job.job_id] = pool_state.name
            # Jobs stop there (taking quota back, or for service): what they free may be
            # enough, so nothing more is taken back until they have.
            return _shared(state, ("returning", job.team, pool.name), lambda: PendingReason(
                RECLAIMING, f"jobs in pool {pool.name!r} are stopping, freeing capacity; it "
                f"starts then, or takes back team {job.team!r}'s quota if it still must"))
        nominal = rules.quotas
        borrowing = {team for team, q in nominal.items()
                     if _beyond(state.team_use.get((team, pool.name), ZERO), q) != ZERO}
        if pool_state.newest_first is None:  # sorted once a pass: the order is the same
            now, served = snapshot.now, self.policy.service_levels
            pool_state.newest_first = sorted(pool_state.running, key=lambda run: (
                -run.service_level(now) if served else 0, -run.started_at))
        victims = [
            run for run in pool_state.newest_first
            if run.team != job.team and (run.team in borrowing or run.team not in nominal)
            and run.job_id not in state.preempt and not run.preempting
            and self.policy.queues.get(run.queue, _NEVER).may_preempt
            and snapshot.now - run.started_at >= self.policy.min_runtime_s]
        freed = ZERO
        chosen: list[RunningJob] = []
        free_ids = set(state.gpus_taken)
        # What is held for other jobs stays theirs: preempting for room they would take
        # would only make this job reclaim again.
        base = add(pool_state.used, pool_state.held) if pool_state.held_jobs else \
            pool_state.used
        base_jobs = pool_state.jobs + pool_state.held_jobs
        for run in victims:
            chosen.append(run)
            freed = add(freed, run.resources)
            free_ids -= set(run.gpu_ids)
            used = Resources(base.cpus - freed.cpus, base.memory_mb - freed.memory_mb,
                             base.gpus - freed.gpus)
            if shortfall(pool.capacity, job.resources, used, base_jobs - len(chosen)) \
                    is None and allocate_gpus(pool.capacity, free_ids,
                                              job.resources.gpus) is not None:
                why = (f"preempted to return borrowed capacity in pool {pool.name!r} to team "
                       f"{job.team!r}; it resumes from its checkpoint")
                for victim in chosen:
                    state.preempt[victim.job_id] = why
                pool_state.returning = add(pool_state.returning, freed)
                state.reclaiming[job.job_id] = pool_state.name
                return PendingReason(RECLAIMING, f"preempting {len(chosen)} job(s) that "
                                     f"borrowed team {job.team!r}'s quota in pool "
                                     f"{pool.name!r}; it starts when they stop")
        return None

    def _demote(self, job: PendingJob, pool_state: _PoolState, snapshot: Snapshot,
                state: _Pass, claimant: bool) -> PendingReason | None:
        """A job that does not fit, or not within its team's quota, while jobs of its own
        team (or, for a job of no team, its queue) that have held more service run: preempt
        those (highest level first, then newest; past the minimum runtime, in preemptible
        queues of no higher priority, of no higher job priority) until it would fit, as for
        a reclaim. None if that cannot make room."""
        if not self.policy.service_levels:
            return None
        group = service_group(job)
        mine = job.service_level
        if pool_state.demotable is None:
            pool_state.demotable = self._demotable(pool_state, snapshot)
        ranked, asked = pool_state.demotable.get(group, _NO_VICTIMS)
        # Its group's jobs stopping already, since an earlier pass or for an earlier job of
        # this one: what they free counts first, so no more stop than it needs.
        stopping = asked + [run for _, run in ranked if run.job_id in state.preempt] \
            if state.preempt else asked
        if not stopping and (not ranked or ranked[0][0] <= mine):
            return None
        if pool_state.quotas is not None and pool_state.name not in state.borrowing:
            # Made now, from what is in use, before _without changes it.
            state.borrowing[pool_state.name] = _Borrowing.of(pool_state.quotas,
                                                             state.team_use, pool_state.name)
        if stopping:
            with _without(pool_state, stopping, state):
                covered = self._fit(job, pool_state, state, claimant) is None
            if covered:
                state.reclaiming[job.job_id] = pool_state.name
                return _shared(state, ("stopping", group, pool_state.name), lambda: (
                    PendingReason(RECLAIMING, f"jobs of {_group_title(job)} that have run "
                                  f"longer are stopping in pool {pool_state.name!r}; it "
                                  "starts when they stop")))
        # Only jobs that do not rank above it otherwise: of a queue of no higher priority,
        # and no higher job priority.
        queues = self.policy.queues
        above = queues[job.queue].priority
        victims = [run for run_level, run in ranked
                   if run_level > mine and run.job_id not in state.preempt
                   and run.priority <= job.priority
                   and queues.get(run.queue, _NEVER).priority <= above]
        if not victims:
            return None
        key = (pool_state.name, group, mine, claimant, above, job.priority)
        need = job.resources
        known = state.cannot_demote.get(key)
        if known is not None and known[0] == state.freed:
            failed = known[1]
            if any(need.cpus >= r.cpus and need.memory_mb >= r.memory_mb and
                   need.gpus >= r.gpus for r in failed):
                return None
        else:
            failed = []
            state.cannot_demote[key] = (state.freed, failed)
        # First the room alone, as _fit counts it (holds included), with all of them gone.
        cpus, memory, gpus = 0.0, 0, 0
        for run in (*stopping, *victims):
            cpus += run.resources.cpus
            memory += run.resources.memory_mb
            gpus += run.resources.gpus
        held, holding = (pool_state.claimed_jobs, pool_state.claimed) if claimant else \
            (pool_state.held_jobs, pool_state.held)
        used = pool_state.used
        left = Resources(used.cpus + holding.cpus - cpus,
                         used.memory_mb + holding.memory_mb - memory,
                         used.gpus + holding.gpus - gpus)
        if shortfall(pool_state.pool.capacity, need, left,
                     pool_state.jobs + held - len(stopping) - len(victims)) is not None:
            failed.append(need)
            return None
        if pool_state.quotas is not None and job.team:
            # Then the team's limit on borrowing, with its own jobs there gone (the group is
            # the team): no quota sums needed to see it would still be over.
            quota = pool_state.quotas.quotas.get(job.team, NO_QUOTA)
            use = state.team_use.get((job.team, pool_state.name), ZERO)
            over = _over(Resources(use.cpus - cpus, use.memory_mb - memory, use.gpus - gpus),
                         need, quota)
            if _beyond_borrowing(over, quota):
                failed.append(need)
                return None
        # If all of them cannot make room, none do.
        with _without(pool_state, stopping + victims, state):
            possible = self._fit(job, pool_state, state, claimant) is None
        if not possible:
            failed.append(need)
            return None
        # The fewest of them, in their order, that make room: stopping more frees more, so
        # the shortest such prefix is found by halving.
        low, high = 0, len(victims)  # victims[:high] make room, victims[:low] do not
        while high - low > 1:
            middle = (low + high) // 2
            with _without(pool_state, stopping + victims[:middle], state):
                fits = self._fit(job, pool_state, state, claimant) is None
            low, high = (low, middle) if fits else (middle, high)
        chosen = victims[:high]
        # Of those, keep only the ones it needs: one that frees nothing it lacks (a CPU job
        # ahead of the GPU job it needs, say) stays, least served first.
        for run in reversed(victims[:high - 1]):
            rest = [other for other in chosen if other is not run]
            with _without(pool_state, stopping + rest, state):
                if self._fit(job, pool_state, state, claimant) is None:
                    chosen = rest
        freed = ZERO
        why = (f"preempted for a job of {_group_title(job)} that has run less; it resumes "
               "from its checkpoint")
        for victim in chosen:
            state.preempt[victim.job_id] = why
            freed = add(freed, victim.resources)
        pool_state.returning = add(pool_state.returning, freed)
        state.reclaiming[job.job_id] = pool_state.name
        return PendingReason(RECLAIMING, f"preempting {len(chosen)} job(s) of "
                             f"{_group_title(job)} that have run longer, in pool "
                             f"{pool_state.name!r}; it starts when they stop")

    def _demotable(self, pool_state: _PoolState, snapshot: Snapshot
                   ) -> dict[str, tuple[list[tuple[int, RunningJob]], list[RunningJob]]]:
        now, queues = snapshot.now, self.policy.queues
        found: dict[str, list[tuple[int, float, RunningJob]]] = defaultdict(list)
        asked: dict[str, list[RunningJob]] = defaultdict(list)
        for run in pool_state.running:
            if run.preempting:
                asked[service_group(run)].append(run)
                continue
            if not queues.get(run.queue, _NEVER).may_preempt or \
                    now - run.started_at < self.policy.min_runtime_s:
                continue
            run_level = run.service_level(now)
            if run_level > 0:
                found[service_group(run)].append((run_level, run.started_at, run))
        ranked: dict[str, tuple[list[tuple[int, RunningJob]], list[RunningJob]]] = {}
        for group in found.keys() | asked.keys():
            runs = found.get(group, [])
            runs.sort(key=lambda item: (-item[0], -item[1]))
            ranked[group] = ([(run_level, run) for run_level, _, run in runs],
                             asked.get(group, []))
        return ranked

    def _quota_problem(self, job: PendingJob, pool_state: _PoolState, rules: _PoolQuotas,
                       state: _Pass) -> PendingReason | None:
        """Within the team's nominal quota, or borrowing within its limit from what is idle:
        quota other teams leave unused, and capacity promised to no team. Pools without
        quotas are first come, first served."""
        team = job.team
        pool = pool_state.name
        # A team without quota here owns nothing and borrows nothing; a job of no team may
        # use whatever is idle.
        mine = rules.quotas.get(team, NO_TEAM if not team else NO_QUOTA)
        use, need = state.team_use.get((team, pool), ZERO), job.resources
        # _over(use, need, mine), inline: this runs for most jobs that take a turn.
        over_cpus = max(0.0, (use.cpus + need.cpus) - mine.cpus) \
            if mine.cpus is not None else 0.0
        over_memory = max(0, (use.memory_mb + need.memory_mb) - mine.memory_mb) \
            if mine.memory_mb is not None else 0
        over_gpus = max(0, (use.gpus + need.gpus) - mine.gpus) if mine.gpus is not None else 0
        over = (over_cpus, over_memory, over_gpus)
        if over == (0.0, 0, 0):
            return None
        if _beyond_borrowing(over, mine):
            return _shared(state, ("borrow limit", team, pool), lambda: PendingReason(
                TEAM_QUOTA, _quota_sentence(team, pool, mine, "its limit on borrowing is "
                                            "reached")))
        borrowing = state.borrowing.get(pool)
        if borrowing is None:
            borrowing = state.borrowing[pool] = _Borrowing.of(rules, state.team_use, pool)
        cannot = borrowing.cannot_borrow(team, over, pool_state.idle)
        if cannot is None:
            cannot = self._no_idle_exactly(team, Resources(*over), pool_state, rules, state)
        if cannot:
            return _shared(state, ("nothing idle", team, pool), lambda: PendingReason(
                TEAM_QUOTA, _quota_sentence(team, pool, mine, "no idle quota can be "
                                            "borrowed")))
        return None

    def _no_idle_exactly(self, team: str, over: Resources, pool_state: _PoolState,
                         rules: _PoolQuotas, state: _Pass) -> bool:
        """What _Borrowing.cannot_borrow answers, added up team by team: the quota each
        other team owns and does not use, and what it uses beyond what it owns (_terms
        gives both), in plain numbers in the order add() would add them."""
        pool = pool_state.name
        team_use = state.team_use
        idle = pool_state.idle
        idle_cpus, idle_memory, idle_gpus = idle.cpus, idle.memory_mb, idle.gpus
        lent_cpus, lent_memory, lent_gpus = 0.0, 0, 0
        for other, quota in rules.quotas.items():
            if other != team:
                part = _terms(quota, team_use.get((other, pool), ZERO))
                idle_cpus += part[0]
                idle_memory += part[1]
                idle_gpus += part[2]
                lent_cpus += part[3]
                lent_memory += part[4]
                lent_gpus += part[5]
        return over.cpus > (idle_cpus - lent_cpus) + 1e-9 or \
            over.memory_mb > idle_memory - lent_memory or over.gpus > idle_gpus - lent_gpus

    def _admit(self, job: PendingJob, pool_state: _PoolState, state: _Pass) -> None:
        state.changes += 1
        ids = allocate_gpus(pool_state.pool.capacity, state.gpus_taken, job.resources.gpus)
        assert ids is not None
        pool_state.used = add(pool_state.used, job.resources)
        pool_state.jobs += 1
        state.gpus_taken.update(ids)
        state.running += 1
        state.by_queue[job.queue] += 1
        name = pool_state.name
        key = (job.team, name)
        before = state.team_use.get(key, ZERO)
        state.team_use[key] = after = add(before, job.resources)
        borrowing = state.borrowing.get(name)
        if borrowing is not None and job.team in borrowing.terms:
            borrowing.set(job.team, borrowing.quotas.quotas[job.team], after, before)
        state.admitted.append(job.job_id)
        state.sweeps.take(job)
        state.placed[job.job_id] = name
        if ids:
            state.gpu_ids[job.job_id] = ids


def decayed_usage(usage: Mapping[str, float], running: Iterable[RunningJob], seconds: float,
                  half_life: float) -> dict[str, float]:
    """Each queue's usage after `seconds` more: the old halves every `half_life`, and each
    running job adds its GPUs (or, without GPUs, its CPUs) over the time, each moment of it
    decayed as the old is. Over a long gap (a restart, a quiet stretch of a replay) that is
    at most cost × half_life / ln 2, not cost × the gap."""
    if half_life > 0:
        factor = 0.5 ** (seconds / half_life)
        span = half_life / math.log(2) * (1.0 - factor) if seconds > 0 else 0.0
    else:
        factor, span = 0.0, seconds
    updated = {queue: value * factor for queue, value in usage.items() if value * factor > 1e-9}
    for job in running:
        cost = rate(job.resources)
        updated[job.queue] = updated.get(job.queue, 0.0) + cost * span
    return updated


def service_group(job: PendingJob | RunningJob) -> str:
    """Whose jobs a job is ranked among by service: its team's (the team's name), or for a
    job of no team its queue's ("/" and the queue's name: no name starts with "/")."""
    return job.team or "/" + job.queue


def _group_title(job: PendingJob) -> str:
    return f"team {job.team!r}" if job.team else f"queue {job.queue!r}"


@contextmanager
def _without(pool_state: _PoolState, runs: Sequence[RunningJob], state: _Pass
             ) -> Iterator[None]:
    """The pass as if these running jobs of the pool had stopped, for one check; restored
    afterwards exactly as it was."""
    used, jobs, name = pool_state.used, pool_state.jobs, pool_state.name
    team_use = state.team_use
    borrowing = state.borrowing.get(name)
    before: dict[tuple[str, str], Resources] = {}
    freed_ids: set[str] = set()
    for run in runs:
        pool_state.used = _less(pool_state.used, run.resources, 1)
        pool_state.jobs -= 1
        freed_ids.update(run.gpu_ids)
        if run.team:
            key = (run.team, name)
            now_use = team_use.get(key, ZERO)
            before.setdefault(key, now_use)
            team_use[key] = _less(now_use, run.resources, 1)
    marked = None if borrowing is None else borrowing.mark(team for team, _ in before)
    if borrowing is not None:
        for key, old in before.items():
            if key[0] in borrowing.terms:
                borrowing.set(key[0], borrowing.quotas.quotas[key[0]], team_use[key], old)
    taken = state.gpus_taken & freed_ids
    state.gpus_taken -= taken
    try:
        yield
    finally:
        state.gpus_taken |= taken
        if borrowing is not None and marked is not None:
            borrowing.back(marked)
        team_use.update(before)
        pool_state.used, pool_state.jobs = used, jobs


def _shared(state: _Pass, key: tuple[str, str, str],
            reason: Callable[[], PendingReason]) -> PendingReason:
    """One reason object for each key in a pass, made when first needed: for reasons whose
    message depends on nothing but the key, shared by the jobs they hold."""
    found = state.shared.get(key)
    if found is None:
        found = state.shared[key] = reason()
    return found


def _borrows(job: PendingJob, pool_state: _PoolState, state: _Pass) -> bool:
    """Whether the job would use more of the pool than its team's nominal quota there."""
    rules = pool_state.quotas
    if rules is None:
        return False  # no quotas in this pool: first come, first served
    quota = rules.quotas.get(job.team)
    if quota is None:
        return True  # a team without quota here (or no team) only ever borrows
    use = state.team_use.get((job.team, pool_state.name), ZERO)
    return _over(use, job.resources, quota) != (0.0, 0, 0)


def _hold(state: _Pass, pool_state: _PoolState, job: PendingJob, claim: bool = False) -> None:
    state.changes += 1
    pool_state.held = add(pool_state.held, job.resources)
    pool_state.held_jobs += 1
    if claim:
        pool_state.claimed = add(pool_state.claimed, job.resources)
        pool_state.claimed_jobs += 1


def _release(state: _Pass, pool_state: _PoolState, job: PendingJob,
             claim: bool = False) -> None:
    state.changes += 1
    state.freed += 1
    pool_state.held_jobs -= 1
    pool_state.held = _less(pool_state.held, job.resources, pool_state.held_jobs)
    if claim:
        pool_state.claimed_jobs -= 1
        pool_state.claimed = _less(pool_state.claimed, job.resources, pool_state.claimed_jobs)


def _less(total: Resources, part: Resources, left: int) -> Resources:
    """`total` without `part`; exactly ZERO once nothing is left in it."""
    if not left:
        return ZERO
    return Resources(total.cpus - part.cpus, total.memory_mb - part.memory_mb,
                     total.gpus - part.gpus)


def _drop_claim(job: PendingJob, state: _Pass) -> None:
    """The job can no longer use what was taken back for it: the room goes to others."""
    held = state.pre_held.pop(job.job_id, None)
    if held is not None:
        _release(state, held, job, claim=True)


def _queue_limit(state: _Pass, queue: cfg.Queue) -> PendingReason:
    return _shared(state, ("queue limit", queue.name, ""), lambda: PendingReason(
        QUEUE_LIMIT, f"queue {queue.name!r} is at its limit of {queue.max_running} running "
        "jobs"))


def _pool_quotas(policy: cfg.Policy, pool: str) -> _PoolQuotas | None:
    quotas = {t.name: t.quotas[pool] for t in policy.teams.values() if pool in t.quotas}
    if not quotas:
        return None
    first: dict[str, cfg.Quota] = {}
    for team in policy.teams.values():
        if pool in team.quotas:
            first.setdefault(team.name, team.quotas[pool])
    return _PoolQuotas(quotas, first, sum(abs(quota.cpus or 0.0) for quota in quotas.values()))


def _unpromised(quotas: _PoolQuotas, pool: cfg.Pool) -> Resources:
    """The pool's capacity that no team's quota promises."""
    cpus, memory, gpus = 0.0, 0, 0  # added up as add() would, a quota's None as 0
    for quota in quotas.quotas.values():
        cpus += quota.cpus or 0.0
        memory += quota.memory_mb or 0
        gpus += quota.gpus or 0
    cap = pool.capacity
    return _beyond(Resources(cap.cpus or 0.0, cap.memory_mb or 0, cap.gpus),
                   Resources(cpus, memory, gpus))


def _resources(total: list[float]) -> Resources:
    """[cpus, memory_mb, gpus], as _State adds them up, the last two from ints."""
    return Resources(total[0], cast(int, total[1]), cast(int, total[2]))


def _over(use: Resources, need: Resources, quota: cfg.Quota) -> tuple[float, int, int]:
    """_beyond(add(use, need), quota), as a tuple."""
    return (max(0.0, (use.cpus + need.cpus) - quota.cpus) if quota.cpus is not None else 0.0,
            max(0, (use.memory_mb + need.memory_mb) - quota.memory_mb)
            if quota.memory_mb is not None else 0,
            max(0, (use.gpus + need.gpus) - quota.gpus) if quota.gpus is not None else 0)


def _beyond_borrowing(over: tuple[float, int, int], quota: cfg.Quota) -> bool:
    """Whether using `over` beyond its quota is more than the team may borrow."""
    return over[0] > quota.borrow_cpus or over[1] > quota.borrow_memory_mb or \
        over[2] > quota.borrow_gpus


def _terms(quota: cfg.Quota, use: Resources) -> _Terms:
    """What the team owns and leaves unused (the quota, a None as 0, beyond `use`), then
    _beyond(use, quota), as one tuple."""
    return (max(0.0, (quota.cpus or 0.0) - use.cpus),
            max(0, (quota.memory_mb or 0) - use.memory_mb),
            max(0, (quota.gpus or 0) - use.gpus),
            max(0.0, use.cpus - quota.cpus) if quota.cpus is not None else 0.0,
            max(0, use.memory_mb - quota.memory_mb) if quota.memory_mb is not None else 0,
            max(0, use.gpus - quota.gpus) if quota.gpus is not None else 0)


def _beyond(used: Resources, limit: Resources | cfg.Quota) -> Resources:
    """How far `used` goes past `limit`, per resource; a resource it does not name is never
    exceeded."""
    return Resources(
        max(0.0, used.cpus - limit.cpus) if limit.cpus is not None else 0.0,
        max(0, used.memory_mb - limit.memory_mb) if limit.memory_mb is not None else 0,
        max(0, used.gpus - limit.gpus) if limit.gpus is not None else 0)


def _quota_sentence(team: str, pool: str, quota: cfg.Quota, why: str) -> str:
    owned = ", ".join(part for part in (
        f"{quota.gpus} GPUs" if quota.gpus else "",
        f"{quota.cpus:g} CPUs" if quota.cpus else "",
        f"{quota.memory_mb} MiB" if quota.memory_mb else "") if part) or "no quota"
    who = f"team {team!r}" if team else "a job of no team"
    return f"{who} has used its {owned} of quota in pool {pool!r} and {why}"


def _limit_sentence(limit: int) -> str:
    return f"all {limit} job slots are in use; it starts when a running job ends."
