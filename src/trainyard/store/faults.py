"""Fault points the crash tests arm: TRAINYARD_FAULT names one, and the process kills itself
there (SIGKILL, as a crash does). Inert unless set."""

from __future__ import annotations

import logging
import os
import signal
from typing import Final

FAULT_ENV: Final = "TRAINYARD_FAULT"
# Requeue as earlier versions did, in two transactions: PREEMPTED is committed alone, and
# the crash comes before the move back to WAITING.
REQUEUE_IN_TWO_WRITES: Final = "requeue-in-two-writes"
# Inside the requeue's one transaction, between its two moves.
INSIDE_REQUEUE: Final = "inside-requeue"

log = logging.getLogger(__name__)


def armed(point: str) -> bool:
    return os.environ.get(FAULT_ENV) == point


def crash_at(point: str) -> None:
    """Die here if `point` is armed."""
    if armed(point):
        log.warning("fault point %s: killing the process", point)
        os.kill(os.getpid(), signal.SIGKILL)


def warn_if_armed() -> None:
    """Say so loudly when a server starts with a fault point armed: it will kill itself."""
    point = os.environ.get(FAULT_ENV)
    if point:
        log.warning("%s=%s is set: this process kills itself at that fault point (for crash "
                    "tests only)", FAULT_ENV, point)
