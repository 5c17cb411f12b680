"""The Slurm commands on the service's host (sbatch, scontrol, scancel, sinfo, sacct), run
with the cluster's environment and a timeout; a failure becomes one sentence, and a
controller that does not answer is told apart from a refusal."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Mapping, Sequence

CALL_TIMEOUT_S = 30.0
# What the Slurm commands print when slurmctld does not answer (22.05 and later).
# Failures before anything reached the controller: a command that failed so created nothing.
_NEVER_REACHED = ("connect failure", "connection refused")
_AWAY = ("unable to contact slurm controller", "socket timed out", "connection refused",
         "communication connection failure", "slurm_load_jobs error: unable to contact",
         "zero bytes were transmitted or received")


class SlurmError(Exception):
    """A Slurm command failed; the message is one sentence."""


class ControllerAway(SlurmError):
    """slurmctld did not answer."""


class SlurmCommands:
    """Runs the Slurm commands. `calls` counts every one, for the benchmark's controller
    calls per job."""

    def __init__(self, env: Mapping[str, str], timeout: float = CALL_TIMEOUT_S) -> None:
        self.env = dict(env)  # PATH and SLURM_CONF at least
        self.timeout = timeout
        self._lock = threading.Lock()
        self.calls = 0

    def run(self, argv: Sequence[str], *, stdin: str | None = None,
            env: Mapping[str, str] | None = None) -> str:
        """The command's standard output; SlurmError (ControllerAway) when it fails."""
        with self._lock:
            self.calls += 1
        try:
            done = subprocess.run(list(argv), input=(stdin or "").encode(), capture_output=True,
                                  env=dict(self.env if env is None else env),
                                  timeout=self.timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ControllerAway(f"{argv[0]} did not finish within {self.timeout:g} s") from exc
        except OSError as exc:
            raise SlurmError(f"cannot run {argv[0]}: {exc}") from exc
        if done.returncode != 0:
            # scontrol says some refusals ("Partition x not found") on standard output.
            said = done.stderr or done.stdout
            err = " ".join(said.decode(errors="replace").split())[-400:]
            text = err or f"exit code {done.returncode}"
            cls = ControllerAway if any(a in text.lower() for a in _AWAY) else SlurmError
            raise cls(f"{argv[0]} failed: {text}")
        return done.stdout.decode(errors="replace")


def never_reached(exc: ControllerAway) -> bool:
    """Whether the command failed before the controller got its request (it could not
    connect), rather than after (it timed out waiting for the answer)."""
    text = str(exc).lower()
    return any(mark in text for mark in _NEVER_REACHED)
