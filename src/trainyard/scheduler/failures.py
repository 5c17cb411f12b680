"""Why jobs of one shape could not start, remembered for the rest of a pass: a long backlog
of alike jobs then costs a full check per shape, not one per job.

A shape (PendingJob.shape: queue, kind, team, resources, service level) is what admission
tells jobs apart by, so a job of a shape that failed fails the same way while nothing is
admitted, claimed, let go or taken back in the pass (each counts in Ledger.changes). After
long waiters' holds alone (Ledger.moves counts those too) it still fits in none of its
pools, and preempting makes no room for it either: more held only ever leaves less. What it
waits for is then what its first pool says now, which only a hold there can have changed."""

from __future__ import annotations

from dataclasses import dataclass, field

from trainyard.domain.reasons import ReasonCode
from trainyard.scheduler.accounting import Ledger, PoolRoom
from trainyard.scheduler.model import PendingJob, PendingReason, Shape

# Why it failed, whether it would borrow, and when: Ledger.changes, Ledger.moves and how
# many jobs its first pool held then.
_Failed = tuple[PendingReason, bool, int, int, int]
# Reasons that more room held in a pool cannot change: its engine is away, the team's quota
# is used, or room is held already for others.
_SETTLED = (ReasonCode.POOL_UNAVAILABLE, ReasonCode.TEAM_QUOTA, ReasonCode.RESERVED)


@dataclass
class Failures:
    """The failed shapes of one pass, on its Ledger. `candidates`: the pass's pools for each
    (queue, kind), in order."""

    ledger: Ledger
    candidates: dict[tuple[str, str], list[PoolRoom]]
    reserve_after_s: float  # the policy's: a job waiting longer holds room in its first pool
    failed: dict[Shape, _Failed] = field(default_factory=dict)

    def failed_at(self, job: PendingJob, shape: Shape | None, reason: PendingReason,
                  first: PoolRoom, now: float) -> None:
        """The job fits in none of its pools (`first` the first of them), and nothing was
        preempted for it: a long waiter holds what it needs there from later jobs, except
        where it would borrow (what it holds is others' to take back). Remembered by its
        shape, unless it holds a claim (None)."""
        ledger = self.ledger
        found = (ledger.changes, ledger.moves, first.held_jobs)
        borrows = False
        if now - job.submitted_at >= self.reserve_after_s > 0:
            borrows = ledger.borrows(job, first)
            if not borrows:
                ledger.hold(first, job)
        if shape is not None:
            self.failed[shape] = (reason, borrows, *found)

    def known(self, job: PendingJob, shape: Shape, now: float) -> PendingReason | None:
        """Why a job of this shape, holding no claim, could not start earlier in the pass,
        if that still holds; a long waiter's hold is taken as failed_at() takes it. None:
        it must be checked in full."""
        known = self.failed.get(shape)
        if known is None:
            return None
        ledger = self.ledger
        if known[3] != ledger.moves:
            if known[2] != ledger.changes:
                return None
            known = self._after_holds(job, shape, known)
        if now - job.submitted_at >= self.reserve_after_s > 0 and not known[1]:
            first = self.candidates[(job.queue, job.kind)][0]  # it failed there: it has one
            if not ledger.borrows(job, first):
                ledger.hold(first, job)
            else:
                self.failed[shape] = (known[0], True, *known[2:])
        return known[0]

    def _after_holds(self, job: PendingJob, shape: Shape, known: _Failed) -> _Failed:
        """The shape's entry brought up to date after holds alone."""
        reason, borrows, epoch, _, held_jobs = known
        ledger = self.ledger
        first = self.candidates[(job.queue, job.kind)][0]
        if held_jobs != first.held_jobs and reason.code not in _SETTLED:
            fresh = ledger.fits(job, first)
            assert fresh is not None  # less room than when it did not fit
            reason = fresh
        known = self.failed[shape] = (reason, borrows, epoch, ledger.moves, first.held_jobs)
        return known
