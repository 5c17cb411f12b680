"""Jobs for every interface (gRPC now, HTTP later): submit, status, list, cancel, watch,
logs, and the queues overview. It authorizes (services/guard.py), validates, persists and
reads; it knows nothing of executors or wire formats."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from trainyard.auth.policy import Access, Identity
from trainyard.domain.budgets import BudgetScope, BudgetUse
from trainyard.domain.dependencies import (
    FIELD,
    Dependency,
    Need,
    checked,
    cycle_sentence,
    find_cycle,
    met,
    never_met,
    never_sentence,
)
from trainyard.domain.early_stopping import STOPPED_EARLY
from trainyard.domain.errors import FailedPrecondition, InvalidArgument, NotFound, StaleState
from trainyard.domain.pipeline import check_pipeline, pipeline_id
from trainyard.domain.policy import Policy
from trainyard.domain.position import QueuePlace, explained
from trainyard.domain.prediction import PredictedStart
from trainyard.domain.spec import JobSpec, Resources, check_text
from trainyard.domain.states import JobState
from trainyard.metadata.workspace import Workspace
from trainyard.scheduler.budgets import declared_budgets, periods_of
from trainyard.scheduler.fair_share import share
from trainyard.scheduler.usage import Held, PoolUse, pool_use, team_use
from trainyard.services.guard import Guard
from trainyard.services.policy import PolicyService
from trainyard.services.submission import SubmitCheck
from trainyard.store.dependencies import DependencyStore
from trainyard.store.jobs import JobFilter, JobStore
from trainyard.store.metrics import MetricStore
from trainyard.store.model_registry import ModelStore
from trainyard.store.predictions import PredictionStore
from trainyard.store.records import EventRecord, JobRecord, ModelRecord
from trainyard.store.sample_ids import SampleIdStore

_VERBS = {"GetTrainingStatus": "see", "CancelJob": "cancel", "WatchJob": "watch",
          "StreamLogs": "read the logs of"}
MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100
LOG_CHUNK = 64 * 1024
MAX_LOG_OFFSET = 1 << 53  # past any log; a file cannot seek near 2**63


@dataclass(frozen=True)
class JobStatus:
    job: JobRecord
    place: QueuePlace
    events: list[EventRecord]
    latest_metrics: dict[str, tuple[float, int | None]]
    model: ModelRecord | None
    # While it waits: the forecast's latest prediction of its start, if it made one.
    prediction: PredictedStart | None = None
    # The jobs it waits for (--after), each with its state now.
    needs: list[Need] = field(default_factory=list)
    sample_job_id: int = 0  # its number in the sample training service (0: none)

    @property
    def queue_position(self) -> int:
        return self.place.position

    @property
    def pending_message(self) -> str:
        """Why it waits, with how many jobs are ahead where that is what it waits for."""
        job = self.job
        return explained(job.pending_code, job.pending_message, self.place)


@dataclass(frozen=True)
class JobPage:
    """A page of ListJobs, newest first."""

    records: list[JobRecord]
    next_token: str  # the next page's token; "" at the end
    predicted: dict[str, PredictedStart]  # the waiting ones' latest predictions, by job id
    needs: dict[str, list[Need]]  # what those that wait for jobs (--after) wait for, by job id


@dataclass(frozen=True)
class QueuesOverview:
    policy: Policy  # the one view in force: the file's or FIFO's, with the store's rules
    source: str  # the policy file, or "" for the built-in one
    loaded_at: float
    waiting: dict[str, int]  # by queue
    running: dict[str, int]  # active jobs by queue
    total_running: int
    pools: dict[str, PoolUse]  # what active jobs hold of each pool
    teams: dict[tuple[str, str], Resources]  # (team, pool) -> what the team's jobs hold
    # Fair share by queue: decayed usage as the tracker last saved it (None: never), and
    # where that leaves each queue (usage over weight, the scheduler's own rule).
    usage: dict[str, float] = field(default_factory=dict)
    usage_at: float | None = None
    standing: dict[str, float] = field(default_factory=dict)
    # The budgets over time (domain.budgets): each one's use in its window as of budgets_at.
    budget_use: dict[BudgetScope, BudgetUse] = field(default_factory=dict)
    budgets_at: float = 0.0


def _ignore() -> None:
    return None


def _no_usage() -> tuple[dict[str, float], float | None]:
    return {}, None


def _no_budget_use(_periods: Mapping[BudgetScope, float], _now: float
                   ) -> dict[BudgetScope, BudgetUse]:
    return {}


@dataclass
class JobService:
    jobs: JobStore
    metrics: MetricStore
    models: ModelStore
    workspace: Workspace
    policy: PolicyService
    check: SubmitCheck
    guard: Guard
    # Signals to the tracker: new work to admit; a job cancelled (it may need stopping).
    on_submit: Callable[[], None] = _ignore
    on_cancel: Callable[[], None] = _ignore
    # The fair-share usage the tracker saves, and when (store/usage.py UsageStore.load).
    fair_share_usage: Callable[[], tuple[dict[str, float], float | None]] = _no_usage
    # The budgets' use in their windows (store/budget_usage.py BudgetUsageStore.used), as of
    # the tracker's clock.
    budget_use: Callable[[Mapping[BudgetScope, float], float],
                         dict[BudgetScope, BudgetUse]] = _no_budget_use
    clock: Callable[[], float] = time.time
    # What the tracker's forecast last predicted (store/predictions.py): read, never made.
    predictions: PredictionStore = field(init=False)
    dependencies: DependencyStore = field(init=False)
    sample_ids: SampleIdStore = field(init=False)

    def __post_init__(self) -> None:
        self.predictions = PredictionStore(self.jobs.db)
        self.dependencies = DependencyStore(self.jobs.db)
        self.sample_ids = SampleIdStore(self.jobs.db)

    def train(self, identity: Identity, spec: JobSpec, *, client_request_id: str = "",
              pipeline: str = "", pipeline_max_parallel: int = 0,
              reproduced_from: str = "", after: Sequence[Dependency] = (),
              sample_id: bool = False) -> tuple[str, bool]:
        """Store the job as WAITING. In a pipeline (the caller's, by name, made on its first
        submit), it runs only while fewer than the pipeline's limit of its jobs run.
        `reproduced_from` links it to the run whose pinned spec it repeats. With `after`, it
        joins the queue only once those jobs have ended as each asks (domain.dependencies)."""
        self.guard.require(identity, Access.WRITE, "Train")
        check_text("client_request_id", client_request_id, 128)
        check_pipeline(pipeline, pipeline_max_parallel)
        wanted = checked(after)
        accepted = self.check.accept(spec, identity)
        # A retry is told apart before the insert only where it matters: it is not counted
        # against the limits, and a cycle through its own job is looked for. Otherwise the
        # request id's unique index sends a retry's insert to its stored job.
        look_up = bool(client_request_id) and (bool(wanted) or self.check.counts_submits())
        retried = self.jobs.job_for_request(client_request_id) if look_up else None
        needs = self._needs(identity, wanted, retried)
        if retried is None:
            self.check.admit(identity, accepted.team)  # a retried submit is not counted
        group = pipeline_id(identity.user, pipeline) if pipeline else ""
        # The owner comes from the caller's identity, never from the request.
        job_id, existing = self.jobs.create(accepted.spec, owner=identity.user,
                                            team=accepted.team,
                                            kind=accepted.kind,
                                            client_request_id=client_request_id or None,
                                            sweep_id=group, reproduced_from=reproduced_from,
                                            needs=needs, sample_id=sample_id,
                                            look_up_request=retried is not None)
        if existing and self.jobs.get(job_id).owner != identity.user:
            raise FailedPrecondition("client_request_id: another user's submit used this id; "
                                     "choose another")
        if existing:
            stored = {n.dependency for n in self.dependencies.needs_of([job_id]).get(job_id, [])}
            if stored != set(wanted):
                raise InvalidArgument("client_request_id", f"was already used for job {job_id} "
                                      "with a different after")
        if not existing:
            # Only a submit that stored its job makes or changes the pipeline. Until this
            # write the job's group has no limit, which the tracker reads as none.
            if pipeline:
                self.jobs.join_pipeline(identity.user, pipeline, pipeline_max_parallel,
                                        time.time())
            self.on_submit()
        return job_id, existing

    def _needs(self, identity: Identity, wanted: Sequence[Dependency],
               retried: str | None) -> list[Need]:
        """The jobs a submit waits for, each with its state now. One the caller may not see
        is as unknown (NOT_FOUND, as a dataset version the submit names); one that already
        ended so that it can never be met is refused; and so is a cycle, which only a
        retried request (`retried`: the job it made) naming its own job could make: every
        other submit's job is new, so no stored job waits for it."""
        needs: list[Need] = []
        for dep in wanted:
            try:
                job = self.jobs.get(dep.job_id)
            except NotFound:
                job = None
            if job is None or not self.guard.may_see(identity, job.owner):
                raise NotFound(f"{FIELD}: job", dep.job_id)
            if retried is None and never_met(dep, job.state):
                raise FailedPrecondition(f"{FIELD}: {never_sentence(dep.job_id, job.state)}")
            needs.append(Need(dep, job.state, met(dep, job.state)))
        if retried is not None and wanted:
            ids = [d.job_id for d in wanted]
            path = find_cycle(retried, ids, self.dependencies.edges_from(ids))
            if path is not None:
                raise InvalidArgument(FIELD, cycle_sentence(path))
        return needs

    def _visible(self, identity: Identity, job: JobRecord, action: str) -> JobRecord:
        return self.guard.job(identity, job, action, _VERBS[action])

    def status(self, identity: Identity, job_id: str) -> JobStatus:
        self.guard.require(identity, Access.READ, "GetTrainingStatus")
        with self.jobs.db.read() as conn:  # one pooled connection for all six reads
            job = self._visible(identity, self.jobs.get(job_id, conn), "GetTrainingStatus")
            # A trial stopped early keeps its model as a success would.
            succeeded = job.state is JobState.SUCCEEDED or job.end_reason == STOPPED_EARLY
            waiting = job.state is JobState.WAITING
            return JobStatus(
                job=job,
                # Under a policy file queues admit by job priority, and FIFO by submit order.
                place=self.jobs.queue_place(
                    job, by_priority=self.policy.declared is not None, conn=conn),
                events=self.jobs.events(job_id, conn=conn),
                latest_metrics=self.metrics.latest(job_id, conn),
                model=self.models.for_job(job_id, conn=conn) if succeeded else None,
                prediction=self.predictions.get(job_id, conn) if waiting else None,
                needs=self.dependencies.needs_of([job_id], conn).get(job_id, []),
                sample_job_id=self.sample_ids.number_of(job_id, conn) or 0,
            )

    def list_page(self, identity: Identity, *, states: Sequence[JobState] = (),
                  queue: str = "", labels: Mapping[str, str] | None = None,
                  page_size: int = 0, page_token: str = "") -> JobPage:
        """ListJobs: a page of jobs with what its waiting ones are predicted to start at and
        what its jobs wait for (--after), read on one pooled connection, one query each."""
        self.guard.require(identity, Access.READ, "ListJobs")
        check_text("queue", queue)
        for key, value in (labels or {}).items():
            check_text(f"labels.{key}", key + value, 512)
        if page_size < 0 or page_size > MAX_PAGE_SIZE:
            raise InvalidArgument("page_size", f"must be between 0 and {MAX_PAGE_SIZE}")
        after: int | None = None
        if page_token:
            after = int(page_token) if page_token.isdigit() and len(page_token) < 19 else None
            if after is None:
                raise InvalidArgument("page_token", "is not a token from an earlier "
                                      "ListJobs response")
        owners = self.guard.owners(identity)
        with self.jobs.db.read() as conn:
            records, next_seq = self.jobs.list(JobFilter(states, queue, labels, owners),
                                               page_size=page_size or DEFAULT_PAGE_SIZE,
                                               after_seq=after, conn=conn)
            return JobPage(
                records=records, next_token="" if next_seq is None else str(next_seq),
                predicted=self.predictions.many(
                    (r.id for r in records if r.state is JobState.WAITING), conn),
                needs=self.dependencies.needs_of([r.id for r in records], conn))

    def cancel(self, identity: Identity, job_id: str) -> JobState:
        """Cancel a job: at once if it waits, otherwise by asking the tracker to stop it."""
        self.guard.require(identity, Access.WRITE, "CancelJob")
        for _ in range(10):
            job = self._visible(identity, self.jobs.get(job_id), "CancelJob")
            if job.state.is_final():
                raise FailedPrecondition(f"job {job_id} is already {job.state}; only waiting "
                                         "or running jobs can be cancelled")
            try:
                if job.state in (JobState.WAITING, JobState.PREEMPTED):
                    self.jobs.transition(job_id, job.state, JobState.CANCELLED,
                                         reason="cancelled by request",
                                         message="cancelled before it started",
                                         pending_code="", pending_message="")
                    self.on_cancel()
                    return JobState.CANCELLED
                if self.jobs.update_fields(job_id, job.state, cancel_requested=True):
                    self.on_cancel()
                    return job.state
            except StaleState:
                pass
            # The job moved between the read and the write; look again.
        raise FailedPrecondition(f"job {job_id} kept changing state; try again")

    def watch(self, identity: Identity, job_id: str, *, is_active: Callable[[], bool],
              poll_seconds: float = 1.0) -> Iterator[tuple[EventRecord, bool]]:
        """Every state change of the job, oldest first, each with whether it is the job's
        end, until it reaches a final state."""
        self.guard.require(identity, Access.READ, "WatchJob")
        # NotFound or PermissionDenied before the stream starts.
        self._visible(identity, self.jobs.get(job_id), "WatchJob")
        feed = self.jobs.db.feed
        last_id = 0
        while is_active():
            version = feed.version
            events = self.jobs.events(job_id, after_id=last_id)
            # A retried attempt's FAILED is committed with the move back to WAITING, so a
            # final state is the end only when no event follows it.
            ended = bool(events) and events[-1].to_state.is_final()
            for index, event in enumerate(events):
                last_id = event.id
                yield event, ended and index == len(events) - 1
            if ended:
                return
            feed.wait(version, poll_seconds)

    def logs(self, identity: Identity, job_id: str, *, follow: bool, offset: int,
             is_active: Callable[[], bool],
             poll_seconds: float = 0.2) -> Iterator[tuple[int, bytes]]:
        """(offset, bytes) chunks of the latest attempt's log; with follow, until it is final."""
        self.guard.require(identity, Access.READ, "StreamLogs")
        if offset < 0:
            raise InvalidArgument("offset", "must not be negative")
        if offset > MAX_LOG_OFFSET:
            raise InvalidArgument("offset", f"must be at most {MAX_LOG_OFFSET}")
        job = self._visible(identity, self.jobs.get(job_id), "StreamLogs")
        path = self.workspace.attempt(job_id, max(job.attempt, 1)).log_path
        while is_active():
            try:
                # O_NOFOLLOW: the job owns its run directory and could swap the log for a
                # link to a file the service may read but the caller may not.
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:  # not there yet, or a link
                fd = -1
            if fd >= 0:
                with os.fdopen(fd, "rb") as fh:
                    fh.seek(offset)
                    while data := fh.read(LOG_CHUNK):
                        yield offset, data
                        offset += len(data)
            if not follow:
                return
            job = self.jobs.get(job_id)
            if job.state.is_final():
                # One more read catches what was written just before the end.
                if path.exists() and path.stat().st_size > offset:
                    continue
                return
            if job.attempt and path != self.workspace.attempt(job_id, job.attempt).log_path:
                path, offset = self.workspace.attempt(job_id, job.attempt).log_path, 0
            time.sleep(poll_seconds)

    def queues(self, identity: Identity) -> QueuesOverview:
        """The policy in force with what waits and runs in it, for `trainyard queues`."""
        self.guard.require(identity, Access.READ, "GetQueues")
        view = self.policy.effective()
        active = self.jobs.active_use()
        running: dict[str, int] = {}
        for use in active:
            running[use.queue] = running.get(use.queue, 0) + 1
        held = [Held(use.team, use.pool, use.resources) for use in active]
        usage, usage_at = self.fair_share_usage()
        standing = {q.name: share(usage, q.name, q.weight)
                    for q in view.policy.queues.values() if q.weight > 0}
        now = self.clock()
        budgets = periods_of(declared_budgets(view.policy))
        return QueuesOverview(view.policy, view.source, view.loaded_at,
                              self.jobs.waiting_by_queue(), running, len(active),
                              pool_use(held), team_use(held), usage, usage_at, standing,
                              self.budget_use(budgets, now) if budgets else {}, now)
