"""What every benchmark here shares: percentiles, JSON-safe numbers, the commit measured,
atomic result files, goal verdicts, and starting and stopping a server process."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

# The one the replay reports with, too.
from trainyard.sim.metrics import percentile as percentile

SERVER_START_TIMEOUT_S = 30.0
SERVER_STOP_TIMEOUT_S = 15.0


def goal_met(kind: str, target: float, value: float | None) -> bool | None:
    """Whether `value` meets the goal ("at_most" or "at_least" `target`); None where it was
    not measured."""
    if value is None or math.isnan(value):
        return None
    return value <= target if kind == "at_most" else value >= target


def num(value: float | None, digits: int = 2) -> float | None:
    """Rounded, and None instead of NaN, which JSON cannot hold."""
    return None if value is None or math.isnan(value) else round(value, digits)


def commit() -> str | None:
    """The checked-out commit, so results from different versions can be told apart."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=5, cwd=Path(__file__).parent, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def write_json(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    tmp.replace(path)


def verdict(passed: bool | None) -> str:
    if passed is None:
        return "[yellow]not measured[/]"
    return "[green]pass[/]" if passed else "[red]miss[/]"


def wait_for_port(proc: subprocess.Popen[bytes], port_file: Path, log_path: Path) -> int:
    """The port a `trainyard server --port-file` process bound, or its log's tail."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if port_file.exists():
            return int(port_file.read_text())
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    tail = log_path.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"the server did not start (exit {proc.poll()}):\n{tail}")


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """TERM, then KILL if it has not ended within the stop timeout."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
