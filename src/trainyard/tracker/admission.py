"""The admission pass: the scheduler's input read from the store, its decisions carried out
(stops asked of victims, launches begun), and why every other job waits written down."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from trainyard.domain.errors import StaleState
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.retry import pending_timeout_reached
from trainyard.domain.states import ACTIVE_STATES, JobState
from trainyard.executors.base import Executor
from trainyard.executors.registry import executor_for
from trainyard.scheduler import PendingReason, Policy, RunningJob, Snapshot
from trainyard.scheduler.attained import held_service
from trainyard.scheduler.budgets import budgets_in, periods_of
from trainyard.scheduler.model import orders_by_service
from trainyard.scheduler.snapshot import active_job
from trainyard.store.budget_usage import BudgetUsageStore
from trainyard.store.jobs import JobStore
from trainyard.store.records import JobRecord, join_ids
from trainyard.tracker.fair_share import FairShareUsage
from trainyard.tracker.launcher import Launcher
from trainyard.tracker.sweep_gate import SweepGate
from trainyard.tracker.telemetry import NO_TELEMETRY, TrackerTelemetry, preemption_cause
from trainyard.tracker.waiting import WaitingJobs

log = logging.getLogger(__name__)


class Admission:
    def __init__(self, *, jobs: JobStore, waiting: WaitingJobs, policy: Callable[[], Policy],
                 pools: Mapping[str, PoolCapacity], executors_by_kind: Mapping[str, Executor],
                 launcher: Launcher, fair_share: FairShareUsage,
                 clock: Callable[[], float], reconcile_soon: Callable[[], None],
                 telemetry: TrackerTelemetry = NO_TELEMETRY) -> None:
        self.jobs = jobs
        self.telemetry = telemetry
        self.waiting = waiting
        self.policy = policy  # the tracker's, which may be swapped
        self.pools = pools
        self.executors_by_kind = executors_by_kind
        self.launcher = launcher
        self.fair_share = fair_share
        self.clock = clock
        self._reconcile_soon = reconcile_soon  # the next pass delivers the stops asked
        self._saturated: PendingReason | None = None  # from the last full pass
        self._reasons: dict[str, PendingReason] = {}  # last pending reasons written
        self.budget_usage = BudgetUsageStore(jobs.db)  # read at each pass, for the budgets
        self.sweep_gate = SweepGate(jobs, clock)  # paused sweeps and budgets

    def run(self, leaving: frozenset[str] = frozenset(),
            active: Sequence[JobRecord] | None = None) -> int:
        """Ask the policy what to start, start it, record why the rest waits. `leaving`: ids
        of active jobs whose attempts are over, their ends not yet written; their room is
        free. `active`: the active jobs as the caller just read them (None: read them now).
        Returns the number of active jobs afterwards, less those leaving."""
        began = time.perf_counter()
        self._cancel_expired()
        if active is None:
            active = self.jobs.in_states(ACTIVE_STATES)
        running = [job for job in active if job.id not in leaving]
        snapshot = self._scheduler_input(running, self.clock())
        if snapshot is None:
            self._reasons.clear()
            self._saturated = None
            self.telemetry.admission_pass(time.perf_counter() - began, 0)
            return len(running)
        try:
            return self._decide(snapshot, running)
        finally:
            self.telemetry.admission_pass(time.perf_counter() - began, len(snapshot.pending))

    def _decide(self, snapshot: Snapshot, running: Sequence[JobRecord]) -> int:
        decisions = self.policy().schedule(snapshot)
        self._saturated = decisions.saturated
        self.fair_share.carry(decisions)
        for victim, why in decisions.preempt.items():
            # Why it stops is its message until it is requeued, and then that event's reason.
            if self.jobs.update_fields(victim, JobState.RUNNING, unless_stopping=True,
                                       preempt_requested=True, message=why):
                log.info("preempting %s: %s", victim, why)
                self.telemetry.preemption(preemption_cause(why))
                self._reconcile_soon()
        launched = 0
        for job_id in decisions.admit:
            self.waiting.remove(job_id)  # launched, failed or cancelled: it left the queue
            launched += self.launch(self.jobs.get(job_id), decisions.gpu_ids.get(job_id, ()),
                                    decisions.pools.get(job_id, ""))
        self._write_reasons(decisions.pending)
        return len(running) + launched

    def explain_new_jobs(self) -> bool:
        """While the policy is saturated and only submits happened, new jobs cannot start:
        record why they wait without a full pass over the queue. False if the policy is not
        saturated or a full read of the queue is due: then a full pass is."""
        reason = self._saturated
        if reason is None:
            return False
        new = self.waiting.read_new()
        if new is None:
            return False
        self.jobs.set_pending_reasons({j.job_id: (reason.code, reason.message) for j in new})
        self._reasons.update((j.job_id, reason) for j in new)
        return True

    def launch(self, job: JobRecord, gpu_ids: tuple[str, ...], pool: str) -> bool:
        """Record LAUNCHING with the handle about to be created, the pool and the devices
        allocated, then create it beside the loop. False if the job left the queue first."""
        attempt = job.attempt + 1
        # The policy admits only jobs of the kinds in its snapshot, which are the executors'.
        handle = executor_for(self.executors_by_kind, job.kind).handle_for(job.id, attempt)
        pool = pool or job.kind
        stops_asked = self.launcher.stops_asked()  # a cancel after the next write is noted
        now = self.clock()
        try:
            self.jobs.transition(
                job.id, JobState.WAITING, JobState.LAUNCHING, reason=f"admitted to pool {pool}",
                now=now, known=job, synced=self.launcher.launching_synced(job.kind),
                attempt=attempt, executor=job.kind, pool=pool, handle=handle,
                gpu_ids=join_ids(gpu_ids), pending_code="", pending_message="",
                metrics_offset=0, message="", exit_code=None, retry_after=None,
                started_at=None,  # a new attempt has not run yet; RUNNING sets it
                notice_at=None, checkpoint_at=None, checkpoints=0,  # nor been given notice
            )
        except StaleState:
            return False  # cancelled meanwhile
        self.launcher.launch_beside(replace(
            job, state=JobState.LAUNCHING, updated_at=now, attempt=attempt,
            executor=job.kind, pool=pool, handle=handle, gpu_ids=gpu_ids, metrics_offset=0,
            notice_at=None, checkpoint_at=None, checkpoints=0), stops_asked)
        return True

    def _cancel_expired(self) -> None:
        """Jobs that waited past their pending timeout without starting are cancelled."""
        reasons: dict[str, str] = {}
        for job_id, timeout in self.waiting.expired():
            self.waiting.remove(job_id)
            reasons[job_id] = pending_timeout_reached(timeout)
        for job_id in self.jobs.cancel_waiting(reasons, now=self.clock()) if reasons else ():
            log.info("job %s: %s", job_id, reasons[job_id])

    def _scheduler_input(self, running: Sequence[JobRecord], now: float) -> Snapshot | None:
        """What the policy decides on: the active jobs, the usage decayed to now, the
        waiting jobs and their groups' limits; None when no job waits."""
        active = [running_job(j, now) for j in running]
        self.fair_share.advance(active, now)
        self.waiting.order_by_service(orders_by_service(self.policy()))
        waiting = self.waiting.current()
        if not waiting:
            return None
        gate = self.sweep_gate.prepare(self.waiting.sweeps)
        for job_id in gate.cancelled:
            self.waiting.remove(job_id)
        if not waiting:
            return None
        limits, titles = self.jobs.group_limits(
            self.waiting.sweeps.union(j.sweep for j in active))
        # The budgets' use as of now, from the store: a restart forgets none of it.
        budgets = budgets_in(self.policy())
        used = self.budget_usage.used(periods_of(budgets), now) if budgets else {}
        snapshot = self.fair_share.feed.snapshot(
            waiting, active, now, pools=self.pools,
            unavailable={kind: why for kind, executor in self.executors_by_kind.items()
                         if (why := executor.unavailable()) is not None},
            sweep_limits=limits, sweep_titles=titles, budget_use=used)
        if gate.holds or gate.starts:
            snapshot = replace(snapshot, sweep_holds=gate.holds, sweep_starts=gate.starts)
        return snapshot

    def _write_reasons(self, pending: Mapping[str, PendingReason]) -> None:
        """Write only reasons that changed; policies hand out shared reason objects, so the
        identity check settles most jobs without comparing sentences."""
        before = self._reasons
        reasons: dict[str, PendingReason] = {}
        changed: dict[str, tuple[str, str]] = {}
        for job_id, reason in pending.items():
            reasons[job_id] = reason
            old = before.get(job_id)
            if old is not reason and old != reason:
                changed[job_id] = (reason.code, reason.message)
        self.jobs.set_pending_reasons(changed)
        self._reasons = reasons


def running_job(job: JobRecord, now: float) -> RunningJob:
    """An active job's record as a pass sees it."""
    return active_job(job.id, job.spec.queue, job.spec.total_resources, job.pool or job.kind,
                      job.gpu_ids, job.team, job.started_at, now,
                      # Being cancelled (an early stop's too), it is stopping already: its
                      # room is on its way back, and it is no one's to preempt.
                      preempting=job.preempt_requested or job.cancel_requested,
                      sweep=job.sweep_id,
                      attained=held_service(job.spec.total_resources, job.held_s),
                      priority=job.spec.priority, time_limit_s=job.spec.time_limit_s)
