"""The batch script of one attempt, as text: sbatch reads it on standard input, so nothing of
it is on a command line. Pure: the same request gives the same script.

The batch step runs on the allocation's first node; it finds the group's addresses, then
`srun` starts every task together (one per worker) and ends them all when one fails. What each
task runs is the runner (the job runtime's argv, up to `--`) followed by the command; with no
runner the task runs the command with /bin/sh -c."""

from __future__ import annotations

import base64
import math
import shlex
from dataclasses import dataclass

from trainyard.domain.pools import SlurmPool

_PYZ_VAR = "TRAINYARD_RUNTIME_PYZ"
_CA_VAR = "TRAINYARD_SERVICE_CA"


@dataclass(frozen=True)
class Shipped:
    """A file the script carries inside it and writes once per node into the pool's cache
    directory: the job runtime's zipapp, the service's CA certificate."""

    name: str  # named by its content (trainyard-runtime-<sha12>.pyz): a new build, a new name
    data: bytes


@dataclass(frozen=True)
class Agent:
    """The job runtime's agent each task runs around the command (`python3 <pyz> run`)."""

    service_address: str  # where the agent reaches the service
    grace_s: float  # how long a TERM'd job has before the agent kills it
    framework: str = ""  # whose worker variables ("": both)
    tls_ca: Shipped | None = None  # the service's CA, when it serves TLS


@dataclass(frozen=True)
class ScriptSpec:
    handle: str
    instance: str  # this service's: the job's comment says whose it is
    command: str
    workers: int
    cpus: float  # each worker's
    memory_mb: int  # each worker's
    gpus: int  # each worker's
    output: str  # where Slurm writes the batch step's output (%N: the node's name)
    runtime: Shipped  # its verbs find the group's addresses; its agent runs each task
    agent: Agent | None = None  # None: each task runs the command alone, with /bin/sh -c
    time_limit_s: float | None = None


def comment_for(instance: str) -> str:
    return f"trainyard:{instance}"


def node_path(path: str) -> str:
    """A pool path with {node} as Slurm's %N (the node's short name) in file names."""
    return path.replace("{node}", "%N")


def options(spec: ScriptSpec, pool: SlurmPool) -> list[str]:
    """The sbatch options, as #SBATCH lines carry them."""
    cpus = max(1, math.ceil(spec.cpus))
    opts = [f"--job-name={spec.handle}", f"--comment={comment_for(spec.instance)}",
            f"--partition={pool.partition}", f"--ntasks={spec.workers}",
            f"--cpus-per-task={cpus}", "--no-requeue", "--export=ALL",
            f"--output={spec.output}", "--open-mode=append"]
    if pool.account:
        opts.append(f"--account={pool.account}")
    if pool.qos:
        opts.append(f"--qos={pool.qos}")
    if spec.memory_mb > 0:
        opts.append(f"--mem-per-cpu={max(1, math.ceil(spec.memory_mb / cpus))}")
    if spec.gpus > 0:
        opts.append(f"--gpus-per-task={spec.gpus}")
    if pool.spread and spec.workers > 1:
        opts.append("--spread-job")
    if spec.time_limit_s is not None:
        opts.append(f"--time={max(1, math.ceil(spec.time_limit_s / 60))}")
    return opts


def node_dir(cache_dir: str) -> list[str]:
    """Shell lines that set _ty_dir to the pool's cache directory on this node."""
    quoted = '"$_ty_node"'.join(shlex.quote(part) for part in cache_dir.split("{node}"))
    return ["_ty_node=${SLURMD_NODENAME:-$(hostname -s)}", f"_ty_dir={quoted}"]


def ship(shipped: Shipped, variable: str) -> list[str]:
    """Shell lines that write the file into $_ty_dir once (atomically, by rename) and export
    `variable` as its path."""
    encoded = base64.b64encode(shipped.data).decode()
    lines = [encoded[i:i + 76] for i in range(0, len(encoded), 76)]
    return [
        f'{variable}="$_ty_dir/{shipped.name}"',
        f"export {variable}",
        f'if [ ! -s "${variable}" ]; then',
        '  mkdir -p "$_ty_dir" || exit 1',
        f'  base64 -d > "${variable}.$$" <<\'TRAINYARD_FILE\' || exit 1',
        *lines,
        "TRAINYARD_FILE",
        f'  mv -f "${variable}.$$" "${variable}" || exit 1',
        "fi",
    ]


def addresses(python: str) -> list[str]:
    """Shell lines that export TRAINYARD_WORKER_HOSTS (one address per rank, from the
    runtime's `slurm-hosts`), TRAINYARD_MASTER_ADDR (rank 0's: this node, the allocation's
    first) and TRAINYARD_MASTER_PORT (free here, with one more per rank for TensorFlow)."""
    runtime = f'{shlex.quote(python)} -I "${_PYZ_VAR}"'
    return [
        f"_ty_hosts=$({runtime} slurm-hosts) || exit 1",
        f"_ty_port=$({runtime} free-port --span $((${{SLURM_NTASKS:-1}} + 1))) || exit 1",
        'TRAINYARD_WORKER_HOSTS="$_ty_hosts"',
        'TRAINYARD_MASTER_ADDR="${_ty_hosts%%,*}"',
        'TRAINYARD_MASTER_PORT="$_ty_port"',
        "export TRAINYARD_WORKER_HOSTS TRAINYARD_MASTER_ADDR TRAINYARD_MASTER_PORT",
    ]


def task_argv(spec: ScriptSpec, pool: SlurmPool) -> str:
    """What srun runs in each task, quoted for the shell: the agent around the command, or
    /bin/sh -c COMMAND."""
    agent = spec.agent
    if agent is None:
        return f"/bin/sh -c {shlex.quote(spec.command)}"
    argv = [shlex.quote(pool.python), "-I", f'"${_PYZ_VAR}"', "run",
            *map(shlex.quote, ["--service", agent.service_address, "--staging", pool.staging,
                               "--cache-dir", pool.cache_dir, "--cache-mb",
                               str(pool.cache_mb), "--grace", f"{agent.grace_s:g}"])]
    if agent.framework:
        argv += ["--framework", shlex.quote(agent.framework)]
    if agent.tls_ca is not None:
        argv += ["--tls-ca", f'"${_CA_VAR}"']
    return " ".join([*argv, "--", shlex.quote(spec.command)])


def batch_script(spec: ScriptSpec, pool: SlurmPool) -> str:
    lines = ["#!/bin/sh", *(f"#SBATCH {opt}" for opt in options(spec, pool))]
    lines += node_dir(pool.cache_dir)
    lines += ship(spec.runtime, _PYZ_VAR)
    if spec.agent is not None and spec.agent.tls_ca is not None:
        lines += ship(spec.agent.tls_ca, _CA_VAR)
    if spec.workers > 1:  # one worker is no group: it needs no addresses
        lines += addresses(pool.python)
    lines.append(f"exec srun --kill-on-bad-exit=1 {task_argv(spec, pool)}")
    return "\n".join([*lines, ""])
