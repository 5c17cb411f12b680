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
- SlurmUser=root: the benchmark runs as root and owns every file in its temp dir.
- CommunicationParameters=NoInAddrAny,NoCtldInAddrAny: every daemon on loopback only.
The cluster itself is started by trainyard.testbed.slurm_cluster, which the tests share."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from peers import procs
from trainyard.testbed import slurm_cluster

SQUEUE_TIMEOUT_S = 30.0

free_port = slurm_cluster.free_port


def available() -> str | None:
    """Why Slurm cannot run here, or None."""
    return slurm_cluster.available()


def settings(hostname: str) -> slurm_cluster.Settings:
    """One node named after this host, with its real CPUs and memory."""
    return slurm_cluster.Settings(nodes=(slurm_cluster.Node(hostname),), partition="bench",
                                  cluster_name="trainyardbench")


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
    """munged, slurmctld and slurmd as children (trainyard.testbed.slurm_cluster), in `root`;
    yield once the node is idle. They carry the run's marker, so procs.stop_all() ends
    whatever Slurm forked for the jobs too."""
    hostname = socket.gethostname().split(".")[0]
    with slurm_cluster.cluster(root, settings(hostname), base_env=procs.env()):
        yield SlurmSystem(root)


def versions() -> dict[str, str]:
    out = procs.run(["slurmctld", "-V"]).stdout.decode().strip()
    return {"slurm": out}
