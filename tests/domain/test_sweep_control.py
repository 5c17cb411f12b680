from __future__ import annotations

import pytest

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.sweep_control import (
    SweepBudget,
    SweepUse,
    budget_reached,
    check_budget,
    not_launched,
    trials_left,
)

TITLE = "sweep 'lr'"


def test_each_budget_is_reached_with_its_sentence() -> None:
    assert budget_reached(TITLE, SweepBudget(max_trials=4), SweepUse(3)) is None
    assert budget_reached(TITLE, SweepBudget(max_trials=4), SweepUse(4)) == \
        "sweep 'lr' launched 4 trials, its budget of 4"
    gpu = SweepBudget(max_gpu_hours=2)
    assert budget_reached(TITLE, gpu, SweepUse(9, gpu_s=7199)) is None
    assert budget_reached(TITLE, gpu, SweepUse(9, gpu_s=7200)) == \
        "sweep 'lr' used 2 GPU-hours, its budget of 2 GPU-hours"
    # CPU time counts against CPU-hours only.
    assert budget_reached(TITLE, gpu, SweepUse(9, cpu_s=1e9)) is None
    assert budget_reached(TITLE, SweepBudget(max_cpu_hours=0.5), SweepUse(1, cpu_s=1800)) == \
        "sweep 'lr' used 0.5 CPU-hours, its budget of 0.5 CPU-hours"
    assert not_launched("x") == "not launched: x"


def test_trials_left() -> None:
    assert trials_left(SweepBudget(), SweepUse(5)) is None
    assert trials_left(SweepBudget(max_trials=3), SweepUse(1)) == 2
    assert trials_left(SweepBudget(max_trials=3), SweepUse(5)) == 0


def test_budgets_are_checked_naming_the_field() -> None:
    assert not check_budget(0, 0.0, 0.0)
    assert check_budget(5, 1.5, 0.0) == SweepBudget(5, 1.5, 0.0)
    for args, field in (((-1, 0.0, 0.0), "max_trials"), ((0, -1.0, 0.0), "max_gpu_hours"),
                        ((0, float("nan"), 0.0), "max_gpu_hours"),
                        ((0, 0.0, float("inf")), "max_cpu_hours")):
        with pytest.raises(InvalidArgument) as err:
            check_budget(*args)
        assert err.value.field == field
