"""The tracker: woken by submits and process exits, and reconciling on a short period. Each
pass follows the active jobs (tracker.follow), then admits (tracker.admission)."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from trainyard.domain.notice import DEFAULT_NOTICE, NoticeRule
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.retry import Backoff
from trainyard.executors.base import Executor
from trainyard.metadata.artifacts import ArtifactCollector
from trainyard.metadata.workspace import Workspace
from trainyard.scheduler import Policy
from trainyard.scheduler.queues import QueuePolicy
from trainyard.sim.forecast import Scheduling
from trainyard.store.datasets import DatasetStore
from trainyard.store.job_tokens import JobTokenStore
from trainyard.store.jobs import JobStore
from trainyard.store.metrics import MetricStore
from trainyard.store.predictions import PredictionStore
from trainyard.store.preemption_notes import PreemptionNotes
from trainyard.store.run_history import RunHistory
from trainyard.store.usage import UsageStore
from trainyard.tracker.admission import Admission
from trainyard.tracker.dependencies import Dependencies
from trainyard.tracker.fair_share import FairShareUsage
from trainyard.tracker.follow import Follower, ReportedExit
from trainyard.tracker.forecasts import ForecastConfig, Forecasts
from trainyard.tracker.launch_request import LaunchRequests
from trainyard.tracker.launcher import Launcher
from trainyard.tracker.notice import Notices
from trainyard.tracker.recovery import Recovery
from trainyard.tracker.retries import Retries
from trainyard.tracker.telemetry import NO_TELEMETRY, TrackerTelemetry
from trainyard.tracker.waiting import WaitingJobs

log = logging.getLogger(__name__)

REST_FACTOR = 4.0
# How long writing an ended job's end waits for the launches its slot went to; a slower one
# (a container's, a cluster's) goes on beside it.
LAUNCH_BEFORE_END_S = 0.05
PREPARED_AHEAD = 4  # waiting jobs whose next attempts' directories are made ahead


@dataclass(frozen=True)
class TrackerConfig:
    max_concurrent: int = 4
    active_interval: float = 0.5  # pass period while jobs run: the metrics' ingestion
    idle_interval: float = 2.0  # reconcile period when nothing runs
    cancel_grace: float = 10.0
    # Launches run beside the loop, so a slow start (a container: ~0.2 s) delays neither the
    # next launch nor the reaping of finished jobs.
    launch_workers: int = 8
    fair_share_half_life: float = 3600.0  # past usage between queues counts half after this
    usage_save_interval: float = 30.0  # how often fair-share usage is written to the store
    retry_backoff: Backoff = Backoff()  # the wait before a lost or failed attempt's retry
    forecasts: ForecastConfig = ForecastConfig()  # the waiting jobs' predicted starts


class Tracker:
    def __init__(
        self, *, jobs: JobStore, metrics: MetricStore, datasets: DatasetStore,
        artifacts: ArtifactCollector, executors_by_kind: Mapping[str, Executor],
        pools: Mapping[str, PoolCapacity], policy: Policy, workspace: Workspace,
        config: TrackerConfig, clock: Callable[[], float] = time.time,
        usage: UsageStore | None = None, half_life: Callable[[], float] | None = None,
        reported_exit: ReportedExit | None = None,
        telemetry: TrackerTelemetry = NO_TELEMETRY,
        scheduling: Callable[[], Scheduling] | None = None,
    ) -> None:
        self.jobs = jobs
        self.metrics = metrics
        self.executors_by_kind = executors_by_kind
        self.policy = policy  # may be swapped; each pass asks the one in place
        self.config = config
        self.telemetry = telemetry
        self.clock = clock  # may be swapped too: every part reads the time through now()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reconcile_due = True
        self._submitted = False  # a submit arrived since the loop last looked
        # Without a policy object that says, FIFO under the tracker's own limit.
        self._scheduling = scheduling or (lambda: Scheduling(None, config.max_concurrent))
        # Rows submitted since the last pass are read where a job was stored or a submit
        # heard of since: a pass woken by an exit does not look for them in the store (a
        # row no one told of is read on the period).
        self.waiting = WaitingJobs(jobs, full_read_every=config.idle_interval,
                                   new_read_every=config.active_interval, wall_clock=self.now)
        self.launcher = Launcher(
            jobs=jobs, executors_by_kind=executors_by_kind,
            requests=LaunchRequests(workspace, datasets, JobTokenStore(jobs.db), self.now),
            clock=self.now,
            workers=config.launch_workers, on_settled=self._reconcile_now,
            telemetry=telemetry)
        self.fair_share = FairShareUsage(
            usage, clock=self.now, save_interval=config.usage_save_interval,
            # The policy's half-life as it is now: a reloaded policy may change it.
            half_life=half_life or (lambda: config.fair_share_half_life))
        self.follower = Follower(
            jobs=jobs, metrics=metrics, artifacts=artifacts, workspace=workspace,
            executors_by_kind=executors_by_kind, launcher=self.launcher, waiting=self.waiting,
            cancel_grace=config.cancel_grace, clock=self.now,
            reconcile_soon=self._reconcile_soon, reported_exit=reported_exit,
            retries=Retries(jobs, config.retry_backoff),
            notices=Notices(notes=PreemptionNotes(jobs.db), workspace=workspace,
                            rule_for=self._notice_for, cancel_grace=config.cancel_grace,
                            clock=self.now))
        self.admission = Admission(
            jobs=jobs, waiting=self.waiting, policy=lambda: self.policy, pools=pools,
            executors_by_kind=executors_by_kind, launcher=self.launcher,
            fair_share=self.fair_share, clock=self.now,
            reconcile_soon=self._reconcile_soon, telemetry=telemetry)
        # Jobs that wait for jobs (--after): held out of the queue until their needs are met.
        self.dependencies = Dependencies(jobs=jobs, waiting=self.waiting, clock=self.now)
        self.recovery = Recovery(jobs=jobs, executors_by_kind=executors_by_kind,
                                 follower=self.follower, clock=self.now)
        self.forecasts = Forecasts(
            jobs=jobs, predictions=PredictionStore(jobs.db), history=RunHistory(jobs.db),
            scheduling=self._scheduling,
            pools=pools, executors_by_kind=executors_by_kind,
            feed=lambda: self.fair_share.feed, clock=self.now, config=config.forecasts)
        for executor in executors_by_kind.values():
            executor.set_exit_listener(self._job_exited)

    def now(self) -> float:
        return self.clock()

    def _notice_for(self, queue: str) -> NoticeRule:
        """A queue's notice before a preemption, by the policy in force: a policy file's
        queues say; without one, the default (TERM, the cancel grace)."""
        declared = self._scheduling().declared
        if declared is None and isinstance(self.policy, QueuePolicy):
            declared = self.policy.policy  # a tracker given the queue policy itself
        return declared.notice_for(queue) if declared is not None else DEFAULT_NOTICE

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self.fair_share.load()
        self.recover()
        self._thread = threading.Thread(target=self._run, name="tracker", daemon=True)
        self._thread.start()
        self.forecasts.start()

    def stop(self) -> None:
        self.forecasts.stop()
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.launcher.shutdown()
        self.fair_share.save()

    def wake(self) -> None:
        """New work to admit."""
        self.waiting.submitted()
        self._submitted = True
        self._wake.set()

    def job_cancelled(self) -> None:
        self.waiting.invalidate()
        self.launcher.follow_all()
        self._reconcile_now()

    def _job_exited(self, handle: str) -> None:
        self.launcher.exited(handle)
        self._reconcile_now()

    def attempt_reported_exit(self) -> None:
        """A remote job's runtime says its command ended: follow the active jobs now."""
        self.launcher.follow_all()
        self._reconcile_now()

    def _reconcile_soon(self) -> None:
        """The next pass follows the active jobs (a stop asked, a job back in the queue)."""
        self.launcher.follow_all()
        self._reconcile_due = True

    def _reconcile_now(self) -> None:
        self._reconcile_due = True
        self._wake.set()

    def _run(self) -> None:
        last_periodic = float("-inf")
        while not self._stop.is_set():
            self._wake.clear()
            self._submitted = False
            started = time.monotonic()
            # Submits only need admission; following the active jobs is due when one exited,
            # was cancelled, or its launch ended otherwise than RUNNING or while a pass read
            # it (tracker/launcher.py), and on its own period. Only the period ingests the
            # running jobs' metrics: a pass woken by an exit hands its slot on without
            # waiting for the other jobs' ingestion (the ended job's is in its end).
            periodic = started - last_periodic >= self.config.active_interval
            reconcile = self._reconcile_due or periodic
            if reconcile:
                self._reconcile_due = False
            busy = False
            try:
                busy = self.run_once(reconcile=reconcile, ingest=periodic)
            except Exception:  # the loop must outlive any one bad pass
                log.exception("tracker pass failed")
            if periodic:  # from its end: a slow pass still leaves the loop a rest
                last_periodic = time.monotonic()
            if self._submitted:
                # Submitted to again during the pass: a stream of submits. Rest in proportion
                # to the pass, so the loop takes at most a fifth of a CPU from the API. A
                # lone wake-up, or one for ended or launched jobs, is served at once.
                self._stop.wait(min(REST_FACTOR * (time.monotonic() - started), 0.25))
            # While jobs run, the next pass of the period is due one period after the last
            # one ended; a pass woken in between does not put it off.
            self._wake.wait(max(0.0, last_periodic + self.config.active_interval -
                                time.monotonic()) if busy else self.config.idle_interval)

    # --- one pass ------------------------------------------------------------------------

    def recover(self) -> None:
        """Before admitting new work: requeue what was left PREEMPTED, re-attach to what the
        store says is running, remove what the executors hold for no active job."""
        self.recovery.recover()

    def missing_executors(self) -> str | None:
        return self.recovery.missing_executors()

    def run_once(self, reconcile: bool = True, ingest: bool = True) -> bool:
        """One pass: follow the active jobs and settle the jobs waiting for them (if
        reconcile; `ingest`: with the running jobs' new metrics), then admit. True while
        jobs are active."""
        if not reconcile:
            if self.admission.explain_new_jobs():
                return True  # saturation means jobs are active
            return self.admission.run() > 0
        began = time.perf_counter()
        try:
            track = functools.partial(self.follower.track, ingest=ingest)
            self.launcher.before_follow()
            troubles = self.follower.troubles
            followed, needed = self.jobs.active()
            endings = [ending for job in followed
                       if (ending := self.follower.guarded(job, track)) is not None]
            # A job going back to the queue (preempted, lost, retried) is put there first,
            # to compete for the room, as a replay has it; so is the end of a job others
            # wait for (as read with the active jobs), whose dependents then compete for it
            # too. Any other ended job's slot is handed on before its end is written: its
            # process is gone, and what it left running is killed as its end is written, as
            # the next job's wrapper starts. The writing waits a moment for the launches it
            # made room for (a local one takes milliseconds): beside them, both would take
            # turns for the interpreter, and the launch would be the slower.
            awaited = {e.job.id for e in endings if not e.requeues and e.job.id in needed}
            self.follower.finish_all(e for e in endings if e.requeues or e.job.id in awaited)
            if awaited:
                self.dependencies.resolve()
            ended = [e for e in endings if not e.requeues and e.job.id not in awaited]
            in_flight = self.launcher.in_flight_ids()
            # The active jobs as this pass read them serve admission too, less those whose
            # ends it wrote: no job becomes active but by admission, on this thread, so
            # the list errs only by jobs since ended elsewhere (a launch that failed,
            # which wakes the tracker), whose room waits for the next pass. A step that
            # failed or found its job moved leaves admission to read them again.
            written = {e.job.id for e in endings if e.requeues or e.job.id in awaited}
            still = None if self.follower.troubles != troubles else \
                [job for job in followed if job.id not in written]
            try:
                active = self.admission.run(leaving=frozenset(e.job.id for e in ended),
                                            active=still)
                if ended:
                    self.launcher.wait(LAUNCH_BEFORE_END_S,
                                       self.launcher.in_flight_ids() - in_flight)
            finally:  # an admission that fails must not keep the ends from being written
                self.follower.finish_all(ended)
            # After the ends just written: a job they release may start now.
            if self.dependencies.resolve():
                active = self.admission.run()
            if ingest:
                # Those first in line launch as room frees: their directories are made
                # meanwhile, on a pass of the period, away from the moments a slot turns
                # over (whose launches they would compete with for the CPU).
                self.launcher.prepare(self.waiting.first_in_line(PREPARED_AHEAD))
            # An end that could not be written keeps the passes at the active period.
            return active > 0 or bool(endings)
        finally:
            self.telemetry.tracker_pass(time.perf_counter() - began)

    def wait_for_launches(self, timeout: float = 30.0) -> bool:
        """Block until no launch is in flight; False if some still are after timeout."""
        return self.launcher.wait(timeout)
