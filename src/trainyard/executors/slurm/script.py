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
from collections.abc import Sequence
from dataclasses import dataclass

from trainyard.domain.pools import SlurmPool

# In a runner's argv, the path of the shipped runtime once unpacked on the node.
PYZ = "{pyz}"
_PYZ_VAR = "TRAINYARD_RUNTIME_PYZ"


@dataclass(frozen=True)
class ShippedRuntime:
    """The job runtime as a zipapp, carried inside the script and unpacked once per node
    into the pool's cache directory."""

    name: str  # trainyard-runtime-<sha12>.pyz: a new build gets a new name
    data: bytes


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
    runner: tuple[str, ...] = ()
    runtime: ShippedRuntime | None = None
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


def unpack_runtime(runtime: ShippedRuntime, cache_dir: str) -> list[str]:
    """Shell lines that write the zipapp into the node's cache once (atomically, by rename)
    and set TRAINYARD_RUNTIME_PYZ to it. `cache_dir` may hold {node}."""
    encoded = base64.b64encode(runtime.data).decode()
    lines = [encoded[i:i + 76] for i in range(0, len(encoded), 76)]
    node_dir = '"$_ty_node"'.join(shlex.quote(part) for part in cache_dir.split("{node}"))
    return [
        "_ty_node=${SLURMD_NODENAME:-$(hostname -s)}",
        f"_ty_dir={node_dir}",
        f'{_PYZ_VAR}="$_ty_dir/{runtime.name}"',
        f"export {_PYZ_VAR}",
        f'if [ ! -s "${_PYZ_VAR}" ]; then',
        '  mkdir -p "$_ty_dir" || exit 1',
        '  base64 -d > "$' + _PYZ_VAR + '.$$" <<\'TRAINYARD_PYZ\' || exit 1',
        *lines,
        "TRAINYARD_PYZ",
        f'  mv -f "${_PYZ_VAR}.$$" "${_PYZ_VAR}" || exit 1',
        "fi",
    ]


def addresses(python: str) -> list[str]:
    """Shell lines that export TRAINYARD_MASTER_ADDR (this node's, the first of the
    allocation), TRAINYARD_MASTER_PORT (a free one here) and TRAINYARD_WORKER_HOSTS (one
    address per rank, in srun's block order)."""
    program = "; ".join([
        "import os, re, shlex, socket, subprocess as sp",
        "run = lambda *a: sp.run(a, capture_output=True, text=True, check=True).stdout",
        "names = run('scontrol', 'show', 'hostnames', os.environ['SLURM_JOB_NODELIST']).split()",
        "addr = lambda n: (re.findall(r'NodeAddr=(\\S+)', run('scontrol', 'show', 'node', "
        "'-o', n)) or [n])[0]",
        "per = [c for c, r in re.findall(r'(\\d+)(?:\\(x(\\d+)\\))?', "
        "os.environ.get('SLURM_TASKS_PER_NODE', '1')) for _ in range(int(r or 1))]",
        "addrs = {n: addr(n) for n in names}",
        "hosts = [addrs[n] for n, c in zip(names, per) for _ in range(int(c))]",
        "s = socket.socket(); s.bind(('', 0)); port = s.getsockname()[1]; s.close()",
        "me = addrs.get(os.environ.get('SLURMD_NODENAME', ''), hosts[0] if hosts else "
        "'127.0.0.1')",
        "print('TRAINYARD_MASTER_ADDR=' + shlex.quote(me))",
        "print('TRAINYARD_MASTER_PORT=%d' % port)",
        "print('TRAINYARD_WORKER_HOSTS=' + shlex.quote(','.join(hosts)))",
    ])
    return [f"_ty_addr=$({shlex.quote(python)} -I -c {shlex.quote(program)}) || exit 1",
            'eval "$_ty_addr"',
            "export TRAINYARD_MASTER_ADDR TRAINYARD_MASTER_PORT TRAINYARD_WORKER_HOSTS"]


def task_argv(runner: Sequence[str], command: str) -> str:
    """What srun runs in each task, quoted for the shell: the runner then `-- COMMAND`, or
    /bin/sh -c COMMAND."""
    if not runner:
        return f"/bin/sh -c {shlex.quote(command)}"
    words = [f'"${_PYZ_VAR}"' if word == PYZ else shlex.quote(word) for word in runner]
    return " ".join([*words, "--", shlex.quote(command)])


def batch_script(spec: ScriptSpec, pool: SlurmPool) -> str:
    lines = ["#!/bin/sh", *(f"#SBATCH {opt}" for opt in options(spec, pool))]
    if spec.runtime is not None:
        lines += unpack_runtime(spec.runtime, pool.cache_dir)
    lines += addresses(pool.python)
    lines.append(f"exec srun --kill-on-bad-exit=1 {task_argv(spec.runner, spec.command)}")
    return "\n".join([*lines, ""])


def runtime_runner(pool: SlurmPool, service_address: str, *, grace_s: float,
                   framework: str = "", tls_ca: str = "") -> tuple[str, ...]:
    """The job runtime's agent as each task's runner (`python3 <pyz> run ... --`'s part
    before `--`), for a script that ships the runtime."""
    argv = [pool.python, PYZ, "run", "--service", service_address, "--staging", pool.staging,
            "--cache-dir", pool.cache_dir, "--cache-mb", str(pool.cache_mb),
            "--grace", f"{grace_s:g}"]
    if framework:
        argv += ["--framework", framework]
    if tls_ca:
        argv += ["--tls-ca", tls_ca]
    return tuple(argv)
