"""A preemption's notice file: its existence says the job is about to be preempted
(preemption_requested()); it says the signal sent with it and the grace until the stop.
Written whole by a rename, by the tracker on the service's host and by a remote job's
agent on its node; read by the service to tell a remote job's agent. Standard library."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GivenNotice:
    signal: str  # "SIGUSR1", "TERM" or "none" (the file only)
    grace_s: float  # from the notice to the stop


def write_notice(path: Path, notice: GivenNotice) -> None:
    """Raises OSError when it cannot be written."""
    partial = path.with_name(f"{path.name}.partial")
    partial.write_text(json.dumps({"signal": notice.signal,
                                   "grace_seconds": notice.grace_s}) + "\n")
    os.replace(partial, path)


def read_notice(path: Path) -> GivenNotice | None:
    """The notice written at `path`; None when there is none, or it says no signal and
    grace (written by something else)."""
    try:
        given = json.loads(path.read_text())
        return GivenNotice(str(given["signal"]), float(given["grace_seconds"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None
