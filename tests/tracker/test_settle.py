"""settle(): what an executor's observation makes of an active job, one row per case."""

import itertools
from dataclasses import replace

import pytest

from trainyard.domain.retry import RetryState
from trainyard.domain.states import ACTIVE_STATES, JobState, check_transition
from trainyard.executors.base import Observation, Phase
from trainyard.tracker.settle import UNCHANGED, Settlement, settle

L, R = JobState.LAUNCHING, JobState.RUNNING
SUCCEEDED, FAILED, CANCELLED, PREEMPTED = (JobState.SUCCEEDED, JobState.FAILED,
                                           JobState.CANCELLED, JobState.PREEMPTED)
TERM = "killed by SIGTERM, exit code 143"


def exited(code: int, message: str = "") -> Observation:
    return Observation(Phase.EXITED, exit_code=code, message=message)


STARTING, UNKNOWN, RUNNING = (Observation(Phase.STARTING), Observation(Phase.UNKNOWN),
                              Observation(Phase.RUNNING))
NOT_FOUND, LOST = Observation(Phase.NOT_FOUND), Observation(Phase.LOST)

# state, observation, cancel requested, preempt requested -> settlement
CASES = {
    "starting: ask later": (L, STARTING, False, False, UNCHANGED),
    "engine away: ask later": (R, UNKNOWN, False, False, UNCHANGED),
    "engine away, stop asked: ask later": (R, UNKNOWN, True, True, UNCHANGED),
    "seen running: it runs": (L, RUNNING, False, False, Settlement(R, "process is running")),
    "still running": (R, RUNNING, False, False, UNCHANGED),
    "still running after a cancel": (R, RUNNING, True, False, UNCHANGED),
    "still running after a preemption": (R, RUNNING, False, True, UNCHANGED),
    "never created: start it": (L, NOT_FOUND, False, False, Settlement(relaunch=True)),
    "never created, cancel asked: it never starts":
        (L, NOT_FOUND, True, False,
         Settlement(CANCELLED, "cancelled by request before it started")),
    "gone while running, no attempt left": (R, NOT_FOUND, False, False, Settlement(
        FAILED, "lost; the job allows one attempt")),
    "lost, with why": (R, Observation(Phase.LOST, message="container removed"), False, False,
                       Settlement(FAILED, "lost: container removed; the job allows one "
                                          "attempt")),
    "lost before it ran": (L, LOST, False, False, Settlement(FAILED, "lost")),
    "lost before it ran, cancel asked": (L, LOST, True, False,
                                         Settlement(CANCELLED, "cancelled by request")),
    "lost before it ran, preemption asked": (L, LOST, False, True, Settlement(FAILED, "lost")),
    "exit 0": (R, exited(0), False, False,
               Settlement(SUCCEEDED, "exited with code 0", 0, exited=True)),
    "exit 3": (R, exited(3), False, False,
               Settlement(FAILED, "exited with code 3", 3, exited=True)),
    "killed": (R, exited(137), False, False,
               Settlement(FAILED, "killed by SIGKILL (possibly out of memory), exit code 137",
                          137, exited=True)),
    "exit with the executor's sentence": (R, exited(1, "out of memory"), False, False,
                                          Settlement(FAILED, "out of memory", 1, exited=True)),
    "ran and succeeded unseen": (L, exited(0), False, False,
                                 Settlement(SUCCEEDED, "exited with code 0", 0, ran=True,
                                            exited=True)),
    "ran and failed unseen": (L, exited(2), False, False,
                              Settlement(FAILED, "exited with code 2", 2, ran=True,
                                         exited=True)),
    "cancelled": (R, exited(143), True, False,
                  Settlement(CANCELLED, f"cancelled by request; {TERM}", 143, exited=True)),
    "cancelled, lost": (R, LOST, True, False,
                        Settlement(CANCELLED, "cancelled by request")),
    "preempted": (R, exited(143), False, True, Settlement(PREEMPTED, TERM, 143, exited=True)),
    "preempted, lost": (R, LOST, False, True, Settlement(PREEMPTED, "lost")),
    "preempted, ran unseen": (L, exited(143), False, True,
                              Settlement(PREEMPTED, TERM, 143, ran=True, exited=True)),
    "preempted, but it succeeded first": (R, exited(0), False, True,
                                          Settlement(SUCCEEDED, "exited with code 0", 0,
                                                     exited=True)),
    "cancel and preemption: the cancel wins": (R, exited(143), True, True,
                                               Settlement(CANCELLED,
                                                          f"cancelled by request; {TERM}", 143,
                                                          exited=True)),
}


@pytest.mark.parametrize(("state", "observation", "cancel", "preempt", "expected"),
                         list(CASES.values()), ids=list(CASES))
def test_settle(state: JobState, observation: Observation, cancel: bool, preempt: bool,
                expected: Settlement) -> None:
    assert settle(state, observation, cancel, preempt) == expected


def test_every_settlement_is_an_edge_of_the_machine() -> None:
    observations = [Observation(phase) for phase in Phase] + [exited(0), exited(1)]
    for state, obs, cancel, preempt in itertools.product(ACTIVE_STATES, observations,
                                                         (False, True), (False, True)):
        outcome = settle(state, obs, cancel, preempt)
        if outcome.target is None:
            continue
        if outcome.ran:
            check_transition(state, JobState.RUNNING)
        check_transition(JobState.RUNNING if outcome.ran else state, outcome.target)


