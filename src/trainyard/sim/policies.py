"""The policies a replay compares, by name.

`fifo`, `priority` and `default` are the service's own scheduler code (FifoPolicy and
QueuePolicy); `srtf-oracle` and `las` exist only here. Both are preemptive and see only the
pools: every job, running or waiting, is taken in the policy's order and keeps or gets room
in the first of its queue's pools that has it (a running job stays in its pool); running
jobs left without room are preempted, and waiting jobs that got room are admitted. Queue
priorities, queue limits and team quotas play no part in them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import overload

from trainyard.domain import policy as cfg
from trainyard.domain.pools import PoolCapacity, allocate_gpus, shortfall
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler.attained import THRESHOLDS, next_threshold_at
from trainyard.scheduler.fifo import FifoPolicy
from trainyard.scheduler.model import (
    Decisions,
    PendingJob,
    PendingReason,
    PendingReasons,
    Policy,
    RunningJob,
    Snapshot,
    orders_by_service,
)
from trainyard.scheduler.preemption import admissions_settle, preemptible_from, reclaim_victim
from trainyard.scheduler.queues import QueuePolicy
from trainyard.sim.checkpoints import NO_CHECKPOINTS, Checkpointing
from trainyard.sim.cluster import executor_pools, without_quotas
from trainyard.sim.engine import IndexedBacklog, Key, Progress, Replay

POLICIES = ("fifo", "priority", "default", "srtf-oracle", "las")
# LAS levels, in GPU-seconds of attained service: the service's own (QueuePolicy orders a
# queue's jobs by them), doubling from 1 GPU-hour.
LAS_THRESHOLDS = THRESHOLDS

_ROOM = PendingReason(ReasonCode.POOL_CAPACITY, "jobs ahead of it in the policy's order hold "
                      "the room it needs; it starts when enough is free")
_MAKING_ROOM = PendingReason(ReasonCode.RECLAIMING, "jobs behind it in the policy's order "
                             "are being preempted to make room for it")
ZERO = Resources(0.0, 0, 0)


class PriorityPolicy:
    """Queue priority, then job priority and submit order: QueuePolicy with no teams (so
    no quotas, borrowing or reclaim), no service levels, and no fair share (every queue's
    usage is zero, so queues of equal priority take turns within each pass only)."""

    def __init__(self, policy: cfg.Policy, every_reason: bool = True) -> None:
        self.policy = replace(without_quotas(policy), service_levels=False)
        self._queues = QueuePolicy(self.policy, every_reason)

    def schedule(self, snapshot: Snapshot) -> Decisions:
        return self._queues.schedule(replace(snapshot, usage={}))


@dataclass
class _Room:
    """One pool in one pass: what the jobs given room so far take of it."""

    capacity: PoolCapacity
    used: Resources = ZERO
    jobs: int = 0

    def fits(self, need: Resources) -> bool:
        return shortfall(self.capacity, need, self.used, self.jobs) is None

    def take(self, need: Resources) -> None:
        self.used = Resources(self.used.cpus + need.cpus, self.used.memory_mb +
                              need.memory_mb, self.used.gpus + need.gpus)
        self.jobs += 1

    def full(self, fewest_gpus: int) -> bool:
        """No job that asks for `fewest_gpus` GPUs or more fits any more."""
        return self.used.gpus + fewest_gpus > self.capacity.gpus or \
            self.jobs >= self.capacity.max_jobs


class OrderedPreemptive:
    """Every job in one order, best first; see the module's docstring. Subclasses give the
    order: key(job, running, now), ascending, ending with the job's seq. A waiting job's key
    must not change while it waits (it is indexed by the replay's IndexedBacklog); a
    running job's may.

    Once the pools hold no room for the waiting job asking fewest GPUs, a pass looks at no
    more waiting jobs, only at the running ones still to keep their room; `exhaustive`
    looks at every waiting job all the same (the decisions are the same)."""

    def __init__(self, policy: cfg.Policy, progress: Progress,
                 exhaustive: bool = False) -> None:
        self.policy = policy
        self.progress = progress
        self.exhaustive = exhaustive
        self._pools: dict[tuple[str, str], tuple[str, ...]] = {}  # (queue, kind) -> pools

    def key(self, job_id: str, seq: int, gpus: int, running: bool, now: float) -> Key:
        raise NotImplementedError

    def waiting_key(self, job: PendingJob) -> Key:
        """The key a job has while it waits (its progress does not move then)."""
        return self.key(job.job_id, job.seq, job.resources.gpus, False, 0.0)

    def schedule(self, snapshot: Snapshot) -> Decisions:
        now = snapshot.now
        states = self.progress.states
        rooms = {name: _Room(pool.capacity) for name, pool in self.policy.pools.items()}
        running = sorted(
            ((self.key(run.job_id, states[run.job_id].pending.seq, run.resources.gpus, True,
                       now), run) for run in snapshot.running), key=_first)
        pending = snapshot.pending
        if isinstance(pending, IndexedBacklog):
            ordered: Sequence[tuple[Key, PendingJob]] = pending.ordered()
            fewest = pending.fewest_gpus or 0
        else:
            ordered = sorted(((self.waiting_key(job), job) for job in pending), key=_first)
            fewest = min((job.resources.gpus for job in pending), default=0)
        keep: set[str] = set()
        chosen: list[tuple[PendingJob, str]] = []
        slots, limit = 0, self.policy.max_running
        r = w = 0
        # No waiting job can get room any more: rooms only fill up in a pass. Without a
        # waiting job that asks for no GPU (fewest 0) only job slots can say so.
        full = False
        while r < len(running) or (w < len(ordered) and not full):
            if r < len(running) and (full or w >= len(ordered) or
                                     running[r][0] < ordered[w][0]):
                run = running[r][1]
                r += 1
                room = rooms.get(run.pool)
                if room is not None and slots < limit and room.fits(run.resources):
                    room.take(run.resources)
                    keep.add(run.job_id)
                    slots += 1
                    if not full and not self.exhaustive:
                        full = all(room.full(fewest) for room in rooms.values())
                continue
            job = ordered[w][1]
            w += 1
            if slots >= limit:
                full = True
                continue
            for name in self._candidates(job):
                room = rooms[name]
                if room.fits(job.resources):
                    room.take(job.resources)
                    chosen.append((job, name))
                    slots += 1
                    full = not self.exhaustive and \
                        all(room.full(fewest) for room in rooms.values())
                    break
        preempt = {run.job_id: "preempted: jobs ahead of it in the policy's order need its "
                   "room; it resumes where it stopped" for _, run in running
                   if run.job_id not in keep}
        taken = {gpu for run in snapshot.running for gpu in run.gpu_ids}
        admit: list[str] = []
        gpu_ids: dict[str, tuple[str, ...]] = {}
        placed: dict[str, str] = {}
        each: dict[str, PendingReason] = {}
        for job, name in chosen:
            ids = allocate_gpus(self.policy.pools[name].capacity, taken, job.resources.gpus)
            if ids is None:  # held by jobs being preempted: it starts in the next pass
                each[job.job_id] = _MAKING_ROOM
                continue
            taken.update(ids)
            admit.append(job.job_id)
            placed[job.job_id] = name
            if ids:
                gpu_ids[job.job_id] = ids
        rest = _Except(pending, set(admit) | set(each))
        return Decisions(admit=tuple(admit), pending=PendingReasons(each, [(rest, _ROOM)]),
                         gpu_ids=gpu_ids, pools=placed, preempt=preempt)

    def _candidates(self, job: PendingJob) -> tuple[str, ...]:
        found = self._pools.get((job.queue, job.kind))
        if found is None:
            queue = self.policy.queues.get(job.queue)
            found = () if queue is None else tuple(
                name for name in queue.pools if name in self.policy.pools
                and self.policy.pools[name].executor == job.kind)
            self._pools[(job.queue, job.kind)] = found
        return found


def _first(item: tuple[Key, object]) -> Key:
    return item[0]


class _Except(Sequence[PendingJob]):
    """The waiting jobs but some, listed only when read: a pass's tail of reasons costs
    nothing unless someone asks."""

    def __init__(self, pending: Collection[PendingJob], left_out: set[str]) -> None:
        self._pending = pending
        self._left_out = left_out
        self._jobs: list[PendingJob] | None = None

    def _all(self) -> list[PendingJob]:
        if self._jobs is None:
            self._jobs = [job for job in self._pending if job.job_id not in self._left_out]
        return self._jobs

    @overload
    def __getitem__(self, index: int) -> PendingJob: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[PendingJob]: ...

    def __getitem__(self, index: int | slice) -> PendingJob | Sequence[PendingJob]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._pending) - len(self._left_out)


class SrtfOraclePolicy(OrderedPreemptive):
    """Shortest remaining time first, preemptive, knowing every job's remaining work: a
    bound to compare with, not a policy a service could run. Ties keep running jobs."""

    def key(self, job_id: str, seq: int, gpus: int, running: bool, now: float) -> Key:
        remaining = self.progress.remaining(job_id, now) if running else \
            self.progress.states[job_id].remaining
        return (remaining, 0.0 if running else 1.0, float(seq))


class LasPolicy(OrderedPreemptive):
    """Least attained service, discretized as Tiresias does: a job's level is how many of
    the thresholds (GPU-seconds it has held) it has passed; lower levels go first, and
    inside a level running jobs keep their place, then submit order. Needs no durations.
    A running job that passes a threshold may be preempted then: wake() says when."""

    def __init__(self, policy: cfg.Policy, progress: Progress,
                 thresholds: Sequence[float] = LAS_THRESHOLDS, exhaustive: bool = False
                 ) -> None:
        super().__init__(policy, progress, exhaustive)
        self.thresholds = tuple(sorted(thresholds))

    def level(self, attained: float) -> int:
        return sum(1 for limit in self.thresholds if attained >= limit)

    def key(self, job_id: str, seq: int, gpus: int, running: bool, now: float) -> Key:
        attained = self.progress.attained(job_id, now) if running else \
            self.progress.states[job_id].attained
        return (float(self.level(attained)), 0.0 if running else 1.0, float(seq))

    def wake(self, run: RunningJob, after: float) -> float | None:
        """When the running job passes its next threshold after `after`."""
        return next_threshold_at(run.attained, run.resources, run.started_at, after,
                                 self.thresholds)


def queue_policy_wake(policy: cfg.Policy) -> Callable[[RunningJob, float], float | None]:
    """When QueuePolicy might preempt a running job with nothing else happening: once
    preemptible() first allows it (it has run min_runtime: a borrower's quota may be
    reclaimed then), and each time it passes a service level (a less-served job of its team
    may then preempt it). The replay must pass then, as the tracker's periodic passes would.
    Never for jobs of queues that may not be preempted."""

    def wake(run: RunningJob, after: float) -> float | None:
        settled = preemptible_from(run, policy)
        if settled is None:
            return None
        times = []
        if settled > after and (policy.teams or policy.service_levels):
            times.append(settled)  # quota reclaim needs teams; service, a group
        if policy.service_levels:
            passes = next_threshold_at(run.attained, run.resources, run.started_at, after)
            if passes is not None:
                times.append(max(passes, settled))
        return min(times, default=None)

    return wake


def replay_for(name: str, policy: cfg.Policy, total_gpus: int, teams: Sequence[str],
               restart_overhead: float = 0.0,
               checkpoints: Checkpointing = NO_CHECKPOINTS, exhaustive: bool = False
               ) -> Replay:
    """A Replay running the named policy on the cluster `policy` declares. Its passes pass
    over the waiting jobs that cannot start (QueuePolicy's every_reason=False, and
    OrderedPreemptive's), deciding the same; `exhaustive`: every pass looks at every
    waiting job and gives each its own reason, as the tracker's does."""
    pools: Mapping[str, PoolCapacity] = {n: p.capacity for n, p in policy.pools.items()}
    progress = Progress()
    wake: Callable[[RunningJob, float], float | None] | None = None
    key: Callable[[PendingJob], Key] | None = None
    chosen: Policy
    if name == "fifo":
        chosen, pools = FifoPolicy(policy.max_running), executor_pools(policy)
    elif name == "priority":
        chosen = PriorityPolicy(policy, every_reason=exhaustive)
    elif name == "default":
        chosen, wake = QueuePolicy(policy, exhaustive), queue_policy_wake(policy)
    elif name == "srtf-oracle":
        srtf = SrtfOraclePolicy(policy, progress, exhaustive)
        chosen, key = srtf, srtf.waiting_key
    elif name == "las":
        las = LasPolicy(policy, progress, exhaustive=exhaustive)
        chosen, key, wake = las, las.waiting_key, las.wake
    else:
        raise ValueError(f"unknown policy {name!r}; the policies are {', '.join(POLICIES)}")
    return Replay(chosen, pools, total_gpus,
                  half_life=policy.fair_share_half_life_s, fair_share=name == "default",
                  restart_overhead=restart_overhead, checkpoints=checkpoints, wake=wake,
                  backlog_key=key, teams=teams,
                  progress=progress, by_service=orders_by_service(chosen),
                  quiet_wakes=name == "default",
                  reclaim_victim=reclaim_victim(policy) if name == "default" else None,
                  admissions_settle=admissions_settle(policy) if name == "default" else None)
