"""A partition's capacity as the controller declares it: its nodes, their CPUs, memory and
GPUs (GRES gpu:N) in total, and the largest node's, which one worker must fit in."""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainyard.executors.slurm.commands import SlurmCommands, SlurmError
from trainyard.executors.slurm.jobs import expand_hosts

_FIELD = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z/:_]*)=(\S*)")
_GPUS = re.compile(r"(?:^|,)gpu(?::[^:,(]+)?:(\d+)")


@dataclass(frozen=True)
class ClusterCapacity:
    nodes: int
    cpus: int
    memory_mb: int
    gpus: int
    node_cpus: int  # the largest node's
    node_memory_mb: int
    node_gpus: int


def gpus_of(gres: str) -> int:
    """GPUs in a node's Gres ("gpu:2", "gpu:a100:4(S:0-1)", "(null)")."""
    return sum(int(n) for n in _GPUS.findall(gres))


def parse_capacity(partition_text: str, nodes_text: str) -> ClusterCapacity:
    """From `scontrol show partition P -o` and `scontrol show node -o`."""
    fields = dict(_FIELD.findall(partition_text.strip()))
    members = set(expand_hosts(fields.get("Nodes", "")))
    cpus, memory, gpus = [], [], []
    for line in nodes_text.splitlines():
        node = dict(_FIELD.findall(line))
        if node.get("NodeName") not in members:
            continue
        cpus.append(int(node.get("CPUTot", "0") or 0))
        memory.append(int(node.get("RealMemory", "0") or 0))
        gpus.append(gpus_of(node.get("Gres", "")))
    return ClusterCapacity(nodes=len(cpus), cpus=sum(cpus), memory_mb=sum(memory),
                           gpus=sum(gpus), node_cpus=max(cpus, default=0),
                           node_memory_mb=max(memory, default=0), node_gpus=max(gpus, default=0))


def read_capacity(commands: SlurmCommands, partition: str) -> ClusterCapacity:
    """SlurmError (ControllerAway) when the controller does not answer or has no such
    partition."""
    try:
        part = commands.run(["scontrol", "show", "partition", partition, "-o"])
    except SlurmError as exc:
        if "not found" in str(exc).lower():
            raise SlurmError(f"the Slurm cluster has no partition {partition!r}") from exc
        raise
    if "PartitionName=" not in part:
        raise SlurmError(f"the Slurm cluster has no partition {partition!r}")
    return parse_capacity(part, commands.run(["scontrol", "show", "node", "-o"]))
