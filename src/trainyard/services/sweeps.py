"""Sweeps: a grid or random search over hyperparameters, submitted as one group of jobs that
shares a running limit, and then watched, paused, resumed and cancelled as one unit, with an
objective its rule may stop losers on and budgets for the whole sweep. Who may see or act on
a sweep is who may see its jobs: its owner, their teammates (when teams share jobs), admins."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from trainyard.auth.policy import Access, Identity, may_see_job
from trainyard.domain.early_stopping import (
    STOPPED_EARLY,
    EarlyStop,
    Objective,
    best_by,
    check_early_stop,
    parse_objective,
)
from trainyard.domain.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    StaleState,
)
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.domain.sweep import Parameter, expand
from trainyard.domain.sweep_control import (
    SweepBudget,
    SweepStatus,
    SweepUse,
    budget_reached,
    check_budget,
    pause_note,
)
from trainyard.services.guard import Guard
from trainyard.services.submission import SubmitCheck
from trainyard.store.jobs import JobStore, new_job_id
from trainyard.store.records import JobRecord
from trainyard.store.sweeps import SweepRecord, SweepStore, sweep_columns

MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100


def _ignore() -> None:
    return None


@dataclass(frozen=True)
class SweepRules:
    """What a sweep asks beyond its trials: an objective, an early-stopping rule, budgets."""

    objective: str = ""  # "METRIC:max" or "METRIC:min"
    early_stop: str = ""  # "", "none", "median" or "asha"
    min_steps: int = 0  # 0: the default
    reduction: int = 0
    max_trials: int = 0
    max_gpu_hours: float = 0.0
    max_cpu_hours: float = 0.0

    def checked(self) -> tuple[Objective | None, EarlyStop | None, SweepBudget]:
        objective = parse_objective(self.objective)
        rule = check_early_stop(self.early_stop, objective, self.min_steps, self.reduction)
        return objective, rule, check_budget(self.max_trials, self.max_gpu_hours,
                                             self.max_cpu_hours)


@dataclass(frozen=True)
class Trial:
    job: JobRecord
    latest: dict[str, float]  # the newest value of each metric
    best: float | None = None  # its best value of the objective so far


@dataclass(frozen=True)
class SweepView:
    """A sweep for `sweeps list` (no trials) and `sweeps show` (with them)."""

    sweep: SweepRecord
    counts: dict[str, int]  # state -> trials; STOPPED_EARLY counted apart as well
    use: SweepUse
    # Where it stands: OPEN reads as RUNNING, or FINISHED once every trial ended.
    state: str
    message: str
    trials: list[Trial] = field(default_factory=list)
    best: Trial | None = None

    @property
    def total(self) -> int:
        return sum(v for k, v in self.counts.items() if k != STOPPED_EARLY)

    @property
    def stopped_early(self) -> int:
        return self.counts.get(STOPPED_EARLY, 0)


@dataclass
class SweepService:
    jobs: JobStore
    check: SubmitCheck
    on_submit: Callable[[], None] = _ignore  # new work for the tracker
    on_cancel: Callable[[], None] = _ignore  # trials to stop
    sweeps: SweepStore = field(init=False)

    def __post_init__(self) -> None:
        self.sweeps = SweepStore(self.jobs.db)

    @property
    def guard(self) -> Guard:
        return self.check.guard  # the one the submit check audits queue refusals through

    def submit(self, identity: Identity, template: JobSpec, parameters: list[Parameter], *,
               search: str, trials: int, seed: int, max_parallel: int,
               rules: SweepRules = SweepRules()) -> tuple[str, list[str]]:
        """Expand the search into jobs sharing one sweep id and its running limit. Every trial
        is checked before any is stored, so a bad one stores nothing."""
        self.guard.require(identity, Access.WRITE, "SubmitSweep")
        if max_parallel < 0:
            raise InvalidArgument("max_parallel", "must not be negative")
        objective, rule, budget = rules.checked()
        # Its algorithm's handle is resolved once, so every trial runs the same version.
        template = self.check.resolve(template)
        specs = expand(template, parameters, search=search, trials=trials, seed=seed)
        accepted = [self.check.accept(spec, identity) for spec in specs]
        self.check.admit(identity, accepted[0].team if accepted else "", len(specs))
        sweep_id = f"sw{new_job_id()}"[:32]
        self.sweeps.add(sweep_id, template.name, identity.user, max_parallel, time.time(),
                        sweep_columns(objective, rule, budget))
        job_ids = [self.jobs.create(each.spec, owner=identity.user, team=each.team,
                                    kind=each.kind, sweep_id=sweep_id)[0]
                   for each in accepted]
        self.on_submit()
        return sweep_id, job_ids

    # --- reads ----------------------------------------------------------------------------

    def list(self, identity: Identity, *, page_size: int = 0,
             page_token: str = "") -> tuple[list[SweepView], str]:
        """The sweeps the caller may see, newest first, a page at a time."""
        self.guard.require(identity, Access.READ, "ListSweeps")
        if not 0 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidArgument("page_size", f"must be between 0 and {MAX_PAGE_SIZE}")
        before = None
        if page_token:
            at, _, last_id = page_token.partition("/")
            try:
                before = (float(at), last_id)
            except ValueError:
                raise InvalidArgument("page_token", "is not a token from an earlier "
                                      "ListSweeps response") from None
        size = page_size or DEFAULT_PAGE_SIZE
        found = self.sweeps.newest(self.guard.owners(identity), limit=size + 1, before=before)
        page = found[:size]
        counts = self.sweeps.state_counts(s.id for s in page)
        use = self.sweeps.use([s.id for s in page], time.time())
        views = [self._view(s, counts[s.id], use[s.id]) for s in page]
        last = page[-1] if len(found) > size else None
        return views, (f"{last.created_at!r}/{last.id}" if last is not None else "")

    def show(self, identity: Identity, sweep_id: str) -> SweepView:
        """The sweep with each trial's state, hyperparameters and latest metrics, and the
        best trial so far on its objective."""
        self.guard.require(identity, Access.READ, "GetSweep")
        sweep = self._visible(identity, sweep_id, "GetSweep", "see")
        records = self.sweeps.trials(sweep.id)
        latest = self.sweeps.latest_metrics(j.id for j in records)
        curves = self.sweeps.curves(sweep.id, sweep.objective.metric) if sweep.objective \
            else {}
        trials = []
        for job in records:
            best = None
            if sweep.objective is not None and curves.get(job.id):
                best = best_by(curves[job.id], max(s for s, _ in curves[job.id]),
                               sweep.objective)
            trials.append(Trial(job, latest.get(job.id, {}), best))
        counts = self.sweeps.state_counts([sweep.id])[sweep.id]
        view = self._view(sweep, counts, self.sweeps.use([sweep.id], time.time())[sweep.id])
        ranked = [t for t in trials if t.best is not None]
        best_trial = None
        if ranked and sweep.objective is not None:
            best_trial = ranked[0]
            for t in ranked[1:]:
                assert t.best is not None and best_trial.best is not None
                if sweep.objective.better(t.best, best_trial.best):
                    best_trial = t
        return SweepView(view.sweep, view.counts, view.use, view.state, view.message, trials,
                         best_trial)

    def _view(self, sweep: SweepRecord, counts: dict[str, int], use: SweepUse) -> SweepView:
        status, message = sweep.status, sweep.status_message
        live = sum(counts.get(s.value, 0) for s in JobState if not s.is_final())
        if status is SweepStatus.OPEN:
            reached = budget_reached(sweep.title, sweep.budget, use) if sweep.budget else None
            if reached is not None and counts.get(JobState.WAITING.value, 0):
                return SweepView(sweep, counts, use, SweepStatus.BUDGET.value, reached)
            state = "RUNNING" if live else "FINISHED"
            return SweepView(sweep, counts, use, state, message)
        return SweepView(sweep, counts, use, status.value, message)

    def _visible(self, identity: Identity, sweep_id: str, action: str,
                 verb: str) -> SweepRecord:
        sweep = self.sweeps.get(sweep_id)
        if sweep is None:
            raise NotFound("sweep", sweep_id[:32])
        if not identity.admin and not may_see_job(identity, sweep.owner,
                                                  self.guard.share_team_jobs):
            def refuse() -> None:
                raise PermissionDenied(f"{identity.user!r} may not {verb} sweep {sweep_id}: "
                                       f"it is {sweep.owner!r}'s, not shared with "
                                       f"{identity.user!r}")
            self.guard.audited(identity, action, sweep_id, refuse)
        return sweep

    # --- as one unit ----------------------------------------------------------------------

    def pause(self, identity: Identity, sweep_id: str) -> SweepView:
        """Launch no new trial; the running ones go on. Its waiting trials say why."""
        self.guard.require(identity, Access.WRITE, "PauseSweep")
        sweep = self._visible(identity, sweep_id, "PauseSweep", "pause")
        self._refuse_final(sweep, "paused")
        if sweep.status is SweepStatus.PAUSED:
            raise FailedPrecondition(f"sweep {sweep_id} is paused already")
        self.sweeps.set_status(sweep.id, SweepStatus.PAUSED, pause_note(sweep.title,
                                                                         identity.user),
                               unless=(SweepStatus.CANCELLED,))
        self.on_submit()  # the next pass writes the waiting trials' reason
        return self.show(identity, sweep_id)

    def resume(self, identity: Identity, sweep_id: str) -> SweepView:
        self.guard.require(identity, Access.WRITE, "ResumeSweep")
        sweep = self._visible(identity, sweep_id, "ResumeSweep", "resume")
        if sweep.status is not SweepStatus.PAUSED:
            raise FailedPrecondition(f"sweep {sweep_id} is not paused"
                                     + (f" (it is {sweep.status.value})" if sweep.status
                                        else ""))
        if not self.sweeps.set_status(sweep.id, SweepStatus.OPEN, "",
                                      unless=(SweepStatus.CANCELLED,)):
            raise FailedPrecondition(f"sweep {sweep_id} was cancelled")
        self.jobs.db.feed.notify()
        self.on_submit()
        return self.show(identity, sweep_id)

    def cancel(self, identity: Identity, sweep_id: str) -> SweepView:
        """Stop every trial: the waiting ones at once, the running ones through the tracker
        (TERM, then KILL after the grace). Trials that ended stay as they are."""
        self.guard.require(identity, Access.WRITE, "CancelSweep")
        sweep = self._visible(identity, sweep_id, "CancelSweep", "cancel")
        self._refuse_final(sweep, "cancelled")
        why = f"{sweep.title} was cancelled" + (f" by {identity.user}" if identity.user else "")
        self.sweeps.set_status(sweep.id, SweepStatus.CANCELLED, why)
        for job in self.sweeps.trials(sweep.id):
            self._stop(job, why)
        self.on_cancel()
        return self.show(identity, sweep_id)

    def _stop(self, job: JobRecord, why: str) -> None:
        for _ in range(10):
            if job.state.is_final():
                return
            try:
                if job.state in (JobState.WAITING, JobState.PREEMPTED):
                    self.jobs.transition(job.id, job.state, JobState.CANCELLED, reason=why,
                                         message=why, pending_code="", pending_message="")
                    return
                if job.cancel_requested or self.jobs.update_fields(
                        job.id, job.state, cancel_requested=True):
                    return
            except StaleState:
                pass
            job = self.jobs.get(job.id)  # it moved between the read and the write

    def _refuse_final(self, sweep: SweepRecord, verb: str) -> None:
        if sweep.status is SweepStatus.CANCELLED:
            raise FailedPrecondition(f"sweep {sweep.id} was cancelled; it cannot be {verb}")
