"""The executor protocol: launch, poll, cancel, adopt. Executors know nothing of queues."""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class LaunchRequest:
    job_id: str
    attempt: int
    handle: str
    command: str
    env: dict[str, str]
    workdir: Path
    log_path: Path


class Phase(StrEnum):
    NOT_FOUND = "NOT_FOUND"  # the executor has nothing under this handle: never launched
    STARTING = "STARTING"  # launched, not yet confirmed alive
    RUNNING = "RUNNING"
    EXITED = "EXITED"
    LOST = "LOST"  # gone without a recorded outcome


@dataclass(frozen=True)
class Observation:
    phase: Phase
    exit_code: int | None = None
    message: str = ""


class LaunchError(Exception):
    """The executor could not start the job; the message is shown to the user."""


class Executor(Protocol):
    name: str

    def handle_for(self, job_id: str, attempt: int) -> str:
        """A deterministic name, so a restarted service can find what it launched."""
        ...

    def launch(self, request: LaunchRequest) -> None:
        """Start the job. Raises LaunchError when it cannot."""
        ...

    def poll(self, handle: str) -> Observation:
        """What became of a launched job. Never raises for a job that is gone."""
        ...

    def adopt(self, handle: str) -> Observation:
        """After a restart: like poll, and resume watching a job that still runs."""
        ...

    def cancel(self, handle: str, grace_seconds: float) -> bool:
        """Ask the job to stop, then force it after the grace period. Idempotent.

        True once the job was asked to stop or has already ended; False while it cannot be
        signalled yet (still starting): call again later."""
        ...

    def release(self, handle: str) -> None:
        """The job is final: free what it still holds (leftover processes). Idempotent."""
        ...

    def set_exit_listener(self, listener: Callable[[str], None]) -> None:
        """Called with the handle whenever a job's process ends."""
        ...


def describe_exit(code: int) -> str:
    """A sentence for an exit status as a POSIX shell reports it (128+N for signal N)."""
    if code == 0:
        return "exited with code 0"
    if code > 128:
        signum = code - 128
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        hint = " (possibly out of memory)" if signum == signal.SIGKILL else ""
        return f"killed by {name}{hint}, exit code {code}"
    return f"exited with code {code}"
