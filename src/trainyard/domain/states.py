"""The job state machine: one enum and one table of allowed edges."""

from __future__ import annotations

from enum import StrEnum

from trainyard.domain.errors import FailedPrecondition


class JobState(StrEnum):
    WAITING = "WAITING"
    LAUNCHING = "LAUNCHING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    PREEMPTED = "PREEMPTED"

    def is_final(self) -> bool:
        return self in FINAL_STATES

    def is_active(self) -> bool:
        """Holds (or is about to hold) an executor resource."""
        return self in ACTIVE_STATES


FINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})
# The states of a job that holds, or is about to hold, an executor resource, in the order a
# job passes them.
ACTIVE_STATES: tuple[JobState, ...] = (JobState.LAUNCHING, JobState.RUNNING)

# The single source of truth for which transitions exist (docs/architecture.md, "Job states").
ALLOWED_TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.WAITING: frozenset({JobState.LAUNCHING, JobState.CANCELLED}),
    # LAUNCHING -> CANCELLED: cancelled before its process existed.
    JobState.LAUNCHING: frozenset({JobState.RUNNING, JobState.FAILED, JobState.CANCELLED}),
    JobState.RUNNING: frozenset(
        {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.PREEMPTED}
    ),
    JobState.FAILED: frozenset({JobState.WAITING}),  # only through a retry policy
    JobState.PREEMPTED: frozenset({JobState.WAITING, JobState.CANCELLED}),
    JobState.SUCCEEDED: frozenset(),
    JobState.CANCELLED: frozenset(),
}


class InvalidTransition(FailedPrecondition):
    def __init__(self, current: JobState, target: JobState) -> None:
        super().__init__(f"a {current} job cannot become {target}")
        self.current = current
        self.target = target


def check_transition(current: JobState, target: JobState) -> None:
    """Raise InvalidTransition unless current -> target is an edge of the machine."""
    if target not in ALLOWED_TRANSITIONS[current]:
        raise InvalidTransition(current, target)
