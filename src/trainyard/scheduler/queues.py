"""Admission under a declared policy: queue priorities, fair turns between queues of equal
priority, queue and global concurrency, team quotas with borrowing, and resource fit in the
pools a queue may use. Pure: a snapshot in, decisions out."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from trainyard.domain import policy as cfg
from trainyard.domain.pools import add, allocate_gpus, shortfall
from trainyard.domain.spec import Resources
from trainyard.scheduler.fifo import GLOBAL_CONCURRENCY_LIMIT, POOL_CAPACITY, POOL_UNAVAILABLE
from trainyard.scheduler.model import (
    Decisions,
    PendingJob,
    PendingReason,
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
NO_TEAM = cfg.Quota(cpus=0.0, memory_mb=0, gpus=0, borrow_cpus=float("inf"),
                    borrow_memory_mb=2**62, borrow_gpus=2**31)


@dataclass
class _PoolState:
    pool: cfg.Pool
    used: Resources = ZERO
    jobs: int = 0
    held: Resources = ZERO  # reserved for a long-waiting job this pass
    held_jobs: int = 0
    running: list[RunningJob] = field(default_factory=list)
    returning: Resources = ZERO  # held by jobs already asked to stop


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


class QueuePolicy:
    """A scheduler.Policy that decides by a declared cfg.Policy."""

    def __init__(self, policy: cfg.Policy) -> None:
        self.policy = policy

    def schedule(self, snapshot: Snapshot) -> Decisions:
        policy = self.policy
        state = self._state(snapshot)
        pending: dict[str, PendingReason] = {}
        limit = PendingReason(GLOBAL_CONCURRENCY_LIMIT, _limit_sentence(policy.max_running))
        queues = _by_queue(snapshot.pending)
        for level in sorted({policy.queues[q].priority for q in queues if q in policy.queues},
                            reverse=True):
            names = [q for q in queues if q in policy.queues and
                     policy.queues[q].priority == level]
            self._take_turns(names, queues, snapshot, state, pending, limit)
        for name, jobs in queues.items():  # jobs of queues the policy no longer declares
            if name not in policy.queues:
                reason = PendingReason(NO_POOL, f"queue {name!r} is not declared by the "
                                       "current policy; it starts once a policy declares it")
                pending.update((j.job_id, reason) for j in jobs)
        full = state.running >= policy.max_running
        return Decisions(admit=tuple(state.admitted), pending=pending,
                         saturated=limit if full else None, gpu_ids=state.gpu_ids,
                         pools=state.placed, preempt=state.preempt)

    # --- one pass --------------------------------------------------------------------------

    def _state(self, snapshot: Snapshot) -> _Pass:
        pools = {name: _PoolState(pool) for name, pool in self.policy.pools.items()}
        gpus_taken: set[str] = set()
        by_queue: dict[str, int] = defaultdict(int)
        team_use: dict[tuple[str, str], Resources] = defaultdict(lambda: ZERO)
        for run in snapshot.running:
            gpus_taken.update(run.gpu_ids)
            by_queue[run.queue] += 1
            if run.pool in pools:
                state = pools[run.pool]
                state.used = add(state.used, run.resources)
                state.jobs += 1
                state.running.append(run)
                if run.preempting:
                    state.returning = add(state.returning, run.resources)
            if run.team:
                team_use[(run.team, run.pool)] = add(team_use[(run.team, run.pool)],
                                                     run.resources)
        return _Pass(self.policy, pools, gpus_taken, len(snapshot.running), by_queue,
                     team_use, snapshot.unavailable,
                     sweeps=SweepSlots(snapshot.sweep_limits, snapshot.running))

    def _take_turns(self, names: list[str], queues: dict[str, list[PendingJob]],
                    snapshot: Snapshot, state: _Pass, pending: dict[str, PendingReason],
                    limit: PendingReason) -> None:
        """Queues of one priority take turns: the one with the least usage per weight goes
        next, and each admission adds to its usage for the rest of the pass."""
        turn: list[tuple[float, str]] = []
        heads = {name: 0 for name in names}
        for name in names:
            weight = self.policy.queues[name].weight
            heapq.heappush(turn, (snapshot.usage.get(name, 0.0) / weight, name))
        while turn:
            share, name = heapq.heappop(turn)
            jobs = queues[name]
            index = heads[name]
            if index >= len(jobs):
                continue
            job = jobs[index]
            heads[name] = index + 1
            reason = self._try(job, snapshot, state, limit)
            if reason is None:
                cost = max(1.0, float(job.resources.gpus) or job.resources.cpus)
                heapq.heappush(turn, (share + cost / self.policy.queues[name].weight, name))
                continue
            pending[job.job_id] = reason
            if reason.code in (QUEUE_LIMIT, GLOBAL_CONCURRENCY_LIMIT):
                # Nothing later in this queue can start either: the same reason holds.
                pending.update((later.job_id, reason) for later in jobs[index + 1:])
                continue
            # Best-effort FIFO: a job that cannot fit holds back only what it must, so the
            # queue's later jobs still get their turn.
            heapq.heappush(turn, (share, name))

    def _try(self, job: PendingJob, snapshot: Snapshot, state: _Pass,
             limit: PendingReason) -> PendingReason | None:
        """Admit the job, or say why it waits. The checks run in the policy's order."""
        policy = self.policy
        queue = policy.queues[job.queue]
        capped = state.sweeps.blocked(job)
        if capped is not None:
            return capped
        if (queue.users or queue.teams) and job.owner not in queue.users and \
                job.team not in queue.teams:
            return PendingReason(QUEUE_ACCESS, f"queue {queue.name!r} no longer takes jobs "
                                 f"from {job.owner!r}")
        if queue.max_running is not None and state.by_queue[queue.name] >= queue.max_running:
            return PendingReason(QUEUE_LIMIT, f"queue {queue.name!r} is at its limit of "
                                 f"{queue.max_running} running jobs")
        if state.running >= policy.max_running:
            return limit
        candidates = [state.pools[p] for p in queue.pools
                      if p in state.pools and state.pools[p].pool.executor == job.pool]
        if not candidates:
            return PendingReason(NO_POOL, f"none of the pools of queue {queue.name!r} runs "
                                 f"{'containers' if job.pool == 'docker' else 'commands'}")
        first_problem: PendingReason | None = None
        for pool_state in candidates:
            problem = self._fit(job, pool_state, snapshot, state)
            if problem is None:
                self._admit(job, pool_state, state)
                return None
            if problem.code == POOL_CAPACITY:
                reclaiming = self._reclaim(job, pool_state, snapshot, state)
                if reclaiming is not None:
                    return reclaiming
            first_problem = first_problem or problem
        assert first_problem is not None
        if snapshot.now - job.submitted_at >= policy.reserve_after_s > 0:
            # Waited too long: hold what it needs in its first pool from later jobs.
            held = candidates[0]
            held.held = add(held.held, job.resources)
            held.held_jobs += 1
        return first_problem

    def _fit(self, job: PendingJob, pool_state: _PoolState, snapshot: Snapshot,
             state: _Pass) -> PendingReason | None:
        pool = pool_state.pool
        name = pool.name
        if pool.executor in state.unavailable:
            return PendingReason(POOL_UNAVAILABLE, state.unavailable[pool.executor])
        quota = self._quota_problem(job, pool, state)
        if quota is not None:
            return quota
        in_use = add(pool_state.used, pool_state.held)
        why = shortfall(pool.capacity, job.resources, in_use,
                        pool_state.jobs + pool_state.held_jobs)
        ids = allocate_gpus(pool.capacity, state.gpus_taken, job.resources.gpus)
        if why is None and ids is not None:
            return None
        if pool_state.held_jobs and shortfall(pool.capacity, job.resources, pool_state.used,
                                              pool_state.jobs) is None:
            return PendingReason(RESERVED, f"pool {name!r} holds capacity for a job that has "
                                 "waited longer; it starts after that one")
        if job.resources.gpus > 1 and (why is None or "GPUs" in why):
            return PendingReason(POOL_CAPACITY, f"waiting for {job.resources.gpus} GPUs to be "
                                 f"free at once in pool {name!r}")
        return PendingReason(POOL_CAPACITY, f"{why or f'pool {name!r} has too few GPUs free'}; "
                             "it starts when enough of the pool is free.")

    def _reclaim(self, job: PendingJob, pool_state: _PoolState, snapshot: Snapshot,
                 state: _Pass) -> PendingReason | None:
        """A job within its team's nominal quota that does not fit because other teams
        borrowed: preempt borrowers' jobs (newest first, past the minimum runtime, in
        preemptible queues) until it would fit. None if that cannot make room."""
        pool = pool_state.pool
        quota = next((t.quotas[pool.name] for t in self.policy.teams.values()
                      if t.name == job.team and pool.name in t.quotas), None)
        if quota is None or _beyond(add(state.team_use[(job.team, pool.name)],
                                        job.resources), quota) != ZERO:
            return None  # only quota a team owns is reclaimed for it
        if pool_state.returning != ZERO:
            return PendingReason(RECLAIMING, f"borrowed capacity in pool {pool.name!r} is "
                                 f"being returned to team {job.team!r}; it starts then")
        nominal = {t.name: t.quotas[pool.name] for t in self.policy.teams.values()
                   if pool.name in t.quotas}
        borrowing = {team for team, q in nominal.items()
                     if _beyond(state.team_use[(team, pool.name)], q) != ZERO}
        victims = sorted(
            (run for run in pool_state.running
             if run.team != job.team and (run.team in borrowing or run.team not in nominal)
             and run.job_id not in state.preempt and not run.preempting
             and self.policy.queues.get(run.queue, _NEVER).may_preempt
             and snapshot.now - run.started_at >= self.policy.min_runtime_s),
            key=lambda run: -run.started_at)
        freed = ZERO
        chosen: list[RunningJob] = []
        free_ids = set(state.gpus_taken)
        for run in victims:
            chosen.append(run)
            freed = add(freed, run.resources)
            free_ids -= set(run.gpu_ids)
            used = Resources(pool_state.used.cpus - freed.cpus,
                             pool_state.used.memory_mb - freed.memory_mb,
                             pool_state.used.gpus - freed.gpus)
            if shortfall(pool.capacity, job.resources, used, pool_state.jobs - len(chosen)) \
                    is None and allocate_gpus(pool.capacity, free_ids,
                                              job.resources.gpus) is not None:
                why = (f"preempted to return borrowed capacity in pool {pool.name!r} to team "
                       f"{job.team!r}; it resumes from its checkpoint")
                for victim in chosen:
                    state.preempt[victim.job_id] = why
                pool_state.returning = add(pool_state.returning, freed)
                return PendingReason(RECLAIMING, f"preempting {len(chosen)} job(s) that "
                                     f"borrowed team {job.team!r}'s quota in pool "
                                     f"{pool.name!r}; it starts when they stop")
        return None

    def _quota_problem(self, job: PendingJob, pool_spec: cfg.Pool,
                       state: _Pass) -> PendingReason | None:
        """Within the team's nominal quota, or borrowing within its limit from what is idle:
        quota other teams leave unused, and capacity promised to no team. Pools without
        quotas are first come, first served."""
        pool = pool_spec.name
        quotas = {t.name: t.quotas[pool] for t in self.policy.teams.values() if pool in t.quotas}
        if not quotas:
            return None
        # A team without quota here owns nothing and borrows nothing; a job of no team may
        # use whatever is idle.
        mine = quotas.get(job.team, NO_TEAM if not job.team else NO_QUOTA)
        after = add(state.team_use[(job.team, pool)], job.resources)
        over = _beyond(after, mine)
        if over == ZERO:
            return None
        if over.cpus > mine.borrow_cpus or over.memory_mb > mine.borrow_memory_mb or \
                over.gpus > mine.borrow_gpus:
            return PendingReason(TEAM_QUOTA, _quota_sentence(job.team, pool, mine, "its limit "
                                 "on borrowing is reached"))
        cap = pool_spec.capacity
        promised = ZERO
        for quota in quotas.values():
            promised = add(promised, _as_resources(quota))
        idle = _beyond(Resources(cap.cpus or 0.0, cap.memory_mb or 0, cap.gpus), promised)
        borrowed = ZERO
        for team, quota in quotas.items():
            if team != job.team:
                use = state.team_use[(team, pool)]
                idle = add(idle, _beyond(_as_resources(quota), use))  # owned, not used
                borrowed = add(borrowed, _beyond(use, quota))  # used beyond what it owns
        free = Resources(idle.cpus - borrowed.cpus, idle.memory_mb - borrowed.memory_mb,
                         idle.gpus - borrowed.gpus)
        if over.cpus > free.cpus + 1e-9 or over.memory_mb > free.memory_mb or \
                over.gpus > free.gpus:
            return PendingReason(TEAM_QUOTA, _quota_sentence(job.team, pool, mine,
                                                             "no idle quota can be borrowed"))
        return None

    def _admit(self, job: PendingJob, pool_state: _PoolState, state: _Pass) -> None:
        ids = allocate_gpus(pool_state.pool.capacity, state.gpus_taken, job.resources.gpus)
        assert ids is not None
        pool_state.used = add(pool_state.used, job.resources)
        pool_state.jobs += 1
        state.gpus_taken.update(ids)
        state.running += 1
        state.by_queue[job.queue] += 1
        key = (job.team, pool_state.pool.name)
        state.team_use[key] = add(state.team_use[key], job.resources)
        state.admitted.append(job.job_id)
        state.sweeps.take(job)
        state.placed[job.job_id] = pool_state.pool.name
        if ids:
            state.gpu_ids[job.job_id] = ids


