"""Admission under a declared policy: queue priorities, fair turns between queues of equal
priority, queue and global concurrency, team quotas with borrowing, and resource fit in the
pools a queue may use. Pure: a snapshot in, decisions out.

Here is the order of a pass: queues by priority, turns among equal ones (whose turn it is:
fair_share), and each job's checks in the policy's order. What the pass holds is a Ledger's
(accounting, with quotas and borrowing), and what may be stopped for a job, preemption's.

A pass costs what it tries before the global limit, plus a little per queue, however long
the backlog: each queue's jobs come in order (a Backlog the tracker keeps between passes),
the quota check takes the same time however many teams there are, and once a queue meets a
limit the rest of its jobs share that reason as one entry (PendingReasons). Below the
limits a pass looks at every waiting job, to say why each waits; one that need not
(every_reason=False: a replay, which reads only what starts and stops) passes over the jobs
whose turn can change nothing (scheduler/skips.py), and decides the same."""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from trainyard.domain import policy as cfg
from trainyard.domain.reasons import ReasonCode
from trainyard.scheduler.accounting import Ledger, PoolRoom, layout_of
from trainyard.scheduler.backlog import Backlog
from trainyard.scheduler.budgets import Budgets, declared_budgets
from trainyard.scheduler.failures import Failures
from trainyard.scheduler.fair_share import after_turn, share
from trainyard.scheduler.model import (
    Decisions,
    PendingJob,
    PendingReason,
    PendingReasons,
    Shape,
    SharedReasons,
    Snapshot,
)
from trainyard.scheduler.preemption import Preemption
from trainyard.scheduler.queue_rules import Owners, QueueRules
from trainyard.scheduler.skips import ALIKE, NO_ROOM, Skips
from trainyard.scheduler.sweeps import SweepSlots

_SWEEP = attrgetter("sweep")
_LIMITS = (ReasonCode.QUEUE_LIMIT, ReasonCode.GLOBAL_CONCURRENCY_LIMIT)
_PREEMPT_FOR_ROOM = (ReasonCode.POOL_CAPACITY, ReasonCode.TEAM_QUOTA)
_STILL_CLAIMED = (ReasonCode.POOL_CAPACITY, ReasonCode.RESERVED)
_POOL_CAPACITY = ReasonCode.POOL_CAPACITY  # once: looking an enum member up takes a while


@dataclass
class _Pass:
    """One pass: its accounting, preemptions and failed shapes, and what it has decided so
    far."""

    ledger: Ledger
    preemption: Preemption
    failures: Failures
    reasons: SharedReasons
    reclaiming: dict[str, str]  # job -> pool taken back for it (Preemption's too)
    owners: Owners  # who the queues take jobs from
    sweeps: SweepSlots = field(default_factory=lambda: SweepSlots({}, ()))
    budgets: Budgets = field(default_factory=lambda: Budgets({}, None, (), 0.0))
    admitted: list[str] = field(default_factory=list)
    gpu_ids: dict[str, tuple[str, ...]] = field(default_factory=dict)
    placed: dict[str, str] = field(default_factory=dict)  # job -> pool
    heads: dict[str, int] = field(default_factory=dict)  # queue -> how many jobs it decided
    each: dict[str, PendingReason] = field(default_factory=dict)  # job -> why it waits
    tails: list[tuple[Sequence[PendingJob], PendingReason]] = field(default_factory=list)
    pre_held: dict[str, PoolRoom] = field(default_factory=dict)  # job -> held for it
    skips: Skips | None = None  # what it may pass over, when not every job needs its reason
    stuck: bool = False  # Skips.stuck found that no waiting job can start in the rest of it


