"""What the store tells an observer as it happens: each write's commit time and each job's
move between states, after its transaction committed. The default observer does nothing;
the server's metrics (web/metrics.py) are one that counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from trainyard.domain.states import JobState


@dataclass(frozen=True)
class JobMove:
    """One committed edge of a job's state machine, with the times metrics are made of."""

    queue: str
    source: JobState
    target: JobState
    at: float  # when it moved
    submitted_at: float
    # When it entered `source`: its last move before this one (or its submit).
    entered_at: float
    # Of a retried attempt: the state it ended in, passed through in the same transaction
    # (a FAILED that is not final), and its move back to WAITING.
    passing: bool = False
    retry: bool = False


class StoreTelemetry(Protocol):
    def committed(self, seconds: float) -> None:
        """A write transaction (one commit, or a group commit's batch) took this long."""

    def job_moved(self, move: JobMove) -> None:
        """A job changed state; called after the commit, on the writer's thread."""


class NoStoreTelemetry:
    def committed(self, seconds: float) -> None:
        pass

    def job_moved(self, move: JobMove) -> None:
        pass


NO_STORE_TELEMETRY: StoreTelemetry = NoStoreTelemetry()
