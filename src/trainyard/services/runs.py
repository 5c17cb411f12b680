"""Runs for every interface: find, filter and sort them, show one, compare several, and
reproduce one as a new job with its pinned spec. Members see only the runs of jobs they
may see (services/guard.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from trainyard.auth.policy import Access, Identity
from trainyard.domain.errors import FailedPrecondition, InvalidArgument, NotFound
from trainyard.domain.runs import (
    MAX_COMPARED,
    MetricThreshold,
    check_hex_prefix,
    check_metric_key,
    parse_run_id,
)
from trainyard.domain.spec import LABEL_KEY_RE, NAME_RE, JobSpec, check_text
from trainyard.domain.states import JobState
from trainyard.metadata.runs import Comparison, attempt_events, compare
from trainyard.metadata.workspace import Workspace
from trainyard.services.guard import Guard
from trainyard.services.jobs import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, JobService
from trainyard.store.jobs import JobStore
from trainyard.store.model_registry import ModelStore
from trainyard.store.records import EventRecord, ModelRecord, RunRecord
from trainyard.store.runs import RunFilter, RunStore

Series = dict[str, list[tuple[int | None, float, float]]]


@dataclass(frozen=True)
class RunView:
    """A run with what is shown of it: final metrics, model, log; and, for one run, its
    transitions, every metric point and the jobs that reproduce it."""

    run: RunRecord
    metrics: dict[str, tuple[float, int | None]]
    model: ModelRecord | None
    log_path: Path
    log_size: int
    events: list[EventRecord] = field(default_factory=list)
    series: Series | None = None
    series_truncated: bool = False
    reproductions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunQuery:
    job_id: str = ""
    dataset: str = ""  # NAME or NAME:VERSION (a prefix of the hash will do)
    algorithm: str = ""
    image: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    states: Sequence[JobState] = ()
    thresholds: Sequence[MetricThreshold] = ()
    sort_metric: str = ""
    descending: bool = False
    page_size: int = 0
    page_token: str = ""


@dataclass
class RunService:
    jobs: JobStore
    runs: RunStore
    models: ModelStore
    workspace: Workspace
    guard: Guard
    submitter: JobService  # a reproduced run is submitted as any job is

    def _find(self, identity: Identity, run_id: str, action: str = "GetRun",
              verb: str = "see the runs of") -> RunRecord:
        """The run, if the identity may see its job; for the use cases below, which have
        checked their need first."""
        job_id, attempt = parse_run_id(run_id)
        # The job first: a job the caller may not see is refused, not reported missing.
        self.guard.job(identity, self.jobs.get(job_id), action, verb)
        run = self.runs.get(job_id, attempt)
        if run is None:
            if attempt is None:
                raise NotFound("run", f"{job_id} (the job has not started yet)")
            raise NotFound("run", run_id)
        return run

    def get(self, identity: Identity, run_id: str) -> RunView:
        self.guard.require(identity, Access.READ, "GetRun")
        run = self._find(identity, run_id)
        series, truncated = self.runs.series(run.job.id, run.attempt)
        view = self._views([run])[0]
        events = attempt_events(self.jobs.events(run.job.id), run.attempt)
        return replace(view, events=events, series=series, series_truncated=truncated,
                       reproductions=self.runs.reproductions(run.id))

    def list_runs(self, identity: Identity, query: RunQuery) -> tuple[list[RunView], str]:
        self.guard.require(identity, Access.READ, "ListRuns")
        flt = self._filter(query, identity)
        if query.page_size < 0 or query.page_size > MAX_PAGE_SIZE:
            raise InvalidArgument("page_size", f"must be between 0 and {MAX_PAGE_SIZE}")
        offset = 0
        if query.page_token:
            if not query.page_token.isdigit() or len(query.page_token) > 12:
                raise InvalidArgument("page_token", "is not a token from an earlier ListRuns "
                                      "response")
            offset = int(query.page_token)
        if query.sort_metric:
            check_metric_key(query.sort_metric, "sort_metric")
        size = query.page_size or DEFAULT_PAGE_SIZE
        records, more = self.runs.page(flt, limit=size, offset=offset,
                                       sort_metric=query.sort_metric,
                                       descending=query.descending)
        return self._views(records), str(offset + size) if more else ""

    def _filter(self, q: RunQuery, identity: Identity) -> RunFilter:
        name, _, version = q.dataset.partition(":")
        if q.dataset:
            if not NAME_RE.match(name):
                raise InvalidArgument("dataset", f"{name[:130]!r} is not a dataset name")
            if version:
                check_hex_prefix(version, "dataset")
        if q.job_id:
            parse_run_id(q.job_id, "job_id")
        if q.algorithm and not NAME_RE.match(q.algorithm):
            check_text("algorithm", q.algorithm, 256)
        check_text("image", q.image, 512)
        for key, value in q.labels.items():
            if not LABEL_KEY_RE.match(key):
                raise InvalidArgument(f"labels.{key[:64]}", "is not a label key")
            check_text(f"labels.{key}", value, 256)
        return RunFilter(job_id=q.job_id, dataset_name=name, dataset_version=version,
                         algorithm=q.algorithm, image=q.image, labels=dict(q.labels),
                         states=tuple(q.states), thresholds=tuple(q.thresholds),
                         owners=self.guard.owners(identity))

    def _views(self, records: Sequence[RunRecord]) -> list[RunView]:
        keys = [(r.job.id, r.attempt) for r in records]
        final = self.runs.final_metrics(keys)
        models = self.models.for_runs(keys)
        workspace = self.workspace
        views = []
        for r in records:
            log = workspace.attempt(r.job.id, r.attempt).log_path
            try:
                size = log.lstat().st_size
            except OSError:
                size = 0
            views.append(RunView(run=r, metrics=final[(r.job.id, r.attempt)],
                                 model=models.get((r.job.id, r.attempt)), log_path=log,
                                 log_size=size))
        return views

    def compare(self, identity: Identity, run_ids: Sequence[str],
                include_series: bool = False) -> tuple[Comparison, list[RunView]]:
        """Side by side: settings, hyperparameters and final metrics, each key flagged
        where the runs disagree (a run lacking a key the others have included)."""
        self.guard.require(identity, Access.READ, "CompareRuns")
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            raise InvalidArgument("run_ids", "name at least one run")
        if len(ids) > MAX_COMPARED:
            raise InvalidArgument("run_ids", f"at most {MAX_COMPARED} runs at once")
        found = [self._find(identity, i, "CompareRuns", "compare the runs of") for i in ids]
        views = self._views(found)
        if include_series:
            views = [replace(v, series=s, series_truncated=t) for v in views
                     for s, t in [self.runs.series(v.run.job.id, v.run.attempt)]]
        final = {(v.run.job.id, v.run.attempt): v.metrics for v in views}
        return compare(found, final), views

    def reproduce(self, identity: Identity, run_id: str,
                  client_request_id: str = "") -> tuple[str, bool, JobSpec, RunRecord]:
        """Submit the run's spec again, pinned: the same dataset version, the image's id
        (not its tag), hyperparameters, resources, workers and queue. The new job records
        the run it reproduces."""
        self.guard.require(identity, Access.WRITE, "ReproduceRun")
        run = self._find(identity, run_id, "ReproduceRun", "reproduce the runs of")
        spec = pinned_spec(run)
        job_id, existing = self.submitter.train(identity, spec,
                                                client_request_id=client_request_id,
                                                reproduced_from=run.id)
        return job_id, existing, spec, run


def pinned_spec(run: RunRecord) -> JobSpec:
    spec = run.spec
    if not spec.image or spec.image.startswith("sha256:"):
        return spec
    if not run.image_id:
        raise FailedPrecondition(f"run {run.id} ran image {spec.image!r} but its image id was "
                                 "not recorded (the launch was cut short), so it cannot be "
                                 "pinned; submit it again by hand")
    return replace(spec, image=run.image_id)
