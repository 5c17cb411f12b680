import pytest

from trainyard.domain.states import (
    ALLOWED_TRANSITIONS,
    FINAL_STATES,
    InvalidTransition,
    JobState,
    check_transition,
)

# In a fixed order, so that every test process collects the same ids.
EDGES = [(a, b) for a, targets in ALLOWED_TRANSITIONS.items()
         for b in sorted(targets, key=lambda state: state.value)]
NON_EDGES = [(a, b) for a in JobState for b in JobState if (a, b) not in EDGES]


def test_the_table_covers_every_state() -> None:
    assert set(ALLOWED_TRANSITIONS) == set(JobState)


@pytest.mark.parametrize(("current", "target"), EDGES)
def test_allowed_edges_pass(current: JobState, target: JobState) -> None:
    check_transition(current, target)


@pytest.mark.parametrize(("current", "target"), NON_EDGES)
def test_other_edges_are_refused(current: JobState, target: JobState) -> None:
    with pytest.raises(InvalidTransition):
        check_transition(current, target)


def test_the_path_of_a_successful_job() -> None:
    path = [JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING, JobState.SUCCEEDED]
    for a, b in zip(path, path[1:], strict=False):
        check_transition(a, b)


def test_final_states_only_leave_through_retry() -> None:
    assert {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED} == FINAL_STATES
    assert ALLOWED_TRANSITIONS[JobState.SUCCEEDED] == frozenset()
    assert ALLOWED_TRANSITIONS[JobState.CANCELLED] == frozenset()
    assert ALLOWED_TRANSITIONS[JobState.FAILED] == {JobState.WAITING}
    assert not JobState.RUNNING.is_final() and JobState.FAILED.is_final()


def test_waiting_cannot_jump_to_running() -> None:
    with pytest.raises(InvalidTransition, match="WAITING job cannot become RUNNING"):
        check_transition(JobState.WAITING, JobState.RUNNING)
