"""Creating the processes of LAUNCHING jobs, on threads beside the loop: a slow start (a
container: ~0.2 s) delays neither the next launch nor the reaping of ended jobs."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from trainyard.domain.errors import TrainyardError
from trainyard.domain.states import JobState
from trainyard.executors.base import EngineAway, Executor, LaunchError, StartTeller
from trainyard.executors.registry import executor_for
from trainyard.store.jobs import JobStore
from trainyard.store.records import JobRecord
from trainyard.tracker.launch_request import LaunchRequests
from trainyard.tracker.telemetry import NO_TELEMETRY, TrackerTelemetry

log = logging.getLogger(__name__)

# The most a launch waits for its job's command to begin once its process is started (a
# local wrapper's shells take a few milliseconds).
COMMAND_START_WAIT_S = 0.02
# The most making the directories of jobs likely to launch next waits for the launches
# under way (a launch that takes longer, a container's, goes on beside it).
PREPARE_AFTER_LAUNCHES_S = 0.1


class Launcher:
    def __init__(self, *, jobs: JobStore, executors_by_kind: Mapping[str, Executor],
                 requests: LaunchRequests, clock: Callable[[], float], workers: int,
                 on_settled: Callable[[], None],
                 telemetry: TrackerTelemetry = NO_TELEMETRY) -> None:
        self.jobs = jobs
        self.telemetry = telemetry
        self.executors_by_kind = executors_by_kind
        self.requests = requests
        self.clock = clock
        # A launch ended where a pass may not yet have seen what came of it: follow it.
        self._on_settled = on_settled
        self._in_flight: dict[str, str] = {}  # job id -> the handle it launches
        self._read_in_flight: set[str] = set()  # in flight while a pass read the active jobs
        # In flight when something came that a pass acts on: its process ended, or a stop
        # was asked (a cancel, a preemption; which job's, the tracker is not told).
        self._to_follow: set[str] = set()
        self._stops_asked = 0  # follow_all's calls so far (stops_asked)
        self._changed = threading.Condition()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="launch")

    def launching_synced(self, kind: str) -> bool:
        """Whether a job of this kind is recorded LAUNCHING on disk before its process is
        created, so that recovery finds what was launched. Not where a power cut that undoes
        the record also ends the process (the store loses an unsynced commit only with this
        host, and the executor's jobs run on it): then a restart finds the job waiting,
        nothing of it running and its launch's files left, over which its executor starts
        the attempt again (LocalExecutor._claim_dir). Such a launch writes its
        RUNNING synced instead, once the process is created and off the tracker's thread:
        the fsync a slot's turn waited for (milliseconds, more while jobs write their files)
        moves beside the job's start-up, where it takes no CPU."""
        executor = self.executors_by_kind.get(kind)
        return executor is None or not (executor.ends_with_host and
                                        self.jobs.db.unsynced_lost_only_with_host)

    def in_flight(self, job_id: str) -> bool:
        """Whether the job's launch is under way: it settles the job, not a poll."""
        return job_id in self._in_flight

    def before_follow(self) -> None:
        """A pass is about to read the active jobs: it passes over each launch in flight
        now, or reads its job as it was before. Such a launch wakes the tracker when it
        settles if meanwhile its process ended or a stop was asked (exited, follow_all):
        that pass did not act on it."""
        with self._changed:
            self._read_in_flight.update(self._in_flight)

    def exited(self, handle: str) -> None:
        """The process of `handle` ended (its executor says; "": any of its handles may
        have): if its launch is in flight, a pass must follow it once the launch settles."""
        if not handle:
            self.follow_all()
            return
        with self._changed:
            self._to_follow.update(job_id for job_id, launched in self._in_flight.items()
                                   if launched == handle)

    def follow_all(self) -> None:
        """A stop was asked of some job (a cancel, a preemption) or a remote attempt says it
        ended: every launch in flight is followed once it settles."""
        with self._changed:
            self._stops_asked += 1
            self._to_follow.update(self._in_flight)

    def stops_asked(self) -> int:
        """A count that follow_all moves: read before a job is recorded LAUNCHING and given
        to launch_beside, it tells a stop asked between the two (a cancel of the job just
        recorded), which no launch in flight yet could note."""
        with self._changed:
            return self._stops_asked

    def launch_beside(self, job: JobRecord, stops_asked: int | None = None) -> None:
        """Start a LAUNCHING job on a launcher thread, unless its launch is under way;
        `stops_asked`: as stops_asked() said before the job was recorded LAUNCHING."""
        with self._changed:
            if job.id in self._in_flight:
                return
            self._in_flight[job.id] = job.handle
            if stops_asked is not None and stops_asked != self._stops_asked:
                self._to_follow.add(job.id)
        try:
            self._pool.submit(self._start_beside, job)
        except RuntimeError:  # shutting down: recovery at the next start settles the job
            self._settled(job.id)

    def prepare(self, job_ids: Sequence[str]) -> None:
        """Make the next attempts' directories of waiting jobs likely to launch soon, on a
        launcher thread (not the caller's, the tracker's) once the launches under way have
        begun their jobs' commands."""
        todo = [job_id for job_id in job_ids if not self.requests.is_prepared(job_id)]
        if todo:
            with contextlib.suppress(RuntimeError):  # shutting down: nothing to prepare for
                self._pool.submit(self._prepare, todo)

    def _prepare(self, job_ids: Sequence[str]) -> None:
        self.wait(PREPARE_AFTER_LAUNCHES_S)
        for job_id in job_ids:
            try:
                job = self.jobs.get(job_id)
                if job.state is JobState.WAITING:
                    self.requests.prepare(job)
            except Exception:  # only a head start: its launch makes them as ever
                log.debug("preparing job %s's directories failed", job_id, exc_info=True)

    def in_flight_ids(self) -> frozenset[str]:
        """The jobs whose launches are under way now."""
        with self._changed:
            return frozenset(self._in_flight)

    def wait(self, timeout: float = 30.0, job_ids: Collection[str] | None = None) -> bool:
        """Block until no launch is in flight (of `job_ids`, if given); False if some still
        are after timeout."""
        with self._changed:
            if job_ids is None:
                return self._changed.wait_for(lambda: not self._in_flight, timeout)
            return self._changed.wait_for(
                lambda: self._in_flight.keys().isdisjoint(job_ids), timeout)

    def shutdown(self) -> None:
        """Launches in flight finish (each is bounded by its executor); one cut short stays
        LAUNCHING and is settled by recovery at the next start."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def start(self, job: JobRecord) -> bool:
        """Create the process of a LAUNCHING job; RUNNING if that worked (LAUNCHING until a
        poll sees it run, where its engine starts it later), else FAILED (but LAUNCHING
        still while its engine does not answer)."""
        try:
            executor = executor_for(self.executors_by_kind, job.kind)
            self.jobs.db.confirm_lease()  # a server that no longer leads creates nothing
            image_id = executor.launch(self.requests.build(job, remote=executor.remote))
        except EngineAway as exc:  # nothing was created: a later poll finds nothing, relaunch
            log.warning("job %s waits for its engine to launch it: %s", job.id, exc)
            self.telemetry.launch(job.kind, failed=True)
            return False
        except (LaunchError, OSError, TrainyardError) as exc:
            self.telemetry.launch(job.kind, failed=True)
            message = f"launch failed: {exc}"
            self.jobs.transition(job.id, JobState.LAUNCHING, JobState.FAILED, reason=message,
                                 message=message, now=self.clock())
            return False
        self.telemetry.launch(job.kind, failed=False)
        if image_id:  # the run records what ran: the image's id, not its movable tag
            self.jobs.set_image_id(job.id, job.attempt, image_id)
        if executor.started_by_launch:  # else its engine's start is seen by a poll
            self.jobs.mark_running(job.id, reason="process started", now=self.clock(),
                                   known=job, synced=not self.launching_synced(job.kind))
        return True

    def _start_beside(self, job: JobRecord) -> None:
        running = False
        try:
            executor = executor_for(self.executors_by_kind, job.kind) if self.start(job) \
                else None
            running = executor is not None and executor.started_by_launch
            if running and isinstance(executor, StartTeller):
                # The launch is over once the job's command runs: the pass that made room
                # for it writes the ended job's end after that, not beside the start-up
                # of the shells around the command, which would wait for the CPU.
                executor.wait_command_started(job.handle, COMMAND_START_WAIT_S)
        except Exception:  # the job stays LAUNCHING; the next passes settle it
            log.exception("launching job %s failed", job.id)
        finally:
            # A job recorded RUNNING needs no pass of its own: its exit wakes the tracker,
            # and the period's passes follow it, unless a pass read the active jobs while
            # it launched and its process ended or a stop was asked meanwhile
            # (before_follow). Any other outcome (failed: a slot is free;
            # LAUNCHING still; started by its engine later) is followed at once.
            if self._settled(job.id) or not running:
                self._on_settled()

    def _settled(self, job_id: str) -> bool:
        """The launch is over; whether a pass read the active jobs meanwhile and left
        something undone for its job."""
        with self._changed:
            self._in_flight.pop(job_id, None)
            self._changed.notify_all()
            read = job_id in self._read_in_flight
            self._read_in_flight.discard(job_id)
            to_follow = job_id in self._to_follow
            self._to_follow.discard(job_id)
            return read and to_follow
