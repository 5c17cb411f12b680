"""A sweep as one unit: its status (open, paused, cancelled, out of budget), its budgets and
the sentences that say where it stands. Pure.

Budgets, for the whole sweep (0: none):
- max_trials: at most this many trials are launched; once that many have started, the trials
  that never started are cancelled with the budget's sentence.
- max_gpu_hours: GPUs x hours run by all its trials (every attempt, the running ones so far);
  max_cpu_hours the same with CPUs. A trial without GPUs counts nothing against max_gpu_hours.
  Once one is used up, no trial that never started starts: they are cancelled likewise.
Trials that already started (running, or requeued after a preemption) go on in both cases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from trainyard.domain.errors import InvalidArgument

MAX_BUDGET_TRIALS = 10_000
MAX_BUDGET_HOURS = 1e9


class SweepStatus(StrEnum):
    OPEN = ""  # launches its trials as its limits allow
    PAUSED = "PAUSED"  # launches none; its running trials go on
    CANCELLED = "CANCELLED"  # every trial was stopped
    BUDGET = "BUDGET"  # used a budget: launches no trial that never started


@dataclass(frozen=True)
class SweepBudget:
    max_trials: int = 0
    max_gpu_hours: float = 0.0
    max_cpu_hours: float = 0.0

    def __bool__(self) -> bool:
        return bool(self.max_trials or self.max_gpu_hours or self.max_cpu_hours)


@dataclass(frozen=True)
class SweepUse:
    """What a sweep's trials used so far."""

    launched: int = 0  # trials that started at least once
    gpu_s: float = 0.0  # GPUs x seconds run
    cpu_s: float = 0.0  # CPUs x seconds run


def check_budget(max_trials: int, max_gpu_hours: float, max_cpu_hours: float) -> SweepBudget:
    if not 0 <= max_trials <= MAX_BUDGET_TRIALS:
        raise InvalidArgument("max_trials", f"must be 0 (no limit) to {MAX_BUDGET_TRIALS}, "
                              f"got {max_trials}")
    for field, hours in (("max_gpu_hours", max_gpu_hours), ("max_cpu_hours", max_cpu_hours)):
        if not (math.isfinite(hours) and 0 <= hours <= MAX_BUDGET_HOURS):
            raise InvalidArgument(field, f"must be 0 (no limit) or a positive number of hours, "
                                  f"got {hours}")
    return SweepBudget(max_trials, max_gpu_hours, max_cpu_hours)


def budget_reached(title: str, budget: SweepBudget, use: SweepUse) -> str | None:
    """The sentence of the first budget the sweep used up, or None."""
    if budget.max_trials and use.launched >= budget.max_trials:
        return f"{title} launched {use.launched} trials, its budget of {budget.max_trials}"
    for kind, limit, used in (("GPU", budget.max_gpu_hours, use.gpu_s),
                              ("CPU", budget.max_cpu_hours, use.cpu_s)):
        if limit and used >= limit * 3600:
            return (f"{title} used {used / 3600:.3g} {kind}-hours, its budget of {limit:g} "
                    f"{kind}-hours")
    return None


def trials_left(budget: SweepBudget, use: SweepUse) -> int | None:
    """How many more trials may start under max_trials (None: no such budget)."""
    return max(0, budget.max_trials - use.launched) if budget.max_trials else None


def not_launched(reached: str) -> str:
    """A waiting trial's message, cancelled because its sweep used a budget."""
    return f"not launched: {reached}"


def paused_sentence(title: str) -> str:
    return f"{title} is paused; it starts when the sweep is resumed (trainyard sweeps resume)"


def pause_note(title: str, by: str) -> str:
    return f"{title} paused by {by}" if by else f"{title} paused"
