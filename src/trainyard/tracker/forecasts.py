"""The waiting jobs' predicted starts, refreshed in the background.

A thread of its own, never the submit or status path: every `interval_s` it reads the live
queue from the store (the waiting jobs, the active ones with how long they have run, the
claims and usage the tracker's last pass handed on, and as submits to come the pattern of
the last `arrivals_s`), learns run times from the jobs that finished in the last
`history_s` (sim.estimates), rolls the queue forward through the
policy in force (sim.forecast) and writes every prediction in one transaction
(store.predictions), which status and list then read. A refresh that took long spaces out
the next, so the thread takes at most MAX_CPU_SHARE of one core.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from trainyard.domain.pools import PoolCapacity
from trainyard.domain.states import ACTIVE_STATES
from trainyard.domain.sweep_control import SweepStatus
from trainyard.executors.base import Executor
from trainyard.scheduler import PendingJob
from trainyard.scheduler.attained import held_service
from trainyard.scheduler.snapshot import Feed
from trainyard.sim.estimates import FinishedJob, JobTraits, RunTimeEstimator
from trainyard.sim.forecast import (
    DEFAULT_HORIZON_S,
    DEFAULT_ROLLS,
    ActiveJob,
    LiveQueue,
    Scheduling,
    WaitingJob,
    forecast,
    repeated,
)
from trainyard.store.jobs import JobStore
from trainyard.store.predictions import PredictionStore
from trainyard.store.records import JobRecord
from trainyard.store.run_history import JobTraitsRow, RunHistory
from trainyard.store.sweeps import SweepStore
from trainyard.tracker.admission import running_job
from trainyard.tracker.waiting import pending_job

log = logging.getLogger(__name__)

MAX_CPU_SHARE = 0.1  # of one core, over a refresh and the wait after it


class _Stopped(Exception):
    """A refresh cut short by stop(): nothing is written."""


@dataclass(frozen=True)
class ForecastConfig:
    interval_s: float = 30.0  # between refreshes; 0: no predictions
    rolls: int = DEFAULT_ROLLS
    cpu_budget_s: float = 2.0  # past it, a refresh makes no more rolls than MIN_ROLLS
    horizon_s: float = DEFAULT_HORIZON_S
    history_s: float = 30 * 86400.0  # run times are learned from jobs finished since
    history_limit: int = 20_000  # at most this many of them, the newest
    # The next this-many seconds are expected to bring what the last as many brought (at
    # most arrivals_limit submits); 0: no submits expected.
    arrivals_s: float = 6 * 3600.0
    arrivals_limit: int = 2_000


@dataclass(frozen=True)
class Refresh:
    """What one refresh did."""

    as_of: float
    waiting: int
    active: int
    history: int  # finished jobs learned from
    rolls: int
    events: int
    cpu_s: float  # this thread's CPU time
    wall_s: float


class Forecasts:
    def __init__(self, *, jobs: JobStore, predictions: PredictionStore, history: RunHistory,
                 scheduling: Callable[[], Scheduling], pools: Mapping[str, PoolCapacity],
                 executors_by_kind: Mapping[str, Executor], feed: Callable[[], Feed],
                 clock: Callable[[], float], config: ForecastConfig) -> None:
        self.jobs = jobs
        self.predictions = predictions
        self.history = history
        self.scheduling = scheduling  # the policy in force, asked at each refresh
        self.pools = pools
        self.executors_by_kind = executors_by_kind
        self.feed = feed  # the tracker's last pass's: usage and claims
        self.clock = clock
        self.config = config
        self.last: Refresh | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.config.interval_s <= 0:
            return
        self._thread = threading.Thread(target=self._run, name="forecasts", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)  # a roll in progress ends first

    def _run(self) -> None:
        while not self._stop.is_set():
            spent = 0.0
            try:
                spent = self.refresh().cpu_s
            except _Stopped:
                return
            except Exception:  # predictions are advice: a failed refresh is tried again
                log.exception("could not refresh the predicted starts")
            self._stop.wait(max(self.config.interval_s, spent / MAX_CPU_SHARE - spent))

    def refresh(self) -> Refresh:
        """Predict every waiting job's start now, and write the predictions."""
        began_cpu, began = time.thread_time(), time.perf_counter()
        scheduling = self.scheduling()
        queue, learned = self.live_queue(scheduling)
        result = forecast(queue, scheduling, rolls=self.config.rolls,
                          horizon_s=self.config.horizon_s,
                          cpu_budget_s=self.config.cpu_budget_s, halt=self._stop.is_set)
        if self._stop.is_set():
            raise _Stopped  # the tracker stopped meanwhile: its term may be over
        self.predictions.replace(result.predictions)
        self.last = Refresh(queue.now, len(queue.waiting), len(queue.active), learned,
                            result.rolls, result.events, time.thread_time() - began_cpu,
                            time.perf_counter() - began)
        return self.last

    def live_queue(self, scheduling: Scheduling) -> tuple[LiveQueue, int]:
        """The queue as the tracker's next pass would see it, each job with its estimated
        run times; and how many finished jobs the estimates learned from."""
        now = self.clock()
        by_service = scheduling.declared is not None and scheduling.declared.service_levels
        finished = self.history.finished(now - self.config.history_s,
                                         self.config.history_limit)
        estimator = RunTimeEstimator(
            FinishedJob(_traits(row), row.held_s, row.updated_at) for row in finished)
        traits = self.history.live()
        queued = self.jobs.queued()
        records = self.jobs.in_states(ACTIVE_STATES)
        launched = {record.id for record in records}  # since it was read as waiting
        # A paused sweep's trials start only when someone resumes it: no start to predict.
        sweeps = SweepStore(self.jobs.db).of({row.sweep_id for row in queued if row.sweep_id})
        paused = {s.id for s in sweeps.values() if s.status is SweepStatus.PAUSED}
        waiting: list[WaitingJob] = []
        for row in queued:
            if row.id in launched or row.sweep_id in paused:
                continue
            known = traits.get(row.id)
            arrives = row.retry_after if row.retry_after is not None and \
                row.retry_after > now else None
            waiting.append(WaitingJob(
                pending_job(row, by_service), estimator.run_times(_traits(known)),
                held_s=row.held_s, arrives_at=arrives))
        active: list[ActiveJob] = []
        for record in records:
            run_times = estimator.run_times(_traits(traits.get(record.id)))
            ran = record.held_s + (max(0.0, now - record.started_at)
                                   if record.started_at is not None else 0.0)
            if record.preempt_requested:
                # Asked to stop: its room is on its way back, and it waits again.
                waiting.append(WaitingJob(_waiting_again(record, by_service), run_times,
                                          held_s=ran))
                continue
            active.append(ActiveJob(running_job(record, now),
                                    _waiting_again(record, by_service), run_times, ran))
        if self.config.arrivals_s > 0:
            recent = self.history.submitted(now - self.config.arrivals_s,
                                            self.config.arrivals_limit)
            # Cut at the limit, the submits cover less than the window: repeat what they cover.
            window = self.config.arrivals_s if len(recent) < self.config.arrivals_limit \
                else max(1.0, now - min(record.submitted_at for record, _ in recent))
            last_seq = max([record.seq for record, _ in recent] +
                           [w.job.seq for w in waiting] + [a.job.seq for a in active],
                           default=0)
            waiting += repeated([(_waiting_again(record, False),
                                  estimator.run_times(_traits(row)))
                                 for record, row in recent], now, window, last_seq + 1)
        groups = {w.job.sweep for w in waiting} | {a.run.sweep for a in active}
        limits, titles = self.jobs.group_limits(group for group in groups if group)
        feed = self.feed()
        unavailable = {kind: why for kind, executor in self.executors_by_kind.items()
                       if (why := executor.unavailable()) is not None}
        return LiveQueue(now, waiting, active, self.pools, usage=feed.usage,
                         reclaiming=feed.reclaiming, unavailable=unavailable,
                         sweep_limits=limits, sweep_titles=titles), len(finished)


def _traits(row: JobTraitsRow | None) -> JobTraits:
    if row is None:
        return JobTraits()
    return JobTraits(user=row.owner, algorithm=row.algorithm, program=row.program,
                     queue=row.queue, time_limit_s=row.time_limit_s or None)


def _waiting_again(record: JobRecord, by_service: bool) -> PendingJob:
    """An active job as it would wait if it were stopped and requeued."""
    resources = record.spec.total_resources
    return PendingJob(record.id, record.spec.queue, record.spec.priority, record.seq,
                      resources, record.kind, record.owner, record.team, record.submitted_at,
                      record.sweep_id,
                      attained=held_service(resources, record.held_s) if by_service else 0.0)
