"""What the tracker tells an observer as it works: each pass's time, each admission pass's
time and backlog, each launch and whether it failed, each preemption asked and why. The
default observer does nothing; the server's metrics (web/metrics.py) are one that counts."""

from __future__ import annotations

from typing import Protocol

from trainyard.scheduler.preemption import PreemptionCause, cause_of

# Why a running job is stopped: borrowed quota going back to its owner, or a job of its
# group that has run less taking its place; read from the scheduler's sentence by the
# scheduler's own rule.
preemption_cause = cause_of


class TrackerTelemetry(Protocol):
    def tracker_pass(self, seconds: float) -> None:
        """A pass that followed the active jobs, settled the jobs waiting for them and
        admitted took this long."""

    def admission_pass(self, seconds: float, backlog: int) -> None:
        """An admission pass took this long, with this many jobs waiting at its start."""

    def launch(self, executor: str, failed: bool) -> None:
        """An executor was asked to create a job's process; `failed`: it could not."""

    def preemption(self, cause: PreemptionCause) -> None:
        """A running job was asked to stop for another."""


class NoTelemetry:
    def tracker_pass(self, seconds: float) -> None:
        pass

    def admission_pass(self, seconds: float, backlog: int) -> None:
        pass

    def launch(self, executor: str, failed: bool) -> None:
        pass

    def preemption(self, cause: PreemptionCause) -> None:
        pass


NO_TELEMETRY: TrackerTelemetry = NoTelemetry()
