from __future__ import annotations

import pytest

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import JobSpec
from trainyard.domain.sweep import Parameter, expand

BASE = JobSpec(name="lr", command="python train.py", hyperparameters={"EPOCHS": "3"})


def test_a_grid_is_every_combination_named_in_order() -> None:
    specs = expand(BASE, [Parameter("LR", ("0.1", "0.01")), Parameter("BATCH", ("32", "64"))],
                   search="grid", trials=0, seed=0)
    assert [s.name for s in specs] == ["lr-1", "lr-2", "lr-3", "lr-4"]
    assert [(s.hyperparameters["LR"], s.hyperparameters["BATCH"]) for s in specs] == [
        ("0.1", "32"), ("0.1", "64"), ("0.01", "32"), ("0.01", "64")]
    assert all(s.hyperparameters["EPOCHS"] == "3" for s in specs)


def test_random_search_is_seeded_and_stays_in_range() -> None:
    params = [Parameter("LR", low=1e-4, high=1e-1, log=True),
              Parameter("LAYERS", low=1, high=4, integer=True),
              Parameter("OPT", ("sgd", "adam"))]
    first = expand(BASE, params, search="random", trials=20, seed=7)
    assert first == expand(BASE, params, search="random", trials=20, seed=7)
    assert first != expand(BASE, params, search="random", trials=20, seed=8)
    for spec in first:
        assert 1e-4 <= float(spec.hyperparameters["LR"]) <= 1e-1
        assert spec.hyperparameters["LAYERS"] in {"1", "2", "3", "4"}
        assert spec.hyperparameters["OPT"] in {"sgd", "adam"}


@pytest.mark.parametrize(("params", "search", "trials", "field"), [
    ([], "grid", 0, "parameters"),
    ([Parameter("LR")], "grid", 0, "parameters.LR"),
    ([Parameter("LR", low=1, high=0)], "random", 5, "parameters.LR"),
    ([Parameter("LR", low=0, high=1, log=True)], "random", 5, "parameters.LR"),
    ([Parameter("LR", ("1",))], "random", 0, "trials"),
    ([Parameter("LR", ("1",))], "bayes", 0, "search"),
    ([Parameter("1X", ("1",))], "grid", 0, "parameters.1X"),
    ([Parameter("A", tuple(map(str, range(200)))), Parameter("B", tuple(map(str, range(200))))],
     "grid", 0, "parameters"),
])
def test_bad_sweeps_name_the_field(params: list[Parameter], search: str, trials: int,
                                   field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        expand(BASE, params, search=search, trials=trials, seed=0)
    assert info.value.field == field
