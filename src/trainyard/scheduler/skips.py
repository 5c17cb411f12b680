"""What a pass may pass over when it need not tell every waiting job why it waits (a
replay reads only what starts and stops): the jobs whose turn can change nothing.

A pass that looks at every job (the tracker's, which writes each job's reason) costs the
length of a deep backlog, even where every job after the first few fails as one of its
shape did. The decisions are the same when it passes over

1. while nothing changes in the pass (Ledger.changes: no job admitted, no claim made or let
   go), the jobs of a passable shape. A shape is passable once a job of it failed and
   - Failures remembers it (a job of it then fails the same way, preempting nothing), and
     its jobs would borrow from other teams in their queue's first pool, so that no long
     waiter of it holds room from the jobs after it; or
   - in a queue with one pool for its kind, lacking room there even with nothing held, it
     was told that jobs stopping there free room (Preemption.reclaim's answer to every such
     job, which holds nothing);
   and, in a queue with one pool for their kind, the jobs of its queue, kind and team that
   ask for the same, at any service level, when the shape failed because room is held for
   others or on its way back (neither depends on the level, and neither preempts), or that
   ask as much or more of everything at as high a level or higher, when it failed for room,
   quota or an engine away (more asked only makes each worse; it was preempted for in vain
   where preempting could help, and a higher level, later in the queue's order, has no more
   jobs to preempt). A job room was taken back for (a claim) is never passed over. Each
   queue's next job of a shape not passable is found through the backlog's ShapeIndex, not
   by looking at those between;
2. the rest of the pass once no waiting job can start nor have room made for it by
   preempting: no claim is left, and in every pool what is held for others alone leaves too
   few GPUs for the job asking fewest (or, in a pool where nothing may be preempted, what
   is held and in use does, or every job slot is taken), or the pool's engine is away. More
   held only ever leaves less, and nothing else changes while no job starts.

The jobs passed over share one reason, not each its own."""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Mapping

from trainyard.domain import policy as cfg
from trainyard.domain.pools import shortfall
from trainyard.domain.reasons import ReasonCode
from trainyard.scheduler.accounting import Ledger, PoolRoom
from trainyard.scheduler.backlog import Backlog, OrderKey, ShapeIndex, queue_order
from trainyard.scheduler.failures import Failures
from trainyard.scheduler.model import PendingJob, PendingReason, Shape

# Why a shape failed that makes the larger ones of its queue and team passable (rule 1).
_COVERS_LARGER = frozenset({ReasonCode.POOL_CAPACITY, ReasonCode.TEAM_QUOTA,
                            ReasonCode.POOL_UNAVAILABLE})
# Why it failed that makes those asking the same passable, at any level.
_COVERS_SAME = frozenset({ReasonCode.RESERVED, ReasonCode.RECLAIMING})

ALIKE = PendingReason(ReasonCode.POOL_CAPACITY, "a job ahead of it in its queue that asks "
                      "the same could not start in this pass; it starts once such a job can")
NO_ROOM = PendingReason(ReasonCode.POOL_CAPACITY, "no waiting job could start in this pass, "
                        "nor could preempting make room for one; it starts when room is free")

_NEAR = 8  # jobs looked at one by one, before the queue's ShapeIndex is asked
# A passable shape's cover: cpus, memory, GPUs, level, and whether it covers only those
# asking the same (all of them hold at Skips._covers_at).
_Cover = tuple[float, int, int, int, bool]


class _Heads:
    """One queue's shapes, each at its next job from where the pass has got to: a heap of
    (key, shape, where in the shape's keys), less those passed over while nothing changes."""

    def __init__(self, index: ShapeIndex) -> None:
        self.heap = [(keys[0], shape, 0) for shape, keys in index.shapes.items()]
        heapq.heapify(self.heap)
        self.passed: list[tuple[Shape, int]] = []
        self.changes = -1  # Ledger.changes when `passed` was begun