def decayed_usage(usage: Mapping[str, float], running: Iterable[RunningJob], seconds: float,
                  half_life: float) -> dict[str, float]:
    """Each queue's usage after `seconds` more: the old halves every `half_life`, and each
    running job adds its GPUs (or, without GPUs, its CPUs) times the time."""
    factor = 0.5 ** (seconds / half_life) if half_life > 0 else 0.0
    updated = {queue: value * factor for queue, value in usage.items() if value * factor > 1e-9}
    for job in running:
        cost = float(job.resources.gpus) or job.resources.cpus
        updated[job.queue] = updated.get(job.queue, 0.0) + cost * seconds
    return updated


def _by_queue(jobs: Iterable[PendingJob]) -> dict[str, list[PendingJob]]:
    """Each queue's jobs by job priority (higher first), then submit order."""
    queues: dict[str, list[PendingJob]] = defaultdict(list)
    for job in jobs:
        queues[job.queue].append(job)
    for listed in queues.values():
        listed.sort(key=lambda j: (-j.priority, j.seq))
    return dict(queues)


def _beyond(used: Resources, limit: Resources | cfg.Quota) -> Resources:
    """How far `used` goes past `limit`, per resource; a resource it does not name is never
    exceeded."""
    return Resources(
        max(0.0, used.cpus - limit.cpus) if limit.cpus is not None else 0.0,
        max(0, used.memory_mb - limit.memory_mb) if limit.memory_mb is not None else 0,
        max(0, used.gpus - limit.gpus) if limit.gpus is not None else 0)


def _as_resources(quota: cfg.Quota) -> Resources:
    return Resources(quota.cpus or 0.0, quota.memory_mb or 0, quota.gpus or 0)


def _quota_sentence(team: str, pool: str, quota: cfg.Quota, why: str) -> str:
    owned = ", ".join(part for part in (
        f"{quota.gpus} GPUs" if quota.gpus else "",
        f"{quota.cpus:g} CPUs" if quota.cpus else "",
        f"{quota.memory_mb} MiB" if quota.memory_mb else "") if part) or "no quota"
    who = f"team {team!r}" if team else "a job of no team"
    return f"{who} has used its {owned} of quota in pool {pool!r} and {why}"


def _limit_sentence(limit: int) -> str:
    return f"all {limit} job slots are in use; it starts when a running job ends."
