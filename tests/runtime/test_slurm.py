"""The batch script's helpers: each rank's node address, a free port."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from trainyard.runtime.slurm import (
    SlurmError,
    expand_tasks_per_node,
    free_port,
    hosts_per_rank,
    node_addr,
    rank_hosts,
)

SCONTROL_LINE = ("NodeName=n2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=2 "
                 "NodeAddr=10.0.0.12 NodeHostName=n2 Port=6819 RealMemory=1000 State=IDLE")


@pytest.mark.parametrize(("value", "counts"), [
    ("1", [1]), ("2(x2),1", [2, 2, 1]), ("4(x3)", [4, 4, 4]), ("1,3,2(x2)", [1, 3, 2, 2]),
])
def test_tasks_per_node_are_expanded(value: str, counts: list[int]) -> None:
    assert expand_tasks_per_node(value) == counts


@pytest.mark.parametrize("value", ["", "x", "2(x)", "2(3)", "-1"])
def test_unreadable_tasks_per_node_are_refused(value: str) -> None:
    with pytest.raises(SlurmError, match="SLURM_TASKS_PER_NODE"):
        expand_tasks_per_node(value)


def test_node_addr_is_read_from_scontrol() -> None:
    assert node_addr(SCONTROL_LINE) == "10.0.0.12"
    assert node_addr(SCONTROL_LINE.replace("NodeAddr=10.0.0.12", "NodeAddr=127.0.0.1")) == \
        "127.0.0.1"
    with pytest.raises(SlurmError, match="no NodeAddr"):
        node_addr("NodeName=n2 State=IDLE")


def test_each_rank_gets_its_nodes_address_node_by_node() -> None:
    addresses = {"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"}
    assert hosts_per_rank(["n1", "n2", "n3"], expand_tasks_per_node("2(x2),1"), addresses) == \
        ["10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2", "10.0.0.3"]
    with pytest.raises(SlurmError, match="2 nodes but tasks for 1"):
        hosts_per_rank(["n1", "n2"], [2], addresses)


def test_outside_an_allocation_slurm_hosts_says_so() -> None:
    with pytest.raises(SlurmError, match="inside a Slurm allocation"):
        rank_hosts({})
    done = subprocess.run([sys.executable, "-m", "trainyard.runtime", "slurm-hosts"],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)})
    assert done.returncode == 70
    assert done.stderr.startswith("[trainyard runtime] SLURM_JOB_NODELIST")
    assert "Traceback" not in done.stderr


def test_free_port_gives_a_run_of_free_ports() -> None:
    base = free_port(span=3)
    for port in range(base, base + 3):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
    done = subprocess.run([sys.executable, "-m", "trainyard.runtime", "free-port"],
                          capture_output=True, text=True, timeout=60, check=True)
    assert 0 < int(done.stdout) < 65536
