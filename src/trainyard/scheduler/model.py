"""The scheduler's inputs and outputs."""

from __future__ import annotations

from collections.abc import Callable, Collection, ItemsView, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from trainyard.domain.budgets import BudgetScope, BudgetUse
from trainyard.domain.kinds import JobKind
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler.attained import attained_by, level

# A waiting job's shape (PendingJob.shape): queue, kind, team, cpus, memory, GPUs, level.
Shape = tuple[str, str, str, float, int, int, int]


@dataclass(frozen=True)
class PendingJob:
    job_id: str
    queue: str
    priority: int
    seq: int  # submit order: lower was submitted first
    resources: Resources = field(default_factory=Resources)
    kind: str = JobKind.LOCAL  # which executor runs it (domain.kinds): "local" or "docker"
    owner: str = ""
    team: str = ""  # whose quota it draws on; empty for none
    submitted_at: float = 0.0
    sweep: str = ""  # the sweep or pipeline it belongs to
    attained: float = 0.0  # service held in earlier runs (scheduler.attained), for its level
    time_limit_s: float = 0.0  # each attempt's longest run; 0: none (scheduler.budgets)

    @property
    def service_level(self) -> int:
        return level(self.attained) if self.attained else 0

    # Worked out once a job: a pass looks at a long backlog's jobs again and again.
    @cached_property
    def shape(self) -> Shape:
        """What admission tells it apart by: queue, kind, team, cpus, memory, GPUs and
        service level. Two waiting jobs of one shape, neither holding a claim, fit or not
        alike."""
        need = self.resources
        return (self.queue, self.kind, self.team, need.cpus, need.memory_mb, need.gpus,
                self.service_level)


@dataclass(frozen=True)
class RunningJob:
    job_id: str
    queue: str
    resources: Resources = field(default_factory=Resources)
    pool: str = JobKind.LOCAL  # the named pool it runs in
    gpu_ids: tuple[str, ...] = ()
    team: str = ""
    started_at: float = 0.0
    preempting: bool = False  # already asked to stop: its capacity is on its way back
    sweep: str = ""
    attained: float = 0.0  # service held before this run (scheduler.attained)
    priority: int = 0  # the job's own, inside its queue
    time_limit_s: float = 0.0  # this attempt's longest run; 0: none (scheduler.budgets)

    def service_level(self, now: float) -> int:
        """Its level at `now`: the service of its earlier runs and of this one so far."""
        return level(attained_by(self.attained, self.resources, self.started_at, now))


@dataclass(frozen=True)
class Snapshot:
    # The waiting jobs: a scheduler.backlog.Backlog, which keeps each queue's jobs in order
    # between passes, or any collection of them (grouped and sorted in the pass). Ids are
    # unique.
    pending: Collection[PendingJob]
    running: Sequence[RunningJob]
    now: float
    # Capacity per pool, for FifoPolicy, which knows pools by the kind of job they run
    # (QueuePolicy's pools are its policy's). With none listed, pools are not accounted (only
    # the global limit applies); otherwise a job whose kind has no pool listed waits for one.
    pools: Mapping[str, PoolCapacity] = field(default_factory=dict)
    # Executors that cannot launch anything now (their engine is away), with why.
    unavailable: Mapping[str, str] = field(default_factory=dict)
    # Each queue's decayed usage so far, for fair turns between queues of equal priority.
    usage: Mapping[str, float] = field(default_factory=dict)
    # How many jobs of a sweep or pipeline may run at once, for those that limit it, and
    # how sentences name them ("pipeline 'etl'"; by default "sweep <id>").
    sweep_limits: Mapping[str, int] = field(default_factory=dict)
    sweep_titles: Mapping[str, str] = field(default_factory=dict)
    # Sweeps none of whose jobs may start (paused), with why; and, for sweeps with a trial
    # budget, how many more of their jobs may start (scheduler/sweeps.py).
    sweep_holds: Mapping[str, PendingReason] = field(default_factory=dict)
    sweep_starts: Mapping[str, int] = field(default_factory=dict)
    # The last pass's Decisions.reclaiming: waiting jobs for which borrowed quota is being
    # taken back, each with the pool. What comes back is held for them, not lent again.
    reclaiming: Mapping[str, str] = field(default_factory=dict)
    # What each budget over time (domain.budgets) has used in its window as of `now`, ended
    # and running attempts alike; None: not tracked, and budgets are not checked (the
    # replay). A budget missing from the mapping has used nothing.
    budget_use: Mapping[BudgetScope, BudgetUse] | None = None


@dataclass(frozen=True)
class PendingReason:
    code: ReasonCode
    message: str


