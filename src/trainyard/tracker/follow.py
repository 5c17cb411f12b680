"""Following the active jobs: delivering the stops asked of them, ingesting their metrics,
and writing what settle() makes of what their executors see."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from trainyard.domain.early_stopping import STOPPED_EARLY
from trainyard.domain.errors import StaleState, TrainyardError
from trainyard.domain.notice import work_lost
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.states import JobState
from trainyard.executors.base import Executor, Observation, Phase, describe_exit
from trainyard.executors.registry import executor_for
from trainyard.metadata.artifacts import ArtifactCollector
from trainyard.metadata.metrics_file import read_new_metrics
from trainyard.metadata.workspace import Workspace
from trainyard.store.jobs import JobStore
from trainyard.store.metrics import MetricStore
from trainyard.store.records import JobRecord
from trainyard.tracker.early_stop import EarlyStopper
from trainyard.tracker.launcher import Launcher
from trainyard.tracker.notice import Notices
from trainyard.tracker.retries import Retries
from trainyard.tracker.settle import Settlement, settle
from trainyard.tracker.waiting import WaitingJobs

log = logging.getLogger(__name__)

# What a remote job's runtime reported of an attempt's end, given (job id, attempt, ranks):
# its exit code once every rank has said, else None.
ReportedExit = Callable[[str, int, int], int | None]

MAX_TRACKING_FAILURES = 5
# How long an attempt its engine says succeeded waits for its ranks' reports (their last
# log lines and metrics) before it ends without them.
REPORT_GRACE_S = 10.0
PREEMPTED_WHY = "preempted to return borrowed quota"  # when the job's message says nothing
REQUEUED = "requeued after preemption; resumes from its checkpoint"
REQUEUED_PENDING = "preempted; it resumes from its checkpoint when admitted again"


@dataclass(frozen=True)
class Ending:
    """An active job whose attempt is over, its end not yet written (Follower.finish): a pass
    hands its slot on first, since writing the end (the last metrics, the model's files, the
    final commit) takes milliseconds, and more for a large model."""

    job: JobRecord
    outcome: Settlement
    seen_at: float  # the tracker's clock when the end was seen: the time its records carry
    recovering: bool = False  # seen at start-up: it ended while the service was down

    @property
    def requeues(self) -> bool:
        """Whether the job goes back to the queue (preempted, lost, or failed to retry)."""
        return self.outcome.retry or self.outcome.target is JobState.PREEMPTED


def requeue(jobs: JobStore, job_id: str, *, now: float, preempted: str = "",
            expected: JobState = JobState.RUNNING, work_lost_s: float = 0.0) -> None:
    """A preempted job waits again (`preempted`: why it stopped, for a RUNNING one, and the
    work it lost past its last checkpoint); its next attempt resumes from the same
    CHECKPOINT_PATH."""
    jobs.requeue(job_id, preempted=preempted, requeued=REQUEUED,
                 pending=(ReasonCode.PREEMPTED, REQUEUED_PENDING), expected=expected, now=now,
                 work_lost_s=work_lost_s)


class Follower:
    def __init__(self, *, jobs: JobStore, metrics: MetricStore, artifacts: ArtifactCollector,
                 workspace: Workspace, executors_by_kind: Mapping[str, Executor],
                 launcher: Launcher, waiting: WaitingJobs, cancel_grace: float,
                 clock: Callable[[], float], reconcile_soon: Callable[[], None],
                 reported_exit: ReportedExit | None = None,
                 retries: Retries | None = None, notices: Notices) -> None:
        self.reported_exit = reported_exit
        self.notices = notices  # a preemption's notice and stop, and the checkpoints seen
        self.retries = retries or Retries(jobs)
        self.jobs = jobs
        self.metrics = metrics
        self.artifacts = artifacts
        self.workspace = workspace
        self.executors_by_kind = executors_by_kind
        self.launcher = launcher
        self.waiting = waiting
        self.cancel_grace = cancel_grace
        self.clock = clock
        self._reconcile_soon = reconcile_soon  # the next pass follows the active jobs
        self._signalled: set[str] = set()  # handles already asked to stop
        self._failures: dict[str, int] = {}  # job id -> tracking errors in a row
        # Steps that failed or found their job moved by someone else, ever: a pass that
        # sees this count move cannot tell which of its jobs are still active.
        self.troubles = 0
        self._noted: set[str] = set()  # job ids whose message is what their engine said
        self._succeeded_at: dict[str, float] = {}  # job id -> when its engine said success
        self.early_stop = EarlyStopper(jobs, clock)  # its sweep's rule, judged as metrics come in

    def guarded(self, job: JobRecord, step: Callable[[JobRecord], Ending | None]
                ) -> Ending | None:
        """One job's trouble must not stall the others: log it, and fail the job if it
        keeps happening. Returns what `step` returns (None if it failed)."""
        try:
            ending = step(job)
        except StaleState:
            self.troubles += 1
            return None  # someone else moved it; the next pass sees the new state
        except Exception as exc:
            self.troubles += 1
            failures = self._failures.get(job.id, 0) + 1
            self._failures[job.id] = failures
            log.exception("tracking job %s failed (%d in a row)", job.id, failures)
            if failures >= MAX_TRACKING_FAILURES:
                self._give_up(job, f"tracking failed {failures} times: {exc}")
            return None
        if ending is None:  # an ending's count is cleared only once it is finished
            self._failures.pop(job.id, None)
        return ending

    def finish_all(self, endings: Iterable[Ending]) -> None:
        """Write each ending, guarded as a pass's steps are."""
        for ending in endings:
            self.guarded(ending.job, lambda _job, ending=ending: self.finish(ending))

    def track(self, job: JobRecord, *, ingest: bool = True) -> Ending | None:
        """Follow one active job: deliver a stop, ingest metrics (if `ingest`), notice its
        end (whose metrics are ingested then, whatever `ingest` says), which is returned
        for finish() rather than written."""
        if self.launcher.in_flight(job.id):
            return None  # its launch settles it; asking the executor now finds nothing yet
        executor = executor_for(self.executors_by_kind, job.kind)
        running = job.state is JobState.RUNNING
        if running:
            job = self.notices.observe(job)
        if running and ingest:
            ingested = self._ingest_metrics(job, final=False)
            if ingested.metrics_offset != job.metrics_offset:  # new points to judge
                ingested = self.early_stop.judge(ingested)
            job = ingested
        # A running job being preempted gets notice first (tracker/notice.py); a cancel (an
        # early stop's too) or a time limit stops it as they stop every job.
        stop = job.cancel_requested or self.retries.over_time(job, self.clock()) > 0 or \
            (job.preempt_requested and not running)
        if stop and job.handle not in self._signalled and \
                executor.cancel(job.handle, self.cancel_grace):
            self._signalled.add(job.handle)
        elif job.preempt_requested and not stop:
            self.notices.preempt(job, executor)
        observation = self._reported(executor, job) or self._await_reports(
            executor, job, self._with_reported_code(executor, job, executor.poll(job.handle)))
        self._note(job, observation)
        return self.apply(job, observation)

    def _note(self, job: JobRecord, observation: Observation) -> None:
        """What the engine says of a job that is not over yet (held by the cluster's own
        admission, again after it ran when that admission evicted it; restarting; for one
        not started yet, that its engine is away) becomes its message, until it runs."""
        phase, message = observation.phase, observation.message
        if phase is Phase.RUNNING and not message and job.id in self._noted:
            self._noted.discard(job.id)  # what it said (restarting) is over
            self.jobs.update_fields(job.id, job.state, message="")
            return
        if phase not in (Phase.STARTING, Phase.RUNNING, Phase.UNKNOWN) or not message or \
                message == job.message:
            return
        # An engine away says nothing new of a job that runs (it keeps its state).
        if phase is Phase.UNKNOWN and job.state is not JobState.LAUNCHING:
            return
        if self.jobs.update_fields(job.id, job.state, message=message):
            self._noted.add(job.id)

    def _await_reports(self, executor: Executor, job: JobRecord, observation: Observation
                       ) -> Observation:
        """An engine that says a remote attempt succeeded before every rank's runtime has
        reported its end (an operator that counts the master's) gives the other ranks a
        moment for their last pushes, which ending the attempt would cut off."""
        if observation.phase is not Phase.EXITED or observation.exit_code != 0 or \
                not executor.remote or self.reported_exit is None:
            return observation
        first = self._succeeded_at.setdefault(job.id, self.clock())
        if self.clock() - first < REPORT_GRACE_S:
            return Observation(Phase.RUNNING)
        return observation

    def _with_reported_code(self, executor: Executor, job: JobRecord,
                            observation: Observation) -> Observation:
        """An engine that says an attempt failed without its exit code (an operator's Failed
        condition) gets the code its runtime reported, when every rank did."""
        if observation.phase is not Phase.EXITED or not executor.remote or \
                self.reported_exit is None:
            return observation
        code = self.reported_exit(job.id, job.attempt, job.spec.workers)
        if code is None or code == observation.exit_code:
            return observation
        said = f"; {observation.message}" if observation.message else ""
        return replace(observation, exit_code=code, message=describe_exit(code) + said)

    def _reported(self, executor: Executor, job: JobRecord) -> Observation | None:
        """A remote attempt whose runtime reported the end of every rank (all it pushes and
        uploads is in) is over, before its engine says so: when it succeeded, or was asked
        to stop. A failure waits for the engine's word, which may be that a node failed
        under it (a lost attempt, requeued), not the job's own fault."""
        if not executor.remote or self.reported_exit is None:
            return None
        code = self.reported_exit(job.id, job.attempt, job.spec.workers)
        if code is None or (code != 0 and not (job.cancel_requested or
                                               job.preempt_requested)):
            return None
        return Observation(Phase.EXITED, exit_code=code)

    def apply(self, job: JobRecord, observation: Observation, *,
              recovering: bool = False) -> Ending | None:
        """Write what the observation makes of the job, but for an end, which is returned
        for finish() (recovering: at start-up, of what happened while the service was
        down)."""
        outcome = settle(job.state, observation, job.cancel_requested, job.preempt_requested,
                         attempt=job.attempt, retry=self.retries.state(job),
                         time_limit_s=self.retries.over_time(job, self.clock()))
        if outcome.relaunch:
            # Recorded LAUNCHING, never created (the service stopped first, or the engine was
            # away): nothing ran, so starting it now cannot run it twice.
            if recovering:
                self.launcher.start(job)
            else:
                self.launcher.launch_beside(job)
        elif outcome.target is JobState.RUNNING:
            self.jobs.mark_running(job.id, reason=outcome.message, now=self.clock())
            if job.id in self._noted:  # what its engine said while it waited is over
                self._noted.discard(job.id)
                self.jobs.update_fields(job.id, JobState.RUNNING, message="")
        elif outcome.target is not None:
            return Ending(job, outcome, self.clock(), recovering)
        return None

    def finish(self, ending: Ending) -> None:
        """Write an attempt's end: its last metrics, its model, its final state (or its way
        back to the queue), then release what its executor holds for it."""
        job, outcome, recovering = ending.job, ending.outcome, ending.recovering
        # An end written after the next job in its slot started is timed when it was seen;
        # one written first (back to the queue) now, after what a notice observed of it.
        now = self.clock() if ending.requeues else ending.seen_at
        assert outcome.target is not None
        state = job.state
        if outcome.ran:  # record that it ran before how it ended
            self.jobs.mark_running(job.id, now=now,
                                   reason="process had started" if recovering else "started")
            state = JobState.RUNNING
        if state is JobState.RUNNING:
            job = self._ingest_metrics(job, final=True)
        if outcome.target.is_final() and not outcome.retry:
            # Over for good; a requeued or retried attempt keeps the steps judged, so its
            # resumed curve is judged from where it was left.
            self.early_stop.forget(job.id)
        if outcome.retry:
            self.retries.retry(job, outcome, now=now)
            self.waiting.invalidate()  # an old submit order, back in the queue
            self._reconcile_soon()
        elif outcome.target is JobState.PREEMPTED:
            why = f"{job.message or PREEMPTED_WHY} ({outcome.message})"
            if state is JobState.RUNNING:
                job = self.notices.observe(job)  # a checkpoint said just before it ended
            now = self.clock()  # after what the notice observed: it is written before admission
            lost = work_lost(started_at=job.started_at, checkpoint_at=job.checkpoint_at,
                             stopped_at=now) if state is JobState.RUNNING else 0.0
            requeue(self.jobs, job.id, now=now, preempted=why, work_lost_s=lost)
            self.waiting.invalidate()  # an old submit order, back in the queue
            self._reconcile_soon()
        else:
            message = outcome.message
            stopped_early = outcome.target is JobState.CANCELLED and \
                job.end_reason == STOPPED_EARLY
            if stopped_early:
                message = job.message  # the rule's verdict, not "cancelled by request"
            if outcome.target is JobState.SUCCEEDED or stopped_early:
                message += self._collect_model(job)
            if recovering and outcome.exited:
                message += " (while the service was down)"
            self.jobs.transition(job.id, state, outcome.target, reason=message,
                                 now=now, message=message,
                                 exit_code=outcome.exit_code, pending_code="",
                                 pending_message="")
        self._signalled.discard(job.handle)
        self.notices.forget(job.handle)
        self._noted.discard(job.id)
        self._succeeded_at.pop(job.id, None)
        executor_for(self.executors_by_kind, job.kind).release(job.handle)

    def _give_up(self, job: JobRecord, message: str) -> None:
        """Fail a job that cannot be followed, and free what it holds: once FAILED, its
        resources and GPUs go to other jobs."""
        try:
            self.jobs.transition(job.id, job.state, JobState.FAILED, reason=message,
                                 message=message, now=self.clock())
            self._failures.pop(job.id, None)
        except Exception:
            log.exception("could not fail job %s", job.id)
            return
        try:
            executor_for(self.executors_by_kind, job.kind).release(job.handle)
        except Exception:
            log.exception("could not release job %s", job.id)

    def _collect_model(self, job: JobRecord) -> str:
        """What became of the model files: a sentence's tail for the job's message."""
        paths = self.workspace.attempt(job.id, job.attempt)
        try:
            # Unsynced: the job's final state, committed synced next, carries it to disk;
            # a power cut that undoes both leaves the job to be finished, and its files
            # collected, again.
            model = self.artifacts.collect(job, paths.model_dir, synced=False)
        except (TrainyardError, OSError) as exc:
            return f"; model not saved: {exc}"
        if model is None:
            return "; no model files were saved"
        return f"; model {model.model_name} version {model.version}"

    def _ingest_metrics(self, job: JobRecord, *, final: bool) -> JobRecord:
        """Ingest what the job appended to METRICS_PATH; return the job with its new offset.
        Unsynced: a power cut undoes the points with their offset, and they are read again
        from the file."""
        path = self.workspace.attempt(job.id, job.attempt).metrics_path
        offset = job.metrics_offset
        while True:
            batch = read_new_metrics(path, offset, final=final)
            if batch.end_offset == offset:
                break
            ok = self.metrics.ingest(job.id, job.attempt, from_offset=offset,
                                     to_offset=batch.end_offset, points=batch.points,
                                     malformed=batch.malformed, synced=False)
            if not ok:
                return self.jobs.get(job.id)  # another writer moved the offset; trust it
            offset = batch.end_offset
            if not final:
                break
        return replace(job, metrics_offset=offset)
