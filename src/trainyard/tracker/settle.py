"""What becomes of an active job, given what its executor saw: a pure table from the job's
state, the observation and the stops asked of it to the next state and message."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.domain.states import JobState
from trainyard.executors.base import Observation, Phase, describe_exit

MAX_LOST_ATTEMPTS = 3  # attempts lost through no fault of the job before it fails
LOST_MARK = " was lost: "  # in the requeue event's reason, so lost attempts can be counted


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
    lost: bool = False  # PREEMPTED because the attempt was lost (its node failed): requeue


UNCHANGED = Settlement()


def settle(state: JobState, observation: Observation, cancel_requested: bool,
           preempt_requested: bool, *, attempt: int = 1, lost_before: int = 0) -> Settlement:
    """The next state of a LAUNCHING or RUNNING job that the executor observed.
    `lost_before`: how many of its earlier attempts were lost (Observation.retry)."""
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
    if observation.retry and phase in (Phase.LOST, Phase.NOT_FOUND) and running and \
            not cancel_requested:
        if lost_before + 1 < MAX_LOST_ATTEMPTS:  # not the job's fault: it runs again
            message = f"attempt {attempt}{LOST_MARK}{observation.message or 'lost'}; requeued"
            return Settlement(JobState.PREEMPTED, message, lost=True)
        outcome += f"; {MAX_LOST_ATTEMPTS} attempts were lost, the most a job may lose"
    if preempt_requested and not cancel_requested and not succeeded and running:
        target, message = JobState.PREEMPTED, outcome
    elif cancel_requested:
        target, message = JobState.CANCELLED, "cancelled by request"
        if exited:
            message += f"; {outcome}"
    elif succeeded:
        target, message = JobState.SUCCEEDED, outcome
    else:
        target, message = JobState.FAILED, outcome
    return Settlement(target, message, code, ran=ran, exited=exited)


def describe_lost(detail: str) -> str:
    return f"lost: {detail}" if detail else "lost"
