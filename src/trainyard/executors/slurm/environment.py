"""The environment sbatch runs in, built explicitly, which `--export=ALL` carries to every
task: the Slurm commands' own variables, the job's contract, and its credential. The token
travels only here, never on a command line or in the script."""

from __future__ import annotations

import os
from collections.abc import Mapping

from trainyard.domain.pools import SlurmPool
from trainyard.executors.base import TOKEN_ENV, LaunchRequest

# What the Slurm commands need of the service's own environment.
PASSED = ("PATH", "LANG", "LC_ALL", "SLURM_CONF", "MUNGE_SOCKET")


def command_env(extra: Mapping[str, str]) -> dict[str, str]:
    """For the Slurm commands: the service's PATH and locale, and the cluster's variables."""
    env = {name: os.environ[name] for name in PASSED if name in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(extra)
    return env


def job_env(request: LaunchRequest, pool: SlurmPool, base: Mapping[str, str]) -> dict[str, str]:
    """sbatch's environment for one attempt. With shared staging the job's files are the
    host's paths (every node mounts them); with pull staging the runtime sets them on the
    node."""
    env = dict(base)
    env.update(request.remote_contract(shared=pool.staging == "shared"))
    if request.job_token:
        env[TOKEN_ENV] = request.job_token
    return env
