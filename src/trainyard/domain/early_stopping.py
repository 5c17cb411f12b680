"""Early stopping of a sweep's trials on its objective: the median stopping rule and
asynchronous successive halving (ASHA). Pure: each rule is a function from metric curves to a
verdict, so the tracker (tracker/early_stop.py) and the tests ask the same code.

A curve is one trial's points of the objective's metric, (step, value), in the order written.
"Its best value by step s" is the best (max or min, by the objective) of its values at steps
up to s; a curve "reaches" step s once it has a point at s or later.

- median: at each step s >= min_steps, a running trial whose best value by s is strictly worse
  than the median of the completed trials' best values by s is stopped (a tie within
  rounding is no loss: Objective.clearly_better). Completed trials are
  those that finished by themselves (SUCCEEDED), counted at s only if they reached s; the rule
  waits for at least MEDIAN_MIN_COMPLETED of them.
- asha: rungs at min_steps * reduction**k steps (k = 0, 1, ...). A trial reaching a rung is
  judged once, then: with n values recorded at the rung (those of the trials that reached it
  before, any state, and its own), it continues only if fewer than ceil(n / reduction) of them
  are strictly better than its own, i.e. it is in the top 1/reduction so far.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from trainyard.domain.errors import InvalidArgument

STOPPED_EARLY = "STOPPED_EARLY"  # jobs.end_reason of a trial its sweep's rule stopped
MEDIAN = "median"
ASHA = "asha"
RULES = (MEDIAN, ASHA)
DIRECTIONS = ("max", "min")
DEFAULT_MIN_STEPS = 1
DEFAULT_REDUCTION = 3
MEDIAN_MIN_COMPLETED = 3  # completed trials the median rule waits for
MAX_STEPS = 1_000_000_000
MAX_REDUCTION = 1000

Curve = Sequence[tuple[int, float]]


@dataclass(frozen=True)
class Objective:
    metric: str
    direction: str  # "max" or "min"

    def better(self, a: float, b: float) -> bool:
        """a is strictly better than b."""
        return a > b if self.direction == "max" else a < b

    def clearly_better(self, a: float, b: float) -> bool:
        """a is better than b by more than rounding: a trial is never stopped for a tie that
        floating point made (0.85 * 3 / 6 against the mean of 0.4 and 0.45)."""
        return self.better(a, b) and not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)

    def __str__(self) -> str:
        return f"{self.metric}:{self.direction}"


@dataclass(frozen=True)
class EarlyStop:
    rule: str  # MEDIAN or ASHA
    objective: Objective
    min_steps: int = DEFAULT_MIN_STEPS
    reduction: int = DEFAULT_REDUCTION


@dataclass(frozen=True)
class Verdict:
    """Why a trial stops: its best value by `step`, and the bar it did not meet there (the
    median, or the worst value still in the top 1/reduction of the rung, `among` values)."""

    rule: str
    step: int
    value: float
    bar: float
    among: int = 0
    reduction: int = 0

    def sentence(self, objective: Objective) -> str:
        side = "below" if objective.direction == "max" else "above"
        head = f"stopped early: {objective.metric} {_num(self.value)} at step {self.step}"
        if self.rule == MEDIAN:
            return f"{head}, {side} the median {_num(self.bar)}"
        return (f"{head}, not in the top 1/{self.reduction} of the {self.among} trials at that "
                f"rung (they reach {_num(self.bar)})")


def _num(value: float) -> str:
    return f"{value:.4g}"


def parse_objective(text: str) -> Objective | None:
    """"METRIC:max" or "METRIC:min"; "" none."""
    if not text:
        return None
    metric, _, direction = text.rpartition(":")
    if not metric or direction not in DIRECTIONS or len(metric) > 120:
        raise InvalidArgument("objective", f"expected METRIC:max or METRIC:min (a metric "
                              f"of at most 120 characters), got {text[:140]!r}")
    return Objective(metric, direction)


def check_early_stop(rule: str, objective: Objective | None, min_steps: int,
                     reduction: int) -> EarlyStop | None:
    """The rule a sweep asked for ("" or "none": none), its settings checked; 0 for min_steps
    or reduction is the default."""
    if rule in ("", "none"):
        if min_steps or reduction:
            raise InvalidArgument("min_steps" if min_steps else "reduction",
                                  "needs an early-stopping rule (early_stop median or asha)")
        return None
    if rule not in RULES:
        raise InvalidArgument("early_stop", f"must be none, median or asha, got {rule[:40]!r}")
    if objective is None:
        raise InvalidArgument("objective", f"early stopping ({rule}) needs an objective, "
                              "METRIC:max or METRIC:min")
    if not 0 <= min_steps <= MAX_STEPS:
        raise InvalidArgument("min_steps", f"must be 1 to {MAX_STEPS}, got {min_steps}")
    if reduction and rule != ASHA:
        raise InvalidArgument("reduction", "is a setting of early_stop asha only")
    if reduction and not 2 <= reduction <= MAX_REDUCTION:
        raise InvalidArgument("reduction", f"must be 2 to {MAX_REDUCTION}, got {reduction}")
    return EarlyStop(rule, objective, min_steps or DEFAULT_MIN_STEPS,
                     reduction or DEFAULT_REDUCTION)


def best_by(curve: Curve, step: int, objective: Objective) -> float | None:
    """The curve's best value at steps up to `step`; None before its first point."""
    best: float | None = None
    for at, value in curve:
        if at <= step and (best is None or objective.better(value, best)):
            best = value
    return best


