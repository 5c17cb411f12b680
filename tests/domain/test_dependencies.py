"""The rules of jobs that wait for jobs: parsing, a submit's list, cycles, and verdicts."""

from __future__ import annotations

import pytest

from trainyard.domain.dependencies import (
    MAX_NEEDS,
    Condition,
    Dependency,
    Need,
    checked,
    cycle_sentence,
    dependency,
    find_cycle,
    judge,
    parse_dependency,
    waiting_sentence,
)
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.states import JobState

S, F = Condition.SUCCEEDED, Condition.FINISHED


@pytest.mark.parametrize(("text", "expected"), [
    ("abc123", Dependency("abc123", S)),
    ("abc123:succeeded", Dependency("abc123", S)),
    ("abc123:finished", Dependency("abc123", F)),
    (" abc123:FINISHED ", Dependency("abc123", F)),
    ("abc123:", Dependency("abc123", S)),
])
def test_a_dependency_is_an_id_and_a_condition_that_defaults_to_succeeded(
        text: str, expected: Dependency) -> None:
    assert parse_dependency(text) == expected


@pytest.mark.parametrize(("text", "says"), [
    ("abc123:done", "'done' is not a condition"),
    (":finished", "names no job"),
    ("", "names no job"),
    ("ab/c", "is not a job id"),
    ("a" * 33, "is not a job id"),
])
def test_a_bad_dependency_is_refused_naming_the_field(text: str, says: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_dependency(text)
    assert caught.value.field == "after" and says in caught.value.problem


def test_repeats_collapse_and_two_conditions_for_one_job_are_refused() -> None:
    a, b = dependency("a1"), dependency("b2", "finished")
    assert checked([a, b, a]) == (a, b)
    with pytest.raises(InvalidArgument, match="a1 is named twice"):
        checked([a, dependency("a1", "finished")])


def test_at_most_so_many_jobs_are_waited_for() -> None:
    many = [dependency(f"j{i}") for i in range(MAX_NEEDS + 1)]
    assert len(checked(many[:MAX_NEEDS])) == MAX_NEEDS
    with pytest.raises(InvalidArgument, match=f"at most {MAX_NEEDS}"):
        checked(many)


def test_a_cycle_is_found_with_its_path() -> None:
    # b waits for c, c for n: n waiting for b closes the circle n -> b -> c -> n.
    edges = {"b": ["c"], "c": ["n"], "d": []}
    assert find_cycle("n", ["b"], edges) == ["n", "b", "c", "n"]
    assert find_cycle("n", ["n"], {}) == ["n", "n"]
    assert find_cycle("n", ["d", "b"], {"b": ["c"], "c": []}) is None
    # A diamond shares a need without a cycle.
    assert find_cycle("n", ["x", "y"], {"x": ["z"], "y": ["z"], "z": []}) is None
    assert "wait for itself" in cycle_sentence(["n", "n"])
    assert "n -> b -> c -> n" in cycle_sentence(["n", "b", "c", "n"])


def need(job: str, condition: Condition, state: JobState, met: bool = False) -> Need:
    return Need(Dependency(job, condition), state, met)


def test_a_job_waits_until_each_need_ends_as_it_asks() -> None:
    running = need("a", S, JobState.RUNNING)
    verdict = judge([running, need("b", F, JobState.FAILED)])
    assert verdict.waiting == (running,) and verdict.newly_met == ("b",)
    assert not verdict.ready and not verdict.cancel
    done = judge([need("a", S, JobState.SUCCEEDED), need("b", F, JobState.FAILED, met=True)])
    assert done.ready and done.newly_met == ("a",)


@pytest.mark.parametrize("state", [JobState.FAILED, JobState.CANCELLED])
def test_a_need_to_succeed_that_ended_otherwise_cancels_the_job(state: JobState) -> None:
    verdict = judge([need("b", F, JobState.RUNNING), need("a", S, state)])
    assert verdict.cancel == f"cancelled: job a it waits for ended {state}"
    assert not verdict.ready


def test_a_job_waiting_to_be_retried_is_not_final() -> None:
    # A FAILED attempt that is retried is WAITING again by the time anyone reads it.
    assert judge([need("a", S, JobState.WAITING)]).waiting
    assert judge([need("a", F, JobState.PREEMPTED)]).waiting


def test_the_waiting_sentence_names_each_job_its_state_and_its_condition() -> None:
    assert waiting_sentence([need("abc123", S, JobState.RUNNING)]) == \
        "waits for job abc123 (RUNNING) to succeed"
    assert waiting_sentence([need("a", S, JobState.RUNNING), need("b", F, JobState.WAITING),
                             need("c", S, JobState.LAUNCHING)]) == \
        "waits for job a (RUNNING) to succeed, job b (WAITING) to finish and job c " \
        "(LAUNCHING) to succeed"
