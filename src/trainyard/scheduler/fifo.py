"""First in, first out under one global concurrency limit and each pool's capacity."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter

from trainyard.domain.pools import PoolCapacity, add, allocate_gpus, shortfall
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler.model import Decisions, PendingJob, PendingReason, Snapshot
from trainyard.scheduler.sweeps import SweepSlots

# Submit order: the store's sequence. A C-level getter, since a pass sorts the whole queue.
fifo_key: Callable[[PendingJob], int] = attrgetter("seq")


@dataclass
class PoolUsage:
    """What the active and just-admitted jobs hold of one pool."""

    capacity: PoolCapacity
    gpus_taken: set[str]  # shared by all pools: pools may hand out the same host's devices
    used: Resources = field(default_factory=lambda: Resources(0.0, 0, 0))
    jobs: int = 0
    blocked: PendingReason | None = None  # set once a job of this pool could not fit

    def take(self, resources: Resources, gpu_ids: tuple[str, ...]) -> None:
        self.used = add(self.used, resources)
        self.jobs += 1
        self.gpus_taken.update(gpu_ids)


class FifoPolicy:
    """Admit waiting jobs in submit order while fewer than `max_running` are active and their
    pool has room. A job that does not fit holds back the later jobs of its pool only. Pools
    are known by the kind of job they run: a snapshot's pools are named after kinds."""

    def __init__(self, max_running: int) -> None:
        self.max_running = max_running  # across all pools
        self._limit: tuple[int, PendingReason] | None = None

    def _limit_reason(self) -> PendingReason:
        """Why a job waits while every slot is in use: one object for as long as the limit
        stands, so that the tracker tells an unchanged reason by identity alone."""
        if self._limit is None or self._limit[0] != self.max_running:
            self._limit = (self.max_running, PendingReason(
                ReasonCode.GLOBAL_CONCURRENCY_LIMIT, _limit_sentence(self.max_running)))
        return self._limit[1]

    def schedule(self, snapshot: Snapshot) -> Decisions:
        ordered = sorted(snapshot.pending, key=fifo_key)
        gpus_taken: set[str] = set()
        usage = {name: PoolUsage(cap, gpus_taken) for name, cap in snapshot.pools.items()}
        for run in snapshot.running:
            if run.pool in usage:
                usage[run.pool].take(run.resources, run.gpu_ids)
            else:
                gpus_taken.update(run.gpu_ids)
        for name, away in snapshot.unavailable.items():
            if name in usage:
                usage[name].blocked = PendingReason(ReasonCode.POOL_UNAVAILABLE, away)
        free = max(0, self.max_running - len(snapshot.running))
        # The sentence is the same for every waiting job and changes only with the limit,
        # so it is stored once per job, not rewritten on every pass; the queue position
        # (computed when asked) says how many are ahead.
        limit = self._limit_reason()
        admit: list[str] = []
        gpus: dict[str, tuple[str, ...]] = {}
        pending: dict[str, PendingReason] = {}
        sweeps = SweepSlots(snapshot.sweep_limits, snapshot.running, snapshot.sweep_titles,
                            snapshot.sweep_holds, snapshot.sweep_starts)
        group_rules = sweeps.any  # taking a job changes no group's rules, only its counts
        for index, job in enumerate(ordered):
            if len(admit) >= free and not group_rules:
                # Every slot is taken and no group has a rule: the rest of the queue waits
                # for the limit alone, settled at once rather than job by job.
                pending.update(dict.fromkeys([j.job_id for j in ordered[index:]], limit))
                break
            capped = sweeps.blocked(job)
            if capped is not None:
                pending[job.job_id] = capped
                continue
            if len(admit) >= free:
                pending[job.job_id] = limit
                continue
            pool = usage.get(job.kind)
            if pool is None:
                if snapshot.pools:
                    pending[job.job_id] = PendingReason(
                        ReasonCode.POOL_UNAVAILABLE, f"this server runs no {job.kind} pool; it "
                        "starts once the server runs one again" + _HINTS.get(job.kind, ""))
                    continue
                sweeps.take(job)
                admit.append(job.job_id)
                continue
            if pool.blocked is not None:
                pending[job.job_id] = pool.blocked
                continue
            why = shortfall(pool.capacity, job.resources, pool.used, pool.jobs)
            ids = allocate_gpus(pool.capacity, pool.gpus_taken, job.resources.gpus)
            if why is not None or ids is None:
                why = why or f"pool {job.kind!r} has too few GPUs free"
                pending[job.job_id] = PendingReason(
                    ReasonCode.POOL_CAPACITY, f"{why}; it starts when enough of the pool is "
                    "free.")
                pool.blocked = PendingReason(
                    ReasonCode.POOL_ORDER, f"an earlier job waits for room in pool "
                    f"{job.kind!r}; the jobs of a pool start in submit order.")
                continue
            pool.take(job.resources, ids)
            sweeps.take(job)
            admit.append(job.job_id)
            if ids:
                gpus[job.job_id] = ids
        full = len(snapshot.running) + len(admit) >= self.max_running
        return Decisions(admit=tuple(admit), pending=pending,
                         saturated=limit if full else None, gpu_ids=gpus)


_HINTS = {"docker": " (trainyard server --docker)"}


def _limit_sentence(limit: int) -> str:
    slots = "the only job slot is" if limit == 1 else f"all {limit} job slots are"
    return (f"{slots} in use; it starts when a running job ends and the jobs ahead of it "
            "have started.")