class Skips:
    """One pass's: the shapes that may be passed over, and whether the pass may end.
    `claims`: the pass's jobs holding a claim not yet looked at (it pops them)."""

    def __init__(self, policy: cfg.Policy, backlog: Backlog, ledger: Ledger,
                 failures: Failures, claims: Mapping[str, PoolRoom]) -> None:
        self.backlog = backlog
        self.ledger = ledger
        self.failures = failures
        self.claims = claims
        self.holds = policy.reserve_after_s > 0  # long waiters hold room in their first pool
        self.service_levels = policy.service_levels  # jobs may be preempted for service
        self.fewest_gpus = backlog.fewest_gpus or 0
        self._heads: dict[str, _Heads] = {}
        self._passable: dict[Shape, int] = {}  # shape -> Ledger.changes it may be passed at
        self._covers: dict[tuple[str, str, str], list[_Cover]] = {}  # by queue, kind, team
        self._covers_at = -1  # the Ledger.changes _covers holds at
        self._looked = -1  # Ledger.moves when stuck() last found the pass must go on

    def after(self, job: PendingJob, reason: PendingReason, changed: bool, at: int) -> int:
        """The job could not start, for `reason` (`changed`: its turn changed something, or
        it held a claim), and the queue's next job is at `at`: where the next one not to
        pass over is (next_stop), or -1 if the pass may end (stuck)."""
        if self.stuck():
            return -1
        if not changed:
            self.failed(job, reason)
        return self.next_stop(job.queue, at)

    def failed(self, job: PendingJob, reason: PendingReason) -> None:
        """The job could not start, for `reason`, and changed nothing: from now on while
        nothing changes, the others of its shape, and those it covers, may be passed over,
        where rule 1 allows it."""
        shape, changes = job.shape, self.ledger.changes
        if self._passable.get(shape) == changes:
            return
        pools = self.failures.candidates.get((job.queue, job.kind))
        if pools is None:
            return
        code = reason.code
        if code == ReasonCode.RECLAIMING:
            room = pools[0]
            if len(pools) > 1 or \
                    shortfall(room.pool.capacity, job.resources, room.used, room.jobs) is None:
                return
        else:
            known = self.failures.failed.get(shape)
            if known is None or known[2] != changes:
                return  # no shape memo, or one from before a change
            if self.holds and not self.ledger.borrows(job, pools[0]):
                return
            code = known[0].code
        self._passable[shape] = changes
        if len(pools) == 1 and (code in _COVERS_LARGER or code in _COVERS_SAME):
            if self._covers_at != changes:
                self._covers.clear()
                self._covers_at = changes
            self._covers.setdefault(shape[:3], []).append(
                (*shape[3:], code in _COVERS_SAME))

    def _covered(self, shape: Shape, changes: int) -> bool:
        """Whether a passable shape of its queue, kind and team covers this one (rule 1)."""
        if self._covers_at != changes:
            return False
        for cpus, memory, gpus, level, same in self._covers.get(shape[:3], ()):
            if (cpus == shape[3] and memory == shape[4] and gpus == shape[5]) if same else (
                    cpus <= shape[3] and memory <= shape[4] and gpus <= shape[5] and
                    level <= shape[6]):
                self._passable[shape] = changes
                return True
        return False

    def next_stop(self, queue: str, at: int) -> int:
        """Where in the queue's jobs, from `at`, the next one is that may not be passed
        over: of a shape not passable now, or one holding a claim."""
        jobs = self.backlog.queues.get(queue, ())
        if at >= len(jobs):
            return at
        changes = self.ledger.changes
        passable = self._passable
        for near in range(at, min(at + _NEAR, len(jobs))):  # the usual case: one is near
            shape = jobs[near].shape
            if passable.get(shape) != changes and not self._covered(shape, changes):
                return near if not self.claims else self._claimed(queue, at, near)
        index = self.backlog.index(queue)
        keys = index.keys
        heads = self._heads.get(queue)
        if heads is None:
            heads = self._heads[queue] = _Heads(index)
        if heads.changes != changes:  # what was passable may not be any more
            for passed, where in heads.passed:
                heapq.heappush(heads.heap, (index.shapes[passed][where], passed, where))
            heads.passed.clear()
            heads.changes = changes
        cursor = keys[at]
        stop: OrderKey | None = None
        heap = heads.heap
        while heap:
            key, shape, where = heap[0]
            if key < cursor:  # behind where the pass has got to: on to its next job
                alike = index.shapes[shape]
                where = bisect_left(alike, cursor, where + 1)
                if where < len(alike):
                    heapq.heapreplace(heap, (alike[where], shape, where))
                else:
                    heapq.heappop(heap)
                continue
            if passable.get(shape) == changes or self._covered(shape, changes):
                heapq.heappop(heap)
                heads.passed.append((shape, where))
                continue
            stop = key
            break
        found = len(keys) if stop is None else bisect_left(keys, stop, at)
        return self._claimed(queue, at, found) if self.claims else found

    def _claimed(self, queue: str, at: int, stop: int) -> int:
        """`stop`, or where the first job from `at` of the queue's that holds a claim is, if
        it comes sooner."""
        jobs = self.backlog.queues[queue]
        start = queue_order(jobs[at])
        for job_id in self.claims:
            claimant = self.backlog.get(job_id)
            if claimant is not None and claimant.queue == queue:
                key = queue_order(claimant)
                if key >= start:
                    stop = min(stop, bisect_left(jobs, key, at, stop, key=queue_order))
        return stop

    def stuck(self) -> bool:
        """Whether, by rule 2, no waiting job can start nor have room made for it in the
        rest of the pass."""
        ledger = self.ledger
        if self.claims or ledger.moves == self._looked:
            return False
        self._looked = ledger.moves
        fewest = self.fewest_gpus
        for room in ledger.rooms.values():
            pool = room.pool
            if ledger.unavailable and pool.executor in ledger.unavailable:
                continue
            cap = pool.capacity
            held = room.held.gpus if room.held_jobs else 0
            if held + fewest > cap.gpus:
                continue  # not even preempting every running job makes room
            if room.quotas is None and not self.service_levels and (
                    room.used.gpus + held + fewest > cap.gpus or
                    room.jobs + room.held_jobs >= cap.max_jobs):
                continue  # no one is preempted here: only an end makes room
            return False
        return True
