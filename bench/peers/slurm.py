"""Slurm from Debian's slurm-wlm: munged, slurmctld and slurmd on this host, one node with
its real CPUs, all in a temp dir and on loopback, started and stopped by the benchmark.

The configuration is the smallest that runs jobs here, with the scheduler as shipped
(SchedulerParameters and SlurmctldParameters unset). The settings chosen, and why:
- SelectType=select/cons_tres, SelectTypeParameters=CR_Core: one job per core, as
  Trainyard's local pool gives each one-CPU job one CPU. The shipped CR_Core_Memory with no
  DefMemPerCPU hands each job the node's whole memory, so only one job would run at a time.
- ProctrackType=proctrack/linuxproc, TaskPlugin=task/none: no cgroup set-up in a container;
  Trainyard's local executor does not confine jobs either.
- AccountingStorageType=accounting_storage/none, JobAcctGatherType=jobacct_gather/none: no
  slurmdbd; the benchmark reads times from the jobs' own stamps, not from sacct.
- SlurmUser=root: the benchmark runs as root and owns every file in its temp dir."""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from peers import procs

START_TIMEOUT_S = 30.0
SQUEUE_TIMEOUT_S = 30.0


def available() -> str | None:
    """Why Slurm cannot run here, or None."""
    missing = [b for b in ("slurmctld", "slurmd", "sbatch", "squeue", "munged", "mungekey")
               if shutil.which(b) is None]
    return f"not installed: {', '.join(missing)} (apt-get install slurm-wlm munge)" \
        if missing else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_line(hostname: str) -> str:
    """`slurmd -C`'s description of this machine (its real CPUs, sockets, cores, threads
    and memory), named as the benchmark's node."""
    out = procs.run(["slurmd", "-C"]).stdout.decode()
    line = next((ln for ln in out.splitlines() if ln.startswith("NodeName=")), "")
    if not line:
        raise RuntimeError(f"slurmd -C printed no NodeName line: {out[-300:]}")
    fields = re.sub(r"^NodeName=\S+", f"NodeName={hostname}", line)
    return f"{fields} NodeAddr=127.0.0.1 State=UNKNOWN"


def config(root: Path, hostname: str, node: str, ctld_port: int, d_port: int) -> str:
    return "\n".join([
        "ClusterName=trainyardbench",
        f"SlurmctldHost={hostname}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={d_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root / 'munge' / 'munge.sock'}",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'slurmd.log'}",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "MpiDefault=none",
        "ReturnToService=2",
        node,
        f"PartitionName=bench Nodes={hostname} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


class SlurmSystem:
    name = "slurm"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {"SLURM_CONF": str(root / "slurm.conf")}

    def _cli(self, argv: Sequence[str]) -> str:
        done = procs.run(argv, self.env, cwd=self.root, timeout=SQUEUE_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]}: {done.stderr.decode(errors='replace')[-300:]}")
        return done.stdout.decode()

    def submit(self, key: str, command: str) -> str:
        # sbatch --wrap: a #!/bin/sh script around the command; output discarded.
        out = self._cli(["sbatch", "--parsable", "--quiet", "--job-name", key,
                         "--output", "/dev/null", "--wrap", command])
        return out.strip().split(";")[0]

    def unfinished(self, ids: Sequence[str]) -> bool:
        # squeue lists pending, running and completing jobs; finished ones drop out.
        return bool(self._cli(["squeue", "--noheader", "--format", "%i"]).strip())

    def cancel(self, ids: Sequence[str]) -> None:
        with contextlib.suppress(Exception):
            self._cli(["scancel", "--user", "root"])

    def idle(self) -> bool:
        states = self._cli(["sinfo", "--noheader", "--format", "%T"]).split()
        return states == ["idle"]


@contextmanager
def cluster(root: Path) -> Iterator[SlurmSystem]:
    """munged, slurmctld and slurmd as children, in `root`; yield once the node is idle."""
    for sub in ("munge", "state", "spool"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o700)
    key = root / "munge" / "munge.key"
    done = procs.run(["mungekey", "--create", f"--keyfile={key}"])
    if done.returncode != 0:
        raise RuntimeError(f"mungekey: {done.stderr.decode(errors='replace')[-300:]}")
    key.chmod(0o400)
    hostname = socket.gethostname().split(".")[0]
    (root / "slurm.conf").write_text(config(root, hostname, node_line(hostname),
                                            free_port(), free_port()))
    system = SlurmSystem(root)
    munge = root / "munge"
    started: list[subprocess.Popen[bytes]] = []
    try:
        started.append(procs.spawn(
            ["munged", "--foreground", f"--socket={munge / 'munge.sock'}",
             f"--key-file={key}", f"--pid-file={munge / 'munged.pid'}",
             f"--log-file={munge / 'munged.log'}", f"--seed-file={munge / 'seed'}",
             "--force"], root / "munged.out"))
        _wait(lambda: (munge / "munge.sock").exists(), "munged", started[-1])
        # -i: ignore any state left behind; there is none in a fresh dir anyway.
        started.append(procs.spawn(["slurmctld", "-D", "-i"], root / "slurmctld.out",
                                   system.env))
        started.append(procs.spawn(["slurmd", "-D", "-N", hostname], root / "slurmd.out",
                                   system.env))
        _wait(system.idle, "the Slurm node", started[-1])
        yield system
    finally:
        system.cancel([])
        with contextlib.suppress(Exception):
            _wait(lambda: not system.unfinished([]), "scancel", None, timeout=15.0)
        for proc in reversed(started):
            procs.stop(proc)


def _wait(ready: object, what: str, proc: subprocess.Popen[bytes] | None,
          timeout: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if callable(ready) and ready():
                return
        except RuntimeError:
            pass  # not answering yet
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        time.sleep(0.2)
    raise RuntimeError(f"{what} was not ready within {timeout:g} s")


def versions() -> dict[str, str]:
    out = procs.run(["slurmctld", "-V"]).stdout.decode().strip()
    return {"slurm": out}