def reached(curve: Curve, step: int) -> bool:
    return any(at >= step for at, _ in curve)


def judge(rule: EarlyStop, curve: Curve, others: Sequence[Curve],
          completed: Sequence[Curve], after_step: int = 0) -> Verdict | None:
    """The first verdict on a running trial's steps after `after_step` (those judged before),
    or None while it goes on. `others`: the other trials' curves (for ASHA's rungs);
    `completed`: those of the trials that finished by themselves (for the median)."""
    if rule.rule == MEDIAN:
        return median_verdict(curve, completed, rule.objective, rule.min_steps, after_step)
    return asha_verdict(curve, others, rule.objective, rule.min_steps, rule.reduction,
                        after_step)


def median_verdict(curve: Curve, completed: Sequence[Curve], objective: Objective,
                   min_steps: int, after_step: int = 0) -> Verdict | None:
    for step in sorted({at for at, _ in curve if at > after_step and at >= min_steps}):
        mine = best_by(curve, step, objective)
        theirs = [v for c in completed if reached(c, step)
                  and (v := best_by(c, step, objective)) is not None]
        if mine is None or len(theirs) < MEDIAN_MIN_COMPLETED:
            continue
        median = statistics.median(theirs)
        if objective.clearly_better(median, mine):
            return Verdict(MEDIAN, step, mine, median, len(theirs))
    return None


def rungs(min_steps: int, reduction: int, up_to: int) -> Iterator[int]:
    """min_steps, min_steps * reduction, ... up to `up_to`."""
    rung = min_steps
    while rung <= up_to:
        yield rung
        rung *= reduction


def asha_verdict(curve: Curve, others: Sequence[Curve], objective: Objective,
                 min_steps: int, reduction: int, after_step: int = 0) -> Verdict | None:
    last = max((at for at, _ in curve), default=0)
    for rung in rungs(min_steps, reduction, last):
        if rung <= after_step:
            continue
        mine = best_by(curve, rung, objective)
        if mine is None:
            continue
        recorded = [v for c in others if reached(c, rung)
                    and (v := best_by(c, rung, objective)) is not None]
        values = sorted([*recorded, mine], key=lambda v: -v if objective.direction == "max"
                        else v)
        keep = math.ceil(len(values) / reduction)
        if sum(objective.clearly_better(v, mine) for v in recorded) >= keep:
            return Verdict(ASHA, rung, mine, values[keep - 1], len(values), reduction)
    return None
