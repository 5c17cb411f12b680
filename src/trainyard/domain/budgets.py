"""Budgets over time: GPU-hours and CPU-hours a team (or a queue) may use in a rolling period,
declared in the policy file. Pure data and arithmetic: the store sums what ended attempts and
running ones used inside the window (store/budget_usage.py), the scheduler decides by it
(scheduler/budgets.py), and both speak of it in the sentences here."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.domain.spec import Resources
from trainyard.quantities import hours, period_words

HOUR = 3600.0


@dataclass(frozen=True)
class Budget:
    """At most `gpu_hours` GPU-hours and `cpu_hours` CPU-hours in any `period_s` seconds up to
    now; a limit left out (None) is not counted."""

    period_s: float
    gpu_hours: float | None = None
    cpu_hours: float | None = None


@dataclass(frozen=True, order=True)
class BudgetScope:
    """Whose budget: a team's (every job that draws on the team, in any queue) or a queue's
    (every job of the queue, of any team)."""

    kind: str  # TEAM or QUEUE
    name: str

    @property
    def title(self) -> str:
        return f"{self.kind} {self.name!r}"


TEAM = "team"
QUEUE = "queue"


@dataclass(frozen=True)
class BudgetUse:
    """Resource-seconds used inside a budget's window: GPUs (CPUs) x seconds held."""

    gpu_s: float = 0.0
    cpu_s: float = 0.0

    def __add__(self, other: BudgetUse) -> BudgetUse:
        return BudgetUse(self.gpu_s + other.gpu_s, self.cpu_s + other.cpu_s)

    @property
    def gpu_hours(self) -> float:
        return self.gpu_s / HOUR

    @property
    def cpu_hours(self) -> float:
        return self.cpu_s / HOUR


NO_USE = BudgetUse()


def scopes_of(team: str, queue: str) -> tuple[BudgetScope, BudgetScope]:
    """The budgets a job draws on: its team's and its queue's (a job of no team: "")."""
    return BudgetScope(TEAM, team), BudgetScope(QUEUE, queue)


def inside_window(start: float, end: float, now: float, period_s: float) -> float:
    """Seconds of [start, end] inside the window [now - period, now]."""
    return max(0.0, min(end, now) - max(start, now - period_s))


def use_of(resources: Resources, seconds: float) -> BudgetUse:
    """What holding `resources` for `seconds` uses of a budget."""
    return BudgetUse(resources.gpus * seconds, resources.cpus * seconds) if seconds > 0 \
        else NO_USE


def used_sentence(scope: BudgetScope, what: str, used_h: float, limit_h: float,
                  period_s: float) -> str:
    """"team 'nlp' has used 982 of its 1,000 GPU-hours in the last 7 days"."""
    return (f"{scope.title} has used {hours(used_h)} of its {hours(limit_h)} {what} in the "
            f"last {period_words(period_s)}")
