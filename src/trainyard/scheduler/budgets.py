"""An admission check: a job waits (BUDGET) while it would run past its team's or its queue's
budget of GPU-hours or CPU-hours over the budget's rolling period (domain.budgets).

The rule, per budget and resource (GPUs, CPUs) the job uses:
- what is left is the limit, less what the window holds now (ended attempts' part inside it
  and running attempts so far: Snapshot.budget_use), less what the running jobs of the budget
  may still use before their time limits end (those without a time limit: nothing more), less
  what jobs admitted earlier in the pass may use;
- a job with a time limit may use its GPUs (CPUs) x its time limit: it starts only when that
  is no more than what is left;
- a job without one starts while anything is left (more than zero).
Running jobs are never stopped at exhaustion: a budget decides only what starts. A job of no
team, in a queue of no budget, is not checked; nor is a resource the job does not use.
A caller that tracks no usage (Snapshot.budget_use None: the replay) is not checked."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from trainyard.domain import policy as cfg
from trainyard.domain.budgets import (
    HOUR,
    NO_USE,
    QUEUE,
    TEAM,
    Budget,
    BudgetScope,
    BudgetUse,
    scopes_of,
    use_of,
    used_sentence,
)
from trainyard.domain.reasons import ReasonCode
from trainyard.quantities import describe_duration, hours
from trainyard.scheduler.model import PendingJob, PendingReason, Policy, RunningJob

_GPU, _CPU = "GPU-hours", "CPU-hours"


def declared_budgets(policy: cfg.Policy) -> dict[BudgetScope, Budget]:
    """Every budget the policy declares, by whose it is."""
    found = {BudgetScope(TEAM, name): team.budget for name, team in policy.teams.items()
             if team.budget is not None}
    found.update({BudgetScope(QUEUE, name): queue.budget
                  for name, queue in policy.queues.items() if queue.budget is not None})
    return found


def budgets_in(policy: Policy) -> Mapping[BudgetScope, Budget]:
    """The budgets a scheduler.Policy decides by (a policy says so with a `budgets`
    attribute, as QueuePolicy does): only for them is usage read and handed to it."""
    found: Mapping[BudgetScope, Budget] = getattr(policy, "budgets", None) or {}
    return found


def periods_of(budgets: Mapping[BudgetScope, Budget]) -> dict[BudgetScope, float]:
    """What a usage reader needs of the budgets: each one's window."""
    return {scope: budget.period_s for scope, budget in budgets.items()}


@dataclass
class _Account:
    budget: Budget
    used: BudgetUse  # in the window now
    committed: BudgetUse  # what its running jobs, and this pass's, may still use


class Budgets:
    """One pass's budgets: `blocked` says why a job may not start, `take` charges one that
    does. Empty (no budget declared, or no usage tracked): every job passes, at no cost."""

    def __init__(self, budgets: Mapping[BudgetScope, Budget],
                 used: Mapping[BudgetScope, BudgetUse] | None,
                 running: Iterable[RunningJob], now: float) -> None:
        self.accounts: dict[BudgetScope, _Account] = {}
        self._exhausted: dict[BudgetScope, PendingReason] = {}  # shared by jobs of no limit
        if used is None or not budgets:
            return
        self.accounts = {scope: _Account(budget, used.get(scope, NO_USE), NO_USE)
                         for scope, budget in budgets.items()}
        for job in running:
            if job.time_limit_s > 0:
                left = max(0.0, job.time_limit_s - max(0.0, now - job.started_at))
                self._charge(job.team, job.queue, use_of(job.resources, left))

    def __bool__(self) -> bool:
        return bool(self.accounts)

    def _charge(self, team: str, queue: str, use: BudgetUse) -> None:
        for scope in scopes_of(team, queue):
            account = self.accounts.get(scope)
            if account is not None:
                account.committed = account.committed + use

    def take(self, job: PendingJob) -> None:
        if self.accounts and job.time_limit_s > 0:
            self._charge(job.team, job.queue, use_of(job.resources, job.time_limit_s))

    def blocked(self, job: PendingJob) -> PendingReason | None:
        if not self.accounts:
            return None
        need = use_of(job.resources, job.time_limit_s)
        for scope in scopes_of(job.team, job.queue):
            account = self.accounts.get(scope)
            if account is None or not scope.name:
                continue
            budget = account.budget
            for what, limit, rate, used, committed, needed in (
                    (_GPU, budget.gpu_hours, job.resources.gpus, account.used.gpu_s,
                     account.committed.gpu_s, need.gpu_s),
                    (_CPU, budget.cpu_hours, job.resources.cpus, account.used.cpu_s,
                     account.committed.cpu_s, need.cpu_s)):
                if limit is None or rate <= 0:
                    continue
                left = limit * HOUR - used - committed
                if job.time_limit_s > 0 and needed <= left:
                    continue
                if job.time_limit_s <= 0 and left > 0:
                    continue
                return self._reason(scope, job, what, limit, used, committed, needed, left)
        return None

    def _reason(self, scope: BudgetScope, job: PendingJob, what: str, limit: float,
                used: float, committed: float, needed: float, left: float) -> PendingReason:
        budget = self.accounts[scope].budget
        sentence = used_sentence(scope, what, used / HOUR, limit, budget.period_s)
        held = f"; its running jobs may use {hours(committed / HOUR)} more" if committed > 0 \
            else ""
        if job.time_limit_s <= 0:
            key = BudgetScope(scope.kind, f"{scope.name}/{what}")
            found = self._exhausted.get(key)
            if found is None:
                found = self._exhausted[key] = PendingReason(
                    ReasonCode.BUDGET, f"{sentence}{held}; it starts when use older than the "
                    "window leaves it")
            return found
        count = job.resources.gpus if what == _GPU else job.resources.cpus
        unit = ("GPU" if what == _GPU else "CPU") + ("" if count == 1 else "s")
        return PendingReason(ReasonCode.BUDGET, (
            f"{sentence}{held}; this job may use {hours(needed / HOUR)} ({count:g} {unit} for "
            f"its {describe_duration(job.time_limit_s)} time limit), more than the "
            f"{hours(max(0.0, left) / HOUR)} left"))