NODE_FAILED = Observation(Phase.LOST, message="node n2 failed", retry=True)
CUT_SHORT = Observation(Phase.EXITED, exit_code=137, retry=True,
                        message="killed; the Docker engine stopped or restarted while it ran")
THREE = RetryState(max_attempts=3)

# state, observation, retry state, cancel requested -> settlement, for attempt 2
LOST_CASES = {
    "first loss: retried": (R, NODE_FAILED, THREE, False, Settlement(
        PREEMPTED, "attempt 2 was lost: node n2 failed", retry=True)),
    "second loss: retried": (R, NODE_FAILED, replace(THREE, retried=1), False, Settlement(
        PREEMPTED, "attempt 2 was lost: node n2 failed", retry=True)),
    "third loss: failed": (R, NODE_FAILED, replace(THREE, retried=2), False, Settlement(
        FAILED, "lost: node n2 failed; 3 attempts lost or failed, the most it allows")),
    "a vanished container is lost too": (R, NOT_FOUND, THREE, False, Settlement(
        PREEMPTED, "attempt 2 was lost: lost", retry=True)),
    "cut short by its engine: lost": (R, CUT_SHORT, THREE, False, Settlement(
        PREEMPTED, "attempt 2 was lost: killed; the Docker engine stopped or restarted while "
                   "it ran", 137, exited=True, retry=True)),
    "it may still run out of sight: failed, not retried": (
        R, Observation(Phase.LOST, message="engine unreachable", may_still_run=True), THREE,
        False, Settlement(FAILED, "lost: engine unreachable")),
    "lost after a cancel: cancelled": (R, NODE_FAILED, THREE, True, Settlement(
        CANCELLED, "cancelled by request")),
    "lost before it ran: failed as before": (L, NODE_FAILED, THREE, False, Settlement(
        FAILED, "lost: node n2 failed")),
}


@pytest.mark.parametrize("case", LOST_CASES.values(), ids=LOST_CASES.keys())
def test_a_lost_attempt_is_retried_while_attempts_remain(
        case: tuple[JobState, Observation, RetryState, bool, Settlement]) -> None:
    state, observation, retry, cancel, expected = case
    assert settle(state, observation, cancel, False, attempt=2, retry=retry) == expected


ON_FAILURE = RetryState(max_attempts=3, on_failure=True)
# observation, retry state -> settlement, for a failed attempt
FAILURE_CASES = {
    "failure not retried by default": (exited(3), THREE, Settlement(
        FAILED, "exited with code 3", 3, exited=True)),
    "retry on failure": (exited(3), ON_FAILURE, Settlement(
        FAILED, "exited with code 3", 3, exited=True, retry=True)),
    "a listed exit code": (exited(75), RetryState(3, exit_codes=(75,)), Settlement(
        FAILED, "exited with code 75", 75, exited=True, retry=True)),
    "an unlisted exit code": (exited(3), RetryState(3, exit_codes=(75,)), Settlement(
        FAILED, "exited with code 3", 3, exited=True)),
    "the last attempt": (exited(3), replace(ON_FAILURE, retried=2), Settlement(
        FAILED, "exited with code 3; 3 attempts lost or failed, the most it allows", 3,
        exited=True)),
    "success is never retried": (exited(0), ON_FAILURE, Settlement(
        SUCCEEDED, "exited with code 0", 0, exited=True)),
}


@pytest.mark.parametrize("case", FAILURE_CASES.values(), ids=FAILURE_CASES.keys())
def test_a_failed_attempt_is_retried_only_when_the_job_asks(
        case: tuple[Observation, RetryState, Settlement]) -> None:
    observation, retry, expected = case
    assert settle(R, observation, False, False, retry=retry) == expected


# observation, cancel, preempt -> settlement, for an attempt past its 2 h limit
TIME_LIMIT_CASES = {
    "stopped at its limit: failed, not retried": (exited(143), False, False, Settlement(
        FAILED, f"time limit of 2 h reached; {TERM}", 143, exited=True)),
    "lost while stopped at its limit": (NODE_FAILED, False, False, Settlement(
        FAILED, "time limit of 2 h reached; lost: node n2 failed")),
    "succeeded just at its limit": (exited(0), False, False, Settlement(
        SUCCEEDED, "exited with code 0", 0, exited=True)),
    "a cancel wins": (exited(143), True, False, Settlement(
        CANCELLED, f"cancelled by request; {TERM}", 143, exited=True)),
    "the limit wins over a preemption": (exited(143), False, True, Settlement(
        FAILED, f"time limit of 2 h reached; {TERM}", 143, exited=True)),
}


@pytest.mark.parametrize("case", TIME_LIMIT_CASES.values(), ids=TIME_LIMIT_CASES.keys())
def test_an_attempt_past_its_time_limit_fails(case: tuple[Observation, bool, bool, Settlement]
                                              ) -> None:
    observation, cancel, preempt, expected = case
    assert settle(R, observation, cancel, preempt, retry=ON_FAILURE,
                  time_limit_s=7200) == expected