class SharedReasons(dict[tuple[str, str, str], PendingReason]):
    """One reason object for each key in a pass, made when first needed: for reasons whose
    message depends on nothing but the key (and the policy), shared by the jobs they hold.
    `carried`: the last pass's of the same policy, whose objects are taken over, so that
    a reason unchanged between passes is the same object; only the keys a pass uses are
    carried on, so they never pile up."""

    def __init__(self, carried: Mapping[tuple[str, str, str], PendingReason] | None = None
                 ) -> None:
        super().__init__()
        # A copy of the entries alone: a pass never holds on to the passes before it.
        self._carried = dict(carried) if carried else {}

    def of(self, key: tuple[str, str, str], make: Callable[[], PendingReason]
           ) -> PendingReason:
        found = self.get(key)
        if found is None:
            found = self._carried.get(key)
            self[key] = found = make() if found is None else found
        return found


class PendingReasons(Mapping[str, PendingReason]):
    """Why each waiting job that was not admitted waits: some job by job, and the rest a
    queue's tail at a time (every job after the first of a queue to meet a limit shares that
    limit's reason), so a pass never writes an entry per job of a long backlog. A mapping
    from job id to reason; a lookup by id builds an index of the tails the first time."""

    def __init__(self, each: dict[str, PendingReason] | None = None,
                 tails: Sequence[tuple[Sequence[PendingJob], PendingReason]] = ()) -> None:
        self.each = {} if each is None else each  # job id -> reason
        self.tails = tails  # (jobs, the reason each of them has); none of them in `each`
        self._index: dict[str, PendingReason] | None = None

    def __getitem__(self, job_id: str) -> PendingReason:
        found = self.each.get(job_id)
        if found is not None:
            return found
        if self._index is None:
            self._index = {job.job_id: reason for jobs, reason in self.tails for job in jobs}
        return self._index[job_id]

    def __iter__(self) -> Iterator[str]:
        yield from self.each
        for jobs, _ in self.tails:
            for job in jobs:
                yield job.job_id

    def __len__(self) -> int:
        return len(self.each) + sum(len(jobs) for jobs, _ in self.tails)

    def items(self) -> ItemsView[str, PendingReason]:
        return _Items(self)


class _Items(ItemsView[str, PendingReason]):
    """PendingReasons.items() without a lookup per job."""

    _mapping: PendingReasons

    def __iter__(self) -> Iterator[tuple[str, PendingReason]]:
        reasons = self._mapping
        yield from reasons.each.items()
        for jobs, reason in reasons.tails:
            for job in jobs:
                yield job.job_id, reason


@dataclass(frozen=True)
class Decisions:
    admit: tuple[str, ...]  # job ids in launch order
    pending: Mapping[str, PendingReason]  # every job not admitted, with why it waits
    # Set when nothing can start until an active job ends or the policy's inputs change in
    # some way other than new submissions; a job submitted meanwhile waits for this reason.
    # It lets the caller answer a stream of submits without a full pass for each.
    saturated: PendingReason | None = None
    # The device ids each admitted job that asked for GPUs gets, disjoint from those in use.
    gpu_ids: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The pool each admitted job was placed in, where the policy chose among several.
    pools: dict[str, str] = field(default_factory=dict)
    # Running jobs to stop and requeue, each with why: borrowed quota going back to its owner.
    preempt: dict[str, str] = field(default_factory=dict)
    # Waiting jobs for which borrowed quota is being taken back, each with the pool: the
    # caller hands them to the next pass as Snapshot.reclaiming.
    reclaiming: dict[str, str] = field(default_factory=dict)
    # Set when the pass held room for jobs that have waited long (the policy's
    # reserve_after_s), keeping it from the jobs whose turn came later: in a pass whose
    # queues take their turns in another order (fair share changes it with time alone), such
    # a job may start, or preempt, where it could not in this one.
    held_for_waiters: bool = False
    # Set when the pass found a job (or a preemption's trial of one) that fit but for room
    # held for others, claims included (RESERVED, which tries no preemption): once a later
    # admission has taken room that was not held, or a claim's room is its job's, such a
    # job no longer fits, and may then preempt.
    held_out: bool = False


class Policy(Protocol):
    def schedule(self, snapshot: Snapshot) -> Decisions: ...


def orders_by_service(policy: Policy) -> bool:
    """Whether the policy ranks waiting jobs by the service they attained (a policy says so
    with an `orders_by_service` attribute): only then are jobs handed to it with their
    attained service, so that a queue's Backlog orders them by level."""
    return bool(getattr(policy, "orders_by_service", False))
