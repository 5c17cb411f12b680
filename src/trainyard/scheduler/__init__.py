"""Admission policy: a pure function from a snapshot to decisions. No I/O, clock injected."""

from trainyard.scheduler.fifo import FifoPolicy
from trainyard.scheduler.model import (
    Decisions,
    PendingJob,
    PendingReason,
    Policy,
    RunningJob,
    Snapshot,
)

__all__ = [
    "Decisions",
    "FifoPolicy",
    "PendingJob",
    "PendingReason",
    "Policy",
    "RunningJob",
    "Snapshot",
]
