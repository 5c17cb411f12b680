"""The tracker: woken by submits and process exits, and reconciling on a short period."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from trainyard.domain.errors import StaleState, TrainyardError
from trainyard.domain.kinds import kind_for
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.states import ACTIVE_STATES, JobState
from trainyard.executors.base import (
    Executor,
    JobFiles,
    LaunchError,
    LaunchRequest,
    Observation,
    Phase,
    describe_exit,
)
from trainyard.metadata.artifacts import ArtifactCollector
from trainyard.metadata.metrics_file import read_new_metrics
from trainyard.metadata.workspace import Workspace
from trainyard.scheduler import PendingReason, Policy, RunningJob, Snapshot
from trainyard.scheduler.attained import held_service
from trainyard.scheduler.fair_share import decayed_usage
from trainyard.scheduler.model import orders_by_service
from trainyard.store.datasets import DatasetStore
from trainyard.store.jobs import JobStore
from trainyard.store.metrics import MetricStore
from trainyard.store.records import JobRecord, join_ids
from trainyard.store.usage import UsageStore
from trainyard.tracker.waiting import WaitingJobs

log = logging.getLogger(__name__)

REST_FACTOR = 4.0
MAX_TRACKING_FAILURES = 5


@dataclass(frozen=True)
class TrackerConfig:
    max_concurrent: int = 4
    active_interval: float = 0.5  # pass period while jobs run: metrics ingestion cadence
    idle_interval: float = 2.0  # reconcile period when nothing runs
    cancel_grace: float = 10.0
    # Launches run beside the loop, so a slow start (a container: ~0.2 s) delays neither the
    # next launch nor the reaping of finished jobs.
    launch_workers: int = 8
    fair_share_half_life: float = 3600.0  # past usage between queues counts half after this
    usage_save_interval: float = 30.0  # how often fair-share usage is written to the store


class Tracker:
    def __init__(
        self, *, jobs: JobStore, metrics: MetricStore, datasets: DatasetStore,
        artifacts: ArtifactCollector, executors: Mapping[str, Executor],
        pools: Mapping[str, PoolCapacity], policy: Policy, workspace: Workspace,
        config: TrackerConfig, clock: Callable[[], float] = time.time,
        usage: UsageStore | None = None, half_life: Callable[[], float] | None = None,
    ) -> None:
        self.jobs = jobs
        self.metrics = metrics
        self.datasets = datasets
        self.artifacts = artifacts
        self.executors = executors  # by pool name
        self.pools = pools
        self.policy = policy
        self.workspace = workspace
        self.config = config
        self.clock = clock
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._signalled: set[str] = set()  # handles already asked to stop
        self._reconcile_due = True
        self._saturated: PendingReason | None = None  # from the last full pass
        self._failures: dict[str, int] = {}  # job id -> tracking errors in a row
        self._reasons: dict[str, PendingReason] = {}  # last pending reasons written
        self._reclaiming: dict[str, str] = {}  # the last pass's: job -> pool taken back for it
        self._launching: set[str] = set()  # job ids whose launch is in flight
        self._launches_changed = threading.Condition()
        self._launcher = ThreadPoolExecutor(max_workers=config.launch_workers,
                                            thread_name_prefix="launch")
        self._submitted = False  # a submit arrived since the loop last looked
        self._usage: dict[str, float] = {}  # decayed usage by queue, for fair turns
        self._usage_at = clock()
        self._usage_store = usage
        self._usage_saved_at = self._usage_at
        # The policy's half-life as it is now: a reloaded policy may change it.
        self._half_life = half_life or (lambda: config.fair_share_half_life)
        self.waiting = WaitingJobs(jobs, full_read_every=config.idle_interval)
        for executor in executors.values():
            executor.set_exit_listener(self._job_exited)

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._load_usage()
        self.recover()
        self._thread = threading.Thread(target=self._run, name="tracker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        # Launches in flight finish (each is bounded by its executor); one cut short stays
        # LAUNCHING and is settled by recovery at the next start.
        self._launcher.shutdown(wait=True, cancel_futures=True)
        self._save_usage()

    def _load_usage(self) -> None:
        """Fair share picks up where the last run left it: the saved usage, as of when it
        was saved. The next pass decays it over the time since, and adds what jobs that
        kept running meanwhile used."""
        if self._usage_store is None:
            return
        try:
            usage, at = self._usage_store.load()
        except Exception:  # fair share starting from zero is better than not starting
            log.exception("could not read the saved fair-share usage; it starts from zero")
            return
        if at is not None:
            self._usage, self._usage_at = usage, min(at, self.clock())

    def _save_usage(self) -> None:
        if self._usage_store is None:
            return
        self._usage_saved_at = self._usage_at  # a failed save is tried after the interval
        try:
            self._usage_store.save(self._usage, self._usage_at)
        except Exception:
            log.exception("could not save the fair-share usage")

    def wake(self) -> None:
        """New work to admit."""
        self._submitted = True
        self._wake.set()

    def job_cancelled(self) -> None:
        self.waiting.invalidate()
        self._reconcile_due = True
        self._wake.set()

    def _job_exited(self, _handle: str) -> None:
        self._reconcile_due = True
        self._wake.set()

    def _run(self) -> None:
        last_reconcile = float("-inf")
        while not self._stop.is_set():
            self._wake.clear()
            self._submitted = False
            started = time.monotonic()
            # Submits only need admission; following running jobs (exit status, metrics) is
            # due when one exited or was cancelled, or on its own period.
            reconcile = self._reconcile_due or started - last_reconcile >= \
                self.config.active_interval
            if reconcile:
                self._reconcile_due = False
                last_reconcile = started
            busy = False
            try:
                busy = self.run_once(reconcile=reconcile)
            except Exception:  # the loop must outlive any one bad pass
                log.exception("tracker pass failed")
            if self._submitted:
                # Submitted to again during the pass: a stream of submits. Rest in proportion
                # to the pass, so the loop takes at most a fifth of a CPU from the API. A
                # lone wake-up, or one for ended or launched jobs, is served at once.
                self._stop.wait(min(REST_FACTOR * (time.monotonic() - started), 0.25))
            self._wake.wait(self.config.active_interval if busy else self.config.idle_interval)

    # --- one pass ------------------------------------------------------------------------

    def recover(self) -> None:
        """Before admitting new work, re-attach to what the store says is running, then
        remove what the executors hold for no active job."""
        active = self.jobs.in_states(ACTIVE_STATES)
        for job in active:
            self._guarded(job, self._recover_one)
        for pool, executor in self.executors.items():
            handles = {j.handle for j in active if self._kind(j) == pool}
            try:
                for removed in executor.sweep(handles):
                    log.warning("%s executor: %s", pool, removed)
            except Exception:  # a sweep is housekeeping: it must not keep the service down
                log.exception("sweeping the %s executor failed", pool)

    def _kind(self, job: JobRecord) -> str:
        """The executor: launched jobs keep the one they were launched by; others go by their
        spec (an image runs as a container)."""
        return job.executor or kind_for(job.spec.image)

    def _pool_of(self, job: JobRecord) -> str:
        """The pool whose capacity a launched job holds."""
        return job.pool or self._kind(job)

    def _executor(self, job: JobRecord) -> Executor:
        pool = self._kind(job)
        executor = self.executors.get(pool)
        if executor is None:
            raise LaunchError(f"this server runs no {pool} executor")
        return executor

    def _recover_one(self, job: JobRecord) -> None:
        obs = self._executor(job).adopt(job.handle)
        log.info("recovered %s (%s): %s", job.id, job.state, obs.phase)
        if obs.phase is Phase.NOT_FOUND and job.state is JobState.LAUNCHING:
            # The service stopped between recording LAUNCHING and creating the process:
            # nothing ran, so starting it now cannot run it twice.
            self._start(job)
            return
        self._apply(job, obs, recovering=True)

    def run_once(self, reconcile: bool = True) -> bool:
        """One pass: follow the active jobs (if reconcile), then admit. True while jobs are
        active."""
        if reconcile:
            for job in self.jobs.in_states(ACTIVE_STATES):
                self._guarded(job, self._track)
        elif self._saturated is not None and self._explain_new_jobs(self._saturated):
            return True  # saturation means jobs are active
        return self._schedule() > 0

    def _guarded(self, job: JobRecord, step: Callable[[JobRecord], None]) -> None:
        """One job's trouble must not stall the others: log it, and fail the job if it
        keeps happening."""
        try:
            step(job)
        except StaleState:
            return  # someone else moved it; the next pass sees the new state
        except Exception as exc:
            failures = self._failures.get(job.id, 0) + 1
            self._failures[job.id] = failures
            log.exception("tracking job %s failed (%d in a row)", job.id, failures)
            if failures >= MAX_TRACKING_FAILURES:
                self._give_up(job, f"tracking failed {failures} times: {exc}")
        else:
            self._failures.pop(job.id, None)

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
            self._executor(job).release(job.handle)
        except Exception:
            log.exception("could not release job %s", job.id)

    def missing_executors(self) -> str | None:
        """A sentence if active jobs need an executor this server does not run: starting
        would leave them unfollowed and holding their slots."""
        needed: dict[str, int] = {}
        for job in self.jobs.in_states(ACTIVE_STATES):
            pool = self._kind(job)
            if pool not in self.executors:
                needed[pool] = needed.get(pool, 0) + 1
        if not needed:
            return None
        what = ", ".join(f"{count} on the {pool} executor" for pool, count in needed.items())
        hint = " (start the server with --docker)" if "docker" in needed else ""
        return f"active jobs run where this server does not look: {what}{hint}"

    def _explain_new_jobs(self, reason: PendingReason) -> bool:
        """While the policy is saturated and only submits happened, new jobs cannot start:
        record why they wait without a full pass over the queue. False if a full read of
        the queue is due instead."""
        new = self.waiting.read_new()
        if new is None:
            return False
        self.jobs.set_pending_reasons({j.job_id: (reason.code, reason.message) for j in new})
        self._reasons.update((j.job_id, reason) for j in new)
        return True

    def _track(self, job: JobRecord) -> None:
        """Follow one active job: deliver a cancel, ingest metrics, notice its end."""
        if job.id in self._launching:
            return  # its launch settles it; asking the executor now would find nothing yet
        executor = self._executor(job)
        stop = job.cancel_requested or job.preempt_requested
        if stop and job.handle not in self._signalled and \
                executor.cancel(job.handle, self.config.cancel_grace):
            self._signalled.add(job.handle)
        if job.state is JobState.RUNNING:
            job = self._ingest_metrics(job, final=False)
        obs = executor.poll(job.handle)
        if obs.phase is Phase.NOT_FOUND and job.state is JobState.LAUNCHING:
            # Recorded LAUNCHING, never created, and no launch in flight (recovery found the
            # engine away): nothing ran, so starting it now cannot run it twice.
            self._launch_beside(job)
            return
        self._apply(job, obs)

    def _apply(self, job: JobRecord, obs: Observation, recovering: bool = False) -> None:
        if obs.phase in (Phase.STARTING, Phase.UNKNOWN):
            return
        if obs.phase is Phase.RUNNING:
            if job.state is JobState.LAUNCHING:
                self.jobs.transition(job.id, JobState.LAUNCHING, JobState.RUNNING,
                                     reason="process is running", now=self.clock(),
                                     started_at=self.clock())
            return
        self._finish(job, obs, recovering)

    def _finish(self, job: JobRecord, obs: Observation, recovering: bool) -> None:
        state = job.state
        exited = obs.phase is Phase.EXITED
        if state is JobState.LAUNCHING and exited:
            # It ran: record that before how it ended.
            self.jobs.transition(job.id, state, JobState.RUNNING, now=self.clock(),
                                 reason="process had started" if recovering else "started",
                                 started_at=self.clock())
            state = JobState.RUNNING
        if state is JobState.RUNNING:
            job = self._ingest_metrics(job, final=True)
        code = obs.exit_code
        if exited and code is not None:
            outcome = obs.message or describe_exit(code)
        else:
            outcome = describe_lost(obs.message)
        if job.preempt_requested and not job.cancel_requested and not (exited and code == 0):
            self._requeue(job, state, outcome)
            return
        if job.cancel_requested:
            target, message = JobState.CANCELLED, "cancelled by request"
            if exited:
                message += f"; {outcome}"
        elif exited and code == 0:
            target, message = JobState.SUCCEEDED, outcome + self._collect_model(job)
        else:
            target, message = JobState.FAILED, outcome
        if recovering and exited:
            message += " (while the service was down)"
        self.jobs.transition(job.id, state, target, reason=message, now=self.clock(),
                             message=message, exit_code=code, pending_code="",
                             pending_message="")
        self._signalled.discard(job.handle)
        self._executor(job).release(job.handle)

    def _requeue(self, job: JobRecord, state: JobState, outcome: str) -> None:
        """A preempted job stops, then waits again; its next attempt resumes from the same
        CHECKPOINT_PATH."""
        why = job.message if job.preempt_requested and job.message else \
            "preempted to return borrowed quota"
        reason = f"{why} ({outcome})"
        self.jobs.transition(job.id, state, JobState.PREEMPTED, reason=reason,
                             now=self.clock(), message=reason, preempt_requested=False)
        self.jobs.transition(job.id, JobState.PREEMPTED, JobState.WAITING, now=self.clock(),
                             reason="requeued after preemption; resumes from its checkpoint",
                             pending_code=ReasonCode.PREEMPTED,
                             pending_message="preempted; it resumes from its checkpoint when "
                             "admitted again")
        self._signalled.discard(job.handle)
        self._executor(job).release(job.handle)
        self.waiting.invalidate()  # an old submit order, back in the queue
        self._reconcile_due = True

    def _collect_model(self, job: JobRecord) -> str:
        paths = self.workspace.attempt(job.id, job.attempt)
        try:
            model = self.artifacts.collect(job, paths.model_dir)
        except (TrainyardError, OSError) as exc:
            return f"; model not saved: {exc}"
        if model is None:
            return "; no model files were saved"
        return f"; model {model.model_name} version {model.version}"

    def _ingest_metrics(self, job: JobRecord, *, final: bool) -> JobRecord:
        """Ingest what the job appended to METRICS_PATH; return the job with its new offset."""
        path = self.workspace.attempt(job.id, job.attempt).metrics_path
        offset = job.metrics_offset
        while True:
            batch = read_new_metrics(path, offset, final=final)
            if batch.end_offset == offset:
                break
            ok = self.metrics.ingest(job.id, job.attempt, from_offset=offset,
                                     to_offset=batch.end_offset, points=batch.points,
                                     malformed=batch.malformed)
            if not ok:
                return self.jobs.get(job.id)  # another writer moved the offset; trust it
            offset = batch.end_offset
            if not final:
                break
        return replace(job, metrics_offset=offset)

    # --- admission -----------------------------------------------------------------------

    def _schedule(self) -> int:
        """Ask the policy what to start, start it, record why the rest waits. Returns the
        number of active jobs afterwards."""
        running = self.jobs.in_states(ACTIVE_STATES)
        now = self.clock()
        # A job still LAUNCHING has not run yet: it starts now, as far as its minimum
        # runtime and the service it has attained go.
        active = [RunningJob(j.id, j.spec.queue, j.spec.total_resources, self._pool_of(j),
                             j.gpu_ids, j.team, now if j.started_at is None else j.started_at,
                             j.preempt_requested, j.sweep_id,
                             attained=held_service(j.spec.total_resources, j.held_s),
                             priority=j.spec.priority)
                  for j in running]
        self._usage = decayed_usage(self._usage, active, max(0.0, now - self._usage_at),
                                    self._half_life())
        self._usage_at = now
        if now - self._usage_saved_at >= self.config.usage_save_interval:
            self._save_usage()
        self.waiting.order_by_service(orders_by_service(self.policy))
        waiting = self.waiting.current()
        if not waiting:
            self._reasons.clear()
            self._saturated = None
            return len(running)
        limits, titles = self.jobs.group_limits(
            self.waiting.sweeps.union(j.sweep for j in active))
        snapshot = Snapshot(
            pending=waiting,
            running=active,
            now=now,
            pools=self.pools,
            unavailable={pool: why for pool, executor in self.executors.items()
                         if (why := executor.unavailable()) is not None},
            usage=self._usage,
            sweep_limits=limits,
            sweep_titles=titles,
            reclaiming=self._reclaiming,
        )
        decisions = self.policy.schedule(snapshot)
        self._saturated = decisions.saturated
        self._reclaiming = decisions.reclaiming
        launched = 0
        for victim, why in decisions.preempt.items():
            # Why it stops is its message until it is requeued, and then that event's reason.
            if self.jobs.update_fields(victim, JobState.RUNNING, preempt_requested=True,
                                       message=why):
                log.info("preempting %s: %s", victim, why)
                self._reconcile_due = True  # the next pass delivers the stop
        for job_id in decisions.admit:
            self.waiting.remove(job_id)  # launched, failed or cancelled: it left the queue
            launched += self._launch(self.jobs.get(job_id), decisions.gpu_ids.get(job_id, ()),
                                     decisions.pools.get(job_id, ""))
        # Write only reasons that changed; policies hand out shared reason objects, so the
        # identity check settles most jobs without comparing sentences.
        before = self._reasons
        reasons: dict[str, PendingReason] = {}
        changed: dict[str, tuple[str, str]] = {}
        for job_id, reason in decisions.pending.items():
            reasons[job_id] = reason
            old = before.get(job_id)
            if old is not reason and old != reason:
                changed[job_id] = (reason.code, reason.message)
        self.jobs.set_pending_reasons(changed)
        self._reasons = reasons
        return len(running) + launched

    def _launch(self, job: JobRecord, gpu_ids: tuple[str, ...], pool: str) -> bool:
        """Record LAUNCHING with the handle about to be created, the pool and the devices
        allocated, then create it."""
        attempt = job.attempt + 1
        kind = kind_for(job.spec.image)
        # The policy admits only jobs of the pools in its snapshot, which are the executors'.
        handle = self.executors[kind].handle_for(job.id, attempt)
        pool = pool or kind
        try:
            self.jobs.transition(
                job.id, JobState.WAITING, JobState.LAUNCHING, reason=f"admitted to pool {pool}",
                now=self.clock(), attempt=attempt, executor=kind, pool=pool, handle=handle,
                gpu_ids=join_ids(gpu_ids), pending_code="", pending_message="",
                metrics_offset=0, message="", exit_code=None,
                started_at=None,  # a new attempt has not run yet; RUNNING sets it
            )
        except StaleState:
            return False  # cancelled meanwhile
        self._launch_beside(replace(job, state=JobState.LAUNCHING, attempt=attempt,
                                    executor=kind, pool=pool, handle=handle, gpu_ids=gpu_ids,
                                    metrics_offset=0))
        return True

    def _launch_beside(self, job: JobRecord) -> None:
        with self._launches_changed:
            if job.id in self._launching:
                return
            self._launching.add(job.id)
        try:
            self._launcher.submit(self._start_beside, job)
        except RuntimeError:  # shutting down: recovery at the next start settles the job
            self._launch_settled(job.id)

    def _launch_settled(self, job_id: str) -> None:
        with self._launches_changed:
            self._launching.discard(job_id)
            self._launches_changed.notify_all()

    def wait_for_launches(self, timeout: float = 30.0) -> bool:
        """Block until no launch is in flight; False if some still are after timeout."""
        with self._launches_changed:
            return self._launches_changed.wait_for(lambda: not self._launching, timeout)

    def _start_beside(self, job: JobRecord) -> None:
        """A launch on a launcher thread; the loop follows the job again once it settled."""
        try:
            self._start(job)
        except Exception:  # the job stays LAUNCHING; the next passes settle it
            log.exception("launching job %s failed", job.id)
        finally:
            self._launch_settled(job.id)
            self._reconcile_due = True
            self._wake.set()

    def _start(self, job: JobRecord) -> bool:
        """Create the process of a LAUNCHING job; RUNNING if that worked, else FAILED."""
        try:
            image_id = self._executor(job).launch(self._launch_request(job))
        except (LaunchError, OSError, TrainyardError) as exc:
            message = f"launch failed: {exc}"
            self.jobs.transition(job.id, JobState.LAUNCHING, JobState.FAILED, reason=message,
                                 message=message, now=self.clock())
            return False
        if image_id:  # the run records what ran: the image's id, not its movable tag
            self.jobs.set_image_id(job.id, job.attempt, image_id)
        self.jobs.transition(job.id, JobState.LAUNCHING, JobState.RUNNING,
                             reason="process started", now=self.clock(),
                             started_at=self.clock())
        return True

    def _launch_request(self, job: JobRecord) -> LaunchRequest:
        paths = self.workspace.attempt(job.id, job.attempt)
        paths.create()
        # Keep numeric libraries within the CPUs the job asked for.
        threads = str(max(1, math.ceil(job.spec.resources.cpus)))
        env = {var: threads for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                        "MKL_NUM_THREADS")}
        env["PYTHONUNBUFFERED"] = "1"
        files = JobFiles(data=Path(self._data_path(job)), model=paths.model_dir,
                         metrics=paths.metrics_path, checkpoint=paths.checkpoint_dir,
                         workdir=paths.workdir, log=paths.log_path)
        return LaunchRequest(job_id=job.id, attempt=job.attempt, handle=job.handle,
                             command=job.spec.command, image=job.spec.image, env=env,
                             hyperparameters=job.spec.hyperparameters,
                             resources=job.spec.resources, gpu_ids=job.gpu_ids, files=files,
                             workers=job.spec.workers)

    def _data_path(self, job: JobRecord) -> str:
        ref = job.spec.dataset
        if ref is None:
            empty = self.workspace.empty_dataset_dir
            if not empty.exists():
                empty.mkdir(parents=True, exist_ok=True)
                empty.chmod(0o555)
            return str(empty)
        record = self.datasets.get(ref.name, ref.version)
        if record is None:
            raise LaunchError(f"dataset {ref.name}:{ref.version} is no longer registered")
        return record.path


def describe_lost(detail: str) -> str:
    return f"lost: {detail}" if detail else "lost"
