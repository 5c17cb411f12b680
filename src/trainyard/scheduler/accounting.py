"""A pass's accounting: what the running jobs, and those admitted so far in the pass, hold of
each pool (room, job slots, GPU ids) and of each team's quota there, and the room held back
for jobs that go first. One type, Ledger, answers what the pass asks: whether a job fits a
pool (fits), taking the room (admit), keeping room for a job (hold) and letting it go
(release), and how the pools would stand without some running jobs (without: for one check,
then everything is restored exactly as it was)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from trainyard.domain import policy as cfg
from trainyard.domain.pools import add, allocate_gpus, shortfall
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler.model import PendingJob, PendingReason, RunningJob, SharedReasons
from trainyard.scheduler.quotas import (
    NO_QUOTA,
    NO_TEAM,
    ZERO,
    Borrowing,
    PoolQuotas,
    beyond_borrowing,
    no_idle_exactly,
    over_quota,
    pool_quotas,
    quota_sentence,
    unpromised,
)
from trainyard.scheduler.usage import held, team_use

_POOL_CAPACITY = ReasonCode.POOL_CAPACITY  # once: looking an enum member up takes a while
# Per pool of a policy (by its key): the team quotas there, and the capacity they leave
# promised to no team. The policy does not change, so this is worked out once.
Layout = dict[str, tuple[PoolQuotas | None, Resources]]


def layout_of(policy: cfg.Policy) -> Layout:
    quotas: dict[str, PoolQuotas | None] = {}
    found: Layout = {}
    for key, pool in policy.pools.items():
        if pool.name not in quotas:
            quotas[pool.name] = pool_quotas(policy, pool.name)
        mine = quotas[pool.name]
        found[key] = (mine, ZERO if mine is None else unpromised(mine, pool))
    return found


@dataclass
class PoolRoom:
    """One pool in a pass."""

    pool: cfg.Pool
    name: str  # the pool's
    quotas: PoolQuotas | None = None  # None: no team has a quota in this pool
    idle: Resources = ZERO  # with quotas: capacity promised to no team
    used: Resources = ZERO
    jobs: int = 0
    held: Resources = ZERO  # held for other jobs this pass: claims and long waiters
    held_jobs: int = 0
    claimed: Resources = ZERO  # the part of it claimed: taken back for a team's job
    claimed_jobs: int = 0
    running: list[RunningJob] = field(default_factory=list)
    returning: Resources = ZERO  # held by jobs already asked to stop


class Ledger:
    """What the running jobs and the jobs admitted so far in a pass hold, and what is held
    back for others."""

    def __init__(self, rooms: dict[str, PoolRoom], running: Sequence[RunningJob],
                 unavailable: Mapping[str, str], reasons: SharedReasons) -> None:
        self.rooms = rooms  # by the policy's pool keys
        self.gpus_taken: set[str] = {gpu for run in running for gpu in run.gpu_ids}
        self.running = len(running)  # jobs active, counting those admitted in the pass
        self.by_queue: Counter[str] = Counter(run.queue for run in running)
        self.unavailable = unavailable  # executor -> why it can launch nothing now
        self.reasons = reasons
        # Each pool's borrowing sums, made when first needed (by pool name).
        self.borrowing: dict[str, Borrowing] = {}
        # Bumped by each admission, claim and release: what was found before may not hold.
        self.changes = 0
        # Bumped by those and by each other hold too (a long waiter's): after holds alone,
        # more is held and nothing else changed, so what did not fit fits no better.
        self.moves = 0
        self.freed = 0  # releases alone: room only ever comes back through them
        self.waiters_held = 0  # holds for long waiters (not claims) made in the pass
        self.held_out = 0  # fits() answers of RESERVED: it fit but for what is held
        # Each pool's running jobs in the snapshot's order: what they hold is added up in
        # that order (scheduler.usage, as the queues overview adds it up).
        for run in running:
            room = rooms.get(run.pool)
            if room is not None:
                room.running.append(run)
        for room in rooms.values():
            if room.running:
                room.used = held(room.running)
                room.jobs = len(room.running)
                stopping = [run for run in room.running if run.preempting]
                if stopping:
                    room.returning = held(stopping)
        self.team_use = team_use(running)

    @classmethod
    def of(cls, policy: cfg.Policy, layout: Layout, running: Sequence[RunningJob],
           unavailable: Mapping[str, str], reasons: SharedReasons) -> Ledger:
        rooms = {key: PoolRoom(pool, pool.name, *layout[key])
                 for key, pool in policy.pools.items()}
        return cls(rooms, running, unavailable, reasons)

    def sums(self, room: PoolRoom, quotas: PoolQuotas) -> Borrowing:
        """The pool's borrowing sums, made from what is in use when first asked."""
        borrowing = self.borrowing.get(room.name)
        if borrowing is None:
            borrowing = self.borrowing[room.name] = Borrowing.of(quotas, self.team_use,
                                                                 room.name)
        return borrowing

    def fits(self, job: PendingJob, room: PoolRoom, claimant: bool = False
             ) -> PendingReason | None:
        """None if the job fits the pool now, else why not. Room held for others keeps it
        out, except that a claimant (the job quota was taken back for) gives way only to
        other claims, not to long-waiting jobs' holds."""
        pool = room.pool
        name = room.name
        if self.unavailable and pool.executor in self.unavailable:
            return PendingReason(ReasonCode.POOL_UNAVAILABLE, self.unavailable[pool.executor])
        if room.quotas is not None:
            quota = self._quota_problem(job, room, room.quotas)
            if quota is not None:
                return quota
        cap, need = pool.capacity, job.resources
        held, holding = (room.claimed_jobs, room.claimed) if claimant else \
            (room.held_jobs, room.held)
        # Nothing is held unless a job is, and adding ZERO changes no comparison.
        in_use = add(room.used, holding) if held else room.used
        why = shortfall(cap, need, in_use, room.jobs + held)
        if why is None and allocate_gpus(cap, self.gpus_taken, need.gpus) is not None:
            return None
        if held and shortfall(cap, need, room.used, room.jobs) is None:
            self.held_out += 1
            return self.reasons.of(("reserved", "", name), lambda: PendingReason(
                ReasonCode.RESERVED, f"pool {name!r} holds capacity for a job that has waited "
                "longer, or for which others are being preempted; it starts after that one"))
        if need.gpus > 1 and (why is None or "GPUs" in why):
            return PendingReason(_POOL_CAPACITY, f"waiting for {need.gpus} GPUs to "
                                 f"be free at once in pool {name!r}")
        return self.reasons.of(("capacity", why or "", name), lambda: PendingReason(
            ReasonCode.POOL_CAPACITY, f"{why or f'pool {name!r} has too few GPUs free'}; it "
            "starts when enough of the pool is free."))

    def _quota_problem(self, job: PendingJob, room: PoolRoom, quotas: PoolQuotas
                       ) -> PendingReason | None:
        """Within the team's nominal quota, or borrowing within its limit from what is idle:
        quota other teams leave unused, and capacity promised to no team. Pools without
        quotas are first come, first served."""
        team = job.team
        pool = room.name
        # A team without quota here owns nothing and borrows nothing; a job of no team may
        # use whatever is idle.
        mine = quotas.quotas.get(team, NO_TEAM if not team else NO_QUOTA)
        use, need = self.team_use.get((team, pool), ZERO), job.resources
        # over_quota(use, need, mine), inline: this runs for most jobs that take a turn.
        over_cpus = max(0.0, (use.cpus + need.cpus) - mine.cpus) \
            if mine.cpus is not None else 0.0
        over_memory = max(0, (use.memory_mb + need.memory_mb) - mine.memory_mb) \
            if mine.memory_mb is not None else 0
        over_gpus = max(0, (use.gpus + need.gpus) - mine.gpus) if mine.gpus is not None else 0
        over = (over_cpus, over_memory, over_gpus)
        if over == (0.0, 0, 0):
            return None
        if beyond_borrowing(over, mine):
            return self.reasons.of(("borrow limit", team, pool), lambda: PendingReason(
                ReasonCode.TEAM_QUOTA, quota_sentence(team, pool, mine, "its limit on "
                                                      "borrowing is reached")))
        borrowing = self.borrowing.get(pool) or self.sums(room, quotas)
        cannot = borrowing.cannot_borrow(team, over, room.idle)
        if cannot is None:
            cannot = no_idle_exactly(team, Resources(*over), pool, room.idle, quotas,
                                     self.team_use)
        if cannot:
            return self.reasons.of(("nothing idle", team, pool), lambda: PendingReason(
                ReasonCode.TEAM_QUOTA, quota_sentence(team, pool, mine, "no idle quota can "
                                                      "be borrowed")))
        return None

    def borrows(self, job: PendingJob, room: PoolRoom) -> bool:
        """Whether the job would use more of the pool than its team's nominal quota there."""
        quotas = room.quotas
        if quotas is None:
            return False  # no quotas in this pool: first come, first served
        quota = quotas.quotas.get(job.team)
        if quota is None:
            return True  # a team without quota here (or no team) only ever borrows
        use = self.team_use.get((job.team, room.name), ZERO)
        return over_quota(use, job.resources, quota) != (0.0, 0, 0)

    def admit(self, job: PendingJob, room: PoolRoom) -> tuple[str, ...]:
        """Take the room the job needs (it fits: fits() said so); returns its GPU ids."""
        self.changes += 1
        self.moves += 1
        ids = allocate_gpus(room.pool.capacity, self.gpus_taken, job.resources.gpus)
        assert ids is not None
        room.used = add(room.used, job.resources)
        room.jobs += 1
        self.gpus_taken.update(ids)
        self.running += 1
        self.by_queue[job.queue] += 1
        name = room.name
        key = (job.team, name)
        before = self.team_use.get(key, ZERO)
        self.team_use[key] = after = add(before, job.resources)
        borrowing = self.borrowing.get(name)
        if borrowing is not None and job.team in borrowing.terms:
            borrowing.set(job.team, after, before)
        return ids

    def hold(self, room: PoolRoom, job: PendingJob, claim: bool = False) -> None:
        """Keep the job's room in the pool from the jobs after it; a claim (room taken
        back for it) only from other claimants."""
        self.moves += 1
        room.held = add(room.held, job.resources)
        room.held_jobs += 1
        if claim:
            self.changes += 1
            room.claimed = add(room.claimed, job.resources)
            room.claimed_jobs += 1
        else:
            self.waiters_held += 1

    def release(self, room: PoolRoom, job: PendingJob, claim: bool = False) -> None:
        """Let go of what hold() kept for the job."""
        self.changes += 1
        self.moves += 1
        self.freed += 1
        room.held_jobs -= 1
        room.held = _less(room.held, job.resources, room.held_jobs)
        if claim:
            room.claimed_jobs -= 1
            room.claimed = _less(room.claimed, job.resources, room.claimed_jobs)

    @contextmanager
    def without(self, room: PoolRoom, runs: Sequence[RunningJob]) -> Iterator[None]:
        """The pass as if these running jobs of the pool had stopped, for one check;
        restored afterwards exactly as it was."""
        used, jobs, name = room.used, room.jobs, room.name
        team_use = self.team_use
        borrowing = self.borrowing.get(name)
        before: dict[tuple[str, str], Resources] = {}
        freed_ids: set[str] = set()
        for run in runs:
            room.used = _less(room.used, run.resources, 1)
            room.jobs -= 1
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
                    borrowing.set(key[0], team_use[key], old)
        taken = self.gpus_taken & freed_ids
        self.gpus_taken -= taken
        try:
            yield
        finally:
            self.gpus_taken |= taken
            if borrowing is not None and marked is not None:
                borrowing.back(marked)
            team_use.update(before)
            room.used, room.jobs = used, jobs


def _less(total: Resources, part: Resources, left: int) -> Resources:
    """`total` without `part`; exactly ZERO once nothing is left in it."""
    if not left:
        return ZERO
    return Resources(total.cpus - part.cpus, total.memory_mb - part.memory_mb,
                     total.gpus - part.gpus)


