"""What a batch script needs to tell its tasks where their peers are: each rank's node
address in a Slurm allocation, and a free port for the rendezvous."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Mapping, Sequence

SCONTROL_TIMEOUT = 30.0
_TASKS = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")
_NODE_ADDR = re.compile(r"(?:^|\s)NodeAddr=(\S+)")


class SlurmError(Exception):
    """The allocation could not be read; the message says what was missing."""


def expand_tasks_per_node(value: str) -> list[int]:
    """SLURM_TASKS_PER_NODE ("2(x2),1") as one count per node: [2, 2, 1]."""
    counts: list[int] = []
    for part in value.split(","):
        match = _TASKS.match(part.strip())
        if not match:
            raise SlurmError(f"cannot read SLURM_TASKS_PER_NODE={value!r}")
        counts += [int(match[1])] * int(match[2] or 1)
    return counts


def node_addr(scontrol_line: str) -> str:
    """The NodeAddr= of one line of `scontrol show node -o`."""
    match = _NODE_ADDR.search(scontrol_line)
    if not match:
        raise SlurmError(f"scontrol names no NodeAddr in: {scontrol_line.strip()[:200]}")
    return match[1]


def hosts_per_rank(nodes: Sequence[str], tasks_per_node: Sequence[int],
                   addresses: Mapping[str, str]) -> list[str]:
    """Each rank's node address, ranks numbered node by node (Slurm's block distribution)."""
    if len(nodes) != len(tasks_per_node):
        raise SlurmError(f"{len(nodes)} nodes but tasks for {len(tasks_per_node)}")
    return [addresses[node] for node, count in zip(nodes, tasks_per_node, strict=True)
            for _ in range(count)]


def rank_hosts(env: Mapping[str, str] | None = None) -> list[str]:
    """hosts_per_rank for the allocation this process runs in, asking scontrol."""
    env = os.environ if env is None else env
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    tasks = env.get("SLURM_TASKS_PER_NODE")
    if not nodelist or not tasks:
        raise SlurmError("SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE are not set: "
                         "slurm-hosts runs inside a Slurm allocation")
    nodes = _scontrol("show", "hostnames", nodelist).split()
    addresses = {node: node_addr(_scontrol("show", "node", "-o", node))
                 for node in dict.fromkeys(nodes)}
    return hosts_per_rank(nodes, expand_tasks_per_node(tasks), addresses)


def _scontrol(*args: str) -> str:
    try:
        done = subprocess.run(["scontrol", *args], capture_output=True, text=True,
                              timeout=SCONTROL_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmError(f"scontrol {' '.join(args)} failed: {exc}") from exc
    if done.returncode != 0:
        raise SlurmError(f"scontrol {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def free_port(span: int = 1, tries: int = 50) -> int:
    """A port P such that P .. P+span-1 were all free on every address of this host a moment
    ago (the rendezvous port, then one per rank for TensorFlow)."""
    if span < 1:
        raise ValueError("span must be at least 1")
    for _ in range(tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("", 0))
            base = int(probe.getsockname()[1])
        if base + span - 1 <= 65535 and all(_free(base + i) for i in range(span)):
            return base
    raise OSError(f"found no {span} consecutive free ports in {tries} tries")


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True
