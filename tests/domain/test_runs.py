"""Run ids, metric thresholds, model references and the algorithm of a run."""

import pytest

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.runs import (
    Op,
    algorithm_of,
    parse_model_ref,
    parse_run_id,
    parse_threshold,
)
from trainyard.domain.spec import JobSpec, validate_spec


def test_run_ids() -> None:
    assert parse_run_id("18c2f3a9b01d-2") == ("18c2f3a9b01d", 2)
    assert parse_run_id("18c2f3a9b01d") == ("18c2f3a9b01d", None)
    for bad in ("", "-1", "abc-0", "abc-01", "../x", "a b", "abc-1\n", "x" * 33, "abc\x00-1"):
        with pytest.raises(InvalidArgument):
            parse_run_id(bad)


@pytest.mark.parametrize(("text", "key", "op", "value"), [
    ("accuracy>=0.9", "accuracy", Op.GE, 0.9), ("loss < 0.2", "loss", Op.LT, 0.2),
    ("epoch=3", "epoch", Op.EQ, 3.0), ("val/acc!=1e-3", "val/acc", Op.NE, 0.001),
])
def test_thresholds(text: str, key: str, op: Op, value: float) -> None:
    t = parse_threshold(text)
    assert (t.key, t.op, t.value) == (key, op, value)
    assert t.holds(value) is (op in (Op.GE, Op.LE, Op.EQ))


@pytest.mark.parametrize("text", ["accuracy", ">=0.9", "acc>=x", "acc=>1", "acc>=nan",
                                  "acc>=inf", "a b>=1"])
def test_bad_thresholds_are_refused(text: str) -> None:
    with pytest.raises(InvalidArgument):
        parse_threshold(text)


def test_model_refs() -> None:
    assert parse_model_ref("digits").version == 0
    assert parse_model_ref("digits:3").version == 3
    assert parse_model_ref("digits@production").alias == "production"
    for bad in ("../etc", "/abs", "a/b", "digits:0", "digits:x", "digits@", "digits@1",
                "digits@../p", "digits@a/b", ".hidden", "x\x00", "a:1@b", "name\n"):
        with pytest.raises(InvalidArgument):
            parse_model_ref(bad)


def test_algorithm_is_the_label_or_the_name_without_its_suffix() -> None:
    assert algorithm_of("digits-lr-0.1", {}) == "digits-lr"
    assert algorithm_of("lr-3", {}) == "lr"
    assert algorithm_of("e2e", {}) == "e2e"
    assert algorithm_of("lr-3", {"algorithm": "mlp"}) == "mlp"


@pytest.mark.parametrize(("field", "spec"), [
    ("model_name", JobSpec(name="x", command="true", model_name="../escape")),
    ("model_name", JobSpec(name="x", command="true", model_name="a/b")),
    ("model_name", JobSpec(name="x", command="true", model_name="ok\n")),
    ("name", JobSpec(name="ok\n", command="true")),
    ("git_commit", JobSpec(name="x", command="true", git_commit="main")),
    ("git_commit", JobSpec(name="x", command="true", git_commit="ABCDEF1")),
])
def test_model_names_and_commits_are_checked_at_submit(field: str, spec: JobSpec) -> None:
    with pytest.raises(InvalidArgument) as info:
        validate_spec(spec)
    assert info.value.field == field
    validate_spec(JobSpec(name="x", command="true", model_name="digits-mlp",
                          git_commit="0123abc"))
