"""Every process the benchmark starts, and how they all end.

Each child starts in its own session (so its process group can be signalled whole) with a
marker in its environment: BENCH_PEERS_RUN=<this run's token>. Daemons that detach or fork
their own helpers (slurmstepd, Ray's raylet and workers, a job's processes) inherit it, so
at the end every process carrying this run's marker is found in /proc and stopped, by pid,
whatever its parent did. Nothing else on the machine is touched."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import IO

from trainyard.testbed.slurm_cluster import marked_pids as testbed_marked_pids
from trainyard.testbed.slurm_cluster import stop_group

MARKER_ENV = "BENCH_PEERS_RUN"
STOP_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 60.0  # one CLI call (sbatch, ray start, docker info)

TOKEN = secrets.token_hex(6)
_children: list[subprocess.Popen[bytes]] = []


def env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the run's marker (and `extra`)."""
    out = dict(os.environ)
    out[MARKER_ENV] = TOKEN
    out.update(extra or {})
    return out


def spawn(argv: Sequence[str], log: Path, extra_env: Mapping[str, str] | None = None,
          cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """A long-running child in its own session, output to `log`; stopped by stop_all()."""
    with log.open("ab") as out:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env(extra_env), cwd=cwd,
                                start_new_session=True)
    _children.append(proc)
    return proc


def run(argv: Sequence[str], extra_env: Mapping[str, str] | None = None,
        cwd: Path | None = None, timeout: float = CALL_TIMEOUT_S,
        stdout: int | IO[bytes] = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    """A short command (a CLI call) with the marker; raises on timeout, not on exit code."""
    return subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=stdout,
                          stderr=subprocess.PIPE, env=env(extra_env), cwd=cwd,
                          timeout=timeout, check=False)


# Signal a child's group, then KILL it if it outlives the timeout: the testbed's.
stop = stop_group


def marked_pids(token: str = TOKEN) -> list[int]:
    """Live processes whose environment carries this run's marker (not this process)."""
    return testbed_marked_pids(MARKER_ENV, token)


def stop_all() -> int:
    """Stop every child and every process carrying the marker; how many were left over."""
    for proc in reversed(_children):
        with contextlib.suppress(Exception):
            stop(proc)
    _children.clear()
    leftovers = marked_pids()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in marked_pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + STOP_TIMEOUT_S / 2
        while marked_pids() and time.monotonic() < deadline:
            time.sleep(0.1)
    return len(leftovers)


def _exit_on(signum: int, _frame: FrameType | None) -> None:
    # An exception, so every finally between here and main runs its clean-up.
    raise SystemExit(128 + signum)


@contextmanager
def cleanup() -> Iterator[None]:
    """Turn TERM and HUP into exits (Ctrl-C already is one), and on the way out, however it
    came, stop everything this run started."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on)
    try:
        yield
    finally:
        # A second Ctrl-C during the clean-up must not cut it short.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            left = stop_all()
            if left:
                print(f"stopped {left} leftover process(es) of this run", file=sys.stderr)
        finally:
            signal.signal(signal.SIGINT, previous)
