"""What becomes of an active job, given what its executor saw: a pure table from the job's
state, the observation and the stops asked of it to the next state and message."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.domain.retry import NO_RETRY, RetryState, time_limit_reached
from trainyard.domain.states import JobState
from trainyard.executors.base import Observation, Phase, describe_exit

LOST_MARK = " was lost: "  # in the requeue event's reason of a lost attempt


@dataclass(frozen=True)
class Settlement:
    """The next step of one job. Nothing to write while `target` is None (and `relaunch` is
    false)."""

    target: JobState | None = None
    # The job's message in a final state, what became of its process for a requeue (beside
    # why it was preempted), and the event's reason for RUNNING.
    message: str = ""
    exit_code: int | None = None
    ran: bool = False  # LAUNCHING, yet its process ran: record RUNNING before `target`
    exited: bool = False  # its process exited (not lost): it ends with the exit status
    relaunch: bool = False  # recorded LAUNCHING, never created: start it now (it never ran)
    # The attempt counts against the job's attempts, and the job runs again after a
    # back-off: lost (target PREEMPTED), or failed in a way it retries (target FAILED).
    retry: bool = False


UNCHANGED = Settlement()


def settle(state: JobState, observation: Observation, cancel_requested: bool,
           preempt_requested: bool, *, attempt: int = 1, retry: RetryState = NO_RETRY,
           time_limit_s: float = 0.0) -> Settlement:
    """The next state of a LAUNCHING or RUNNING job that the executor observed. `retry`: the
    job's retry rule and attempts so far; `time_limit_s`: the limit its attempt has run past
    (0: none), so that it was stopped for it."""
    phase = observation.phase
    if phase in (Phase.STARTING, Phase.UNKNOWN):
        return UNCHANGED  # ask again later
    if phase is Phase.RUNNING:
        if state is JobState.LAUNCHING:
            return Settlement(JobState.RUNNING, "process is running")
        return UNCHANGED
    if phase is Phase.NOT_FOUND and state is JobState.LAUNCHING:
        if cancel_requested:  # its code must not run after the cancel
            return Settlement(JobState.CANCELLED, "cancelled by request before it started")
        return Settlement(relaunch=True)
    exited = phase is Phase.EXITED
    code = observation.exit_code
    ran = state is JobState.LAUNCHING and exited
    running = state is JobState.RUNNING or ran
    if exited and code is not None:
        outcome = observation.message or describe_exit(code)
    else:
        outcome = describe_lost(observation.message)
    succeeded = exited and code == 0
    # Lost through no fault of the job: gone while it ran, or cut short by its engine; not
    # when it may still run out of the executor's sight.
    lost = running and not succeeded and (not exited or observation.retry) and \
        not observation.may_still_run
    stopped = cancel_requested or time_limit_s > 0
    if lost and not stopped and not preempt_requested:
        if retry.allows_another():
            message = f"attempt {attempt}{LOST_MARK}{observation.message or 'lost'}"
            return Settlement(JobState.PREEMPTED, message, code, ran=ran, exited=exited,
                              retry=True)
        outcome += f"; {_spent(retry)}"
    if preempt_requested and not stopped and not succeeded and running:
        target, message = JobState.PREEMPTED, outcome
    elif cancel_requested:
        target, message = JobState.CANCELLED, "cancelled by request"
        if exited:
            message += f"; {outcome}"
    elif succeeded:
        target, message = JobState.SUCCEEDED, outcome
    elif time_limit_s > 0 and running:
        target, message = JobState.FAILED, f"{time_limit_reached(time_limit_s)}; {outcome}"
    else:
        target, message = JobState.FAILED, outcome
        if running and not lost and retry.retries_failure(code):
            if retry.allows_another():
                return Settlement(target, message, code, ran=ran, exited=exited, retry=True)
            message += f"; {_spent(retry)}"
    return Settlement(target, message, code, ran=ran, exited=exited)


def _spent(retry: RetryState) -> str:
    """Why a job that would be retried is not: it used every attempt it may."""
    if retry.max_attempts == 1:
        return "the job allows one attempt"
    return f"{retry.counted} attempts lost or failed, the most it allows"


def describe_lost(detail: str) -> str:
    return f"lost: {detail}" if detail else "lost"
