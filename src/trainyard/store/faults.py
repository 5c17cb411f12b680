"""Fault points the crash tests arm: TRAINYARD_FAULT names one, and the process kills itself
there (SIGKILL, as a crash does). Inert unless set."""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Final

FAULT_ENV: Final = "TRAINYARD_FAULT"
# Requeue as earlier versions did, in two transactions: PREEMPTED is committed alone, and
# the crash comes before the move back to WAITING.
REQUEUE_IN_TWO_WRITES: Final = "requeue-in-two-writes"
# Inside the requeue's one transaction, between its two moves.
INSIDE_REQUEUE: Final = "inside-requeue"
# "after-job-write:N": right after this process's Nth committed write of a job (a submit, a
# state move, a stop or a message recorded), so a walk over N crashes at every boundary.
AFTER_JOB_WRITE: Final = "after-job-write"

log = logging.getLogger(__name__)


def armed(point: str) -> bool:
    return os.environ.get(FAULT_ENV) == point


def crash_at(point: str) -> None:
    """Die here if `point` is armed."""
    if armed(point):
        log.warning("fault point %s: killing the process", point)
        os.kill(os.getpid(), signal.SIGKILL)


_writes_lock = threading.Lock()
_writes = 0


def _write_limit() -> int | None:
    name, _, count = os.environ.get(FAULT_ENV, "").partition(":")
    if name != AFTER_JOB_WRITE:
        return None
    try:
        return int(count)
    except ValueError:
        return None


def job_written(job_id: str) -> None:
    """A write of `job_id` was committed: die if it is the armed Nth (AFTER_JOB_WRITE)."""
    global _writes
    limit = _write_limit()
    if limit is None:
        return
    with _writes_lock:
        _writes += 1
        reached = _writes == limit
    if reached:
        log.warning("fault point %s:%d (job %s): killing the process", AFTER_JOB_WRITE,
                    limit, job_id)
        os.kill(os.getpid(), signal.SIGKILL)


def warn_if_armed() -> None:
    """Say so loudly when a server starts with a fault point armed: it will kill itself."""
    point = os.environ.get(FAULT_ENV)
    if point:
        log.warning("%s=%s is set: this process kills itself at that fault point (for crash "
                    "tests only)", FAULT_ENV, point)