class QueuePolicy:
    """A scheduler.Policy that decides by a declared cfg.Policy."""

    def __init__(self, policy: cfg.Policy, every_reason: bool = True) -> None:
        self.policy = policy
        # False: jobs passed over (scheduler/skips.py) share one reason, not each its own.
        self.every_reason = every_reason
        self._layout = layout_of(policy)  # the policy does not change: worked out once
        self._queues: dict[str, QueueRules] = {}  # filled as queues are first looked up
        self.budgets = declared_budgets(policy)  # what the caller reads usage for
        # Reasons carried from one pass to the next: the same reason is the same object, so
        # the tracker tells a deep backlog's unchanged reasons by identity alone.
        self._limit = PendingReason(ReasonCode.GLOBAL_CONCURRENCY_LIMIT,
                                    _limit_sentence(policy.max_running))
        self._last_reasons = SharedReasons()

    @property
    def orders_by_service(self) -> bool:
        return self.policy.service_levels

    def schedule(self, snapshot: Snapshot) -> Decisions:
        policy = self.policy
        pending = snapshot.pending
        backlog = pending if isinstance(pending, Backlog) else Backlog.of(pending)
        queues = backlog.queues
        # 1. The books: what runs, and the room claimed for jobs in earlier passes.
        state = self._state(snapshot, backlog)
        ledger = state.ledger
        limit = self._limit
        # 2. Queues by priority, highest first; those of one priority take turns.
        levels: dict[int, list[str]] = defaultdict(list)
        for name in queues:
            if name in policy.queues:
                levels[policy.queues[name].priority].append(name)
        for priority in sorted(levels, reverse=True):
            if ledger.running >= policy.max_running:
                break
            self._take_turns(levels[priority], queues, snapshot, state, limit)
            if state.stuck:
                break
        if state.stuck:
            # What no turn reached, in every queue: none of it can start in this pass.
            for name, jobs in queues.items():
                start = state.heads.get(name, 0)
                if name in policy.queues and start < len(jobs):
                    state.tails.append((jobs[start:], NO_ROOM))
                    state.heads[name] = len(jobs)
        if ledger.running >= policy.max_running:
            # 3. Nothing more starts in this pass, and each job still waiting gets the
            # reason it would get on its turn, without taking turns.
            self._at_limit(queues, state)
        # 4. What no turn reached shares one reason a queue; claims behind a limit go on.
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
                    ReasonCode.NO_POOL, f"queue {name!r} is not declared by the current "
                    "policy; it starts once a policy declares it")))
        for job_id, held in state.pre_held.items():  # behind a limit: still its claim
            queued = backlog.get(job_id)
            if queued is not None and queued.queue in policy.queues:
                state.reclaiming[job_id] = held.name
        full = ledger.running >= policy.max_running
        return Decisions(admit=tuple(state.admitted), pending=PendingReasons(state.each, tails),
                         saturated=limit if full else None, gpu_ids=state.gpu_ids,
                         pools=state.placed, preempt=state.preemption.preempt,
                         reclaiming=state.reclaiming,
                         held_for_waiters=ledger.waiters_held > 0,
                         held_out=ledger.held_out > 0)

    # --- one pass --------------------------------------------------------------------------

    def _state(self, snapshot: Snapshot, backlog: Backlog) -> _Pass:
        reasons = self._last_reasons = SharedReasons(self._last_reasons)
        ledger = Ledger.of(self.policy, self._layout, snapshot.running, snapshot.unavailable,
                           reasons)
        reclaiming: dict[str, str] = {}
        failures = Failures(ledger, {}, self.policy.reserve_after_s)
        state = _Pass(ledger, Preemption(self.policy, snapshot.now, ledger, reclaiming),
                      failures, reasons, reclaiming, Owners(self.policy),
                      sweeps=SweepSlots(snapshot.sweep_limits, snapshot.running,
                                        snapshot.sweep_titles, snapshot.sweep_holds,
                                        snapshot.sweep_starts),
                      budgets=Budgets(self.budgets, snapshot.budget_use, snapshot.running,
                                      snapshot.now))
        if not self.every_reason:
            state.skips = Skips(self.policy, backlog, ledger, failures, state.pre_held)
        # Capacity on its way back to a team is held for the job it was taken back for, so
        # that the borrower, requeued ahead of it, cannot take it again (and again).
        for job_id, pool_name in snapshot.reclaiming.items():
            job = backlog.get(job_id)
            held = ledger.rooms.get(pool_name)
            if job is not None and held is not None:
                ledger.hold(held, job, claim=True)
                state.pre_held[job_id] = held
        return state

    def _rules(self, name: str) -> QueueRules:
        rules = self._queues.get(name)
        if rules is None:
            rules = self._queues[name] = QueueRules.of(self.policy, name)
        return rules

    def _take_turns(self, names: list[str], queues: Mapping[str, Sequence[PendingJob]],
                    snapshot: Snapshot, state: _Pass, limit: PendingReason) -> None:
        """Queues of one priority take turns: the one with the least usage per weight goes
        next, and each admission adds to its usage for the rest of the pass. Stop at the
        global limit, where _at_limit takes over."""
        turn: list[tuple[float, str]] = []
        heads, each, tails, ledger = state.heads, state.each, state.tails, state.ledger
        failures, skips = state.failures, state.skips
        max_running = self.policy.max_running
        # With finite usage and weights, no share is ever nan (each adds to a finite one a
        # cost over the queue's weight, of one sign per queue), so the shares are ordered:
        # which queue goes next depends only on what is in the heap, not on its layout. Then
        # a queue whose job waits goes again at once, as it would if put back in the heap
        # and popped first, and a queue with no jobs left need not be put back.
        comparable = True
        for name in names:
            weight = self.policy.queues[name].weight
            first = share(snapshot.usage, name, weight)
            comparable = comparable and math.isfinite(first) and math.isfinite(weight)
            heapq.heappush(turn, (first, name))
        while turn:
            if ledger.running >= max_running:
                return
            now_share, name = heapq.heappop(turn)
            jobs = queues[name]
            index = heads.get(name, 0)
            if index >= len(jobs):
                continue
            # After a job of the queue fails and nothing changes in the pass, the queue's
            # and the global limit still let its next job by, and only the shape memo (and
            # the job's own claim, sweep and access) can tell it apart.
            plain = not state.sweeps.any and not self._rules(name).restricted and \
                not state.budgets
            quiet = -1
            while True:
                job = jobs[index]
                index += 1
                reason = None
                claimant = bool(state.pre_held) and job.job_id in state.pre_held
                before = ledger.changes
                looked = plain and quiet == before and not claimant
                if looked:
                    reason = failures.known(job, job.shape, snapshot.now)
                if reason is None:
                    reason = self._try(job, snapshot, state, limit, looked)
                if reason is None:
                    weight = self.policy.queues[name].weight
                    heapq.heappush(turn, (after_turn(now_share, job, weight), name))
                    break
                if reason.code in _LIMITS:
                    # Nothing later in this queue can start either: the same reason holds.
                    tails.append((jobs[index - 1:], reason))
                    index = len(jobs)
                    break
                each[job.job_id] = reason
                quiet = ledger.changes
                # Best-effort FIFO: a job that cannot fit holds back only what it must, so
                # the queue's later jobs still get their turn (at once, when comparable).
                if not comparable:
                    heapq.heappush(turn, (now_share, name))
                    break
                if skips is not None and plain:
                    ahead = skips.after(job, reason, claimant or ledger.changes != before,
                                        index)
                    if ahead < 0:
                        state.stuck = True
                        break
                    if ahead > index:
                        tails.append((jobs[index:ahead], ALIKE))
                        index = ahead
                if index >= len(jobs):
                    break
            heads[name] = index
            if state.stuck:
                return

    def _at_limit(self, queues: Mapping[str, Sequence[PendingJob]], state: _Pass) -> None:
        """Once the global limit is reached: the reason _try would give each job still
        waiting, on its turn, where it differs from the global limit's (schedule() gives
        the rest that one). Before the global limit _try checks only the job's sweep, the
        queue's access rules, the budgets and the queue's limit, none of which changes once
        nothing more starts; the first of a queue's jobs that passes the first three gets the
        queue's limit or the global one, and so does every job after it. So no job's reason
        depends on the order the queues go in, and they need not take turns."""
        sweeps = state.sweeps
        full = sweeps.full()  # as SweepSlots.blocked has it
        heads, each, tails = state.heads, state.each, state.tails
        for name, jobs in queues.items():
            if name not in self.policy.queues:
                continue  # not declared: schedule() writes their reason
            start = heads.get(name, 0)
            if start >= len(jobs):
                continue  # decided before the limit
            queue = self.policy.queues[name]
            # Not open to all (QueueAccess.open), asked without building the queue's rules.
            if queue.users or queue.teams or state.budgets or \
                    (full and not full.isdisjoint(map(_SWEEP, jobs[start:]))):
                # Some may be held by their sweep or the queue's access: in the queue's order,
                # those before the first that is not get their own reason.
                rules = self._rules(name)
                while start < len(jobs):
                    blocked = self._blocked(jobs[start], rules, state)
                    if blocked is None:
                        break
                    each[jobs[start].job_id] = blocked
                    start += 1
                heads[name] = start
            if start < len(jobs) and queue.max_running is not None and \
                    state.ledger.by_queue[queue.name] >= queue.max_running:
                tails.append((jobs[start:], _queue_limit(state, queue)))
                heads[name] = len(jobs)

    def _blocked(self, job: PendingJob, rules: QueueRules,
                 state: _Pass) -> PendingReason | None:
        """The first checks of _try: the job's sweep, the queue's access rules, and the budgets
        it draws on. A claim on room taken back for the job (state.pre_held) ends when its
        queue no longer takes it, or its budget holds it back."""
        if state.sweeps.any:
            capped = state.sweeps.blocked(job)
            if capped is not None:
                return capped
        if not state.owners.admitted(rules, job.owner):
            _drop_claim(job, state)
            return PendingReason(ReasonCode.QUEUE_ACCESS, f"queue {rules.queue.name!r} no "
                                 f"longer takes jobs from {job.owner!r}")
        if state.budgets:
            spent = state.budgets.blocked(job)
            if spent is not None:
                _drop_claim(job, state)
                return spent
        return None

    def _try(self, job: PendingJob, snapshot: Snapshot, state: _Pass,
             limit: PendingReason, looked: bool = False) -> PendingReason | None:
        """Admit the job, or say why it waits. The checks run in the policy's order.
        `looked`: Failures.known found nothing for it already, and nothing changed since."""
        policy, ledger = self.policy, state.ledger
        rules = self._queues.get(job.queue) or self._rules(job.queue)
        # A claim on room taken back for this job (state.pre_held) lasts while the job waits
        # behind a limit.
        if rules.restricted or state.sweeps.any or state.budgets:
            blocked = self._blocked(job, rules, state)
            if blocked is not None:
                return blocked
        queue = rules.queue
        if queue.max_running is not None and ledger.by_queue[queue.name] >= queue.max_running:
            return _queue_limit(state, queue)
        if ledger.running >= policy.max_running:
            return limit
        shape: Shape | None = None
        if not state.pre_held or job.job_id not in state.pre_held:
            shape = job.shape
            known = None if looked else state.failures.known(job, shape, snapshot.now)
            if known is not None:
                return known
        known_pools = state.failures.candidates  # the pools of each (queue, kind), in order
        candidates = known_pools.get((job.queue, job.kind))
        if candidates is None:
            candidates = [ledger.rooms[p] for p in rules.pools.get(job.kind, ())]
            known_pools[(job.queue, job.kind)] = candidates
        if not candidates:
            _drop_claim(job, state)
            return PendingReason(ReasonCode.NO_POOL, f"none of the pools of queue "
                                 f"{queue.name!r} runs "
                                 f"{'containers' if job.kind == 'docker' else 'commands'}")
        mine = state.pre_held.pop(job.job_id, None) if shape is None else None
        if mine is not None:
            ledger.release(mine, job, claim=True)  # its own claim does not keep it out
        problems: list[tuple[PoolRoom, PendingReason]] = []
        for room in candidates:
            problem = ledger.fits(job, room, mine is room)
            if problem is None:
                self._admit(job, room, state)
                return None
            problems.append((room, problem))
        # It fits in none of them: only then is anything preempted for it, in the first
        # pool where that makes room.
        preemption = state.preemption
        first_problem: PendingReason | None = None
        for room, problem in problems:
            claimant = mine is room
            if problem.code == _POOL_CAPACITY:
                reclaiming = preemption.reclaim(job, room, claimant)
                if reclaiming is not None:
                    if job.job_id in state.reclaiming:  # taken back for this job: claimed
                        ledger.hold(room, job, claim=True)
                    return reclaiming
            if problem.code in _PREEMPT_FOR_ROOM:
                demoting = preemption.demote(job, room, claimant)
                if demoting is not None:
                    ledger.hold(room, job, claim=True)
                    return demoting
            first_problem = first_problem or problem
        assert first_problem is not None
        if mine is not None and first_problem.code in _STILL_CLAIMED:
            # It still waits for what was taken back for it (the jobs stopping for it, or
            # room claimed for others before it): the claim goes on to the next pass.
            ledger.hold(mine, job, claim=True)
            state.reclaiming[job.job_id] = mine.name
            return first_problem
        state.failures.failed_at(job, shape, first_problem, candidates[0], snapshot.now)
        return first_problem

    def _admit(self, job: PendingJob, room: PoolRoom, state: _Pass) -> None:
        ids = state.ledger.admit(job, room)
        state.admitted.append(job.job_id)
        state.sweeps.take(job)
        state.budgets.take(job)
        state.placed[job.job_id] = room.name
        if ids:
            state.gpu_ids[job.job_id] = ids


def _drop_claim(job: PendingJob, state: _Pass) -> None:
    """The job can no longer use what was taken back for it: the room goes to others."""
    held = state.pre_held.pop(job.job_id, None)
    if held is not None:
        state.ledger.release(held, job, claim=True)


def _queue_limit(state: _Pass, queue: cfg.Queue) -> PendingReason:
    return state.reasons.of(("queue limit", queue.name, ""), lambda: PendingReason(
        ReasonCode.QUEUE_LIMIT, f"queue {queue.name!r} is at its limit of {queue.max_running} "
        "running jobs"))


def _limit_sentence(limit: int) -> str:
    return f"all {limit} job slots are in use; it starts when a running job ends."
