"""The local Slurm testbed: its configuration, and two nodes that really run a job's ranks."""

from __future__ import annotations

import time
from pathlib import Path

from trainyard.testbed import slurm_cluster as testbed


def test_the_configuration_keeps_every_daemon_on_loopback(tmp_path: Path) -> None:
    text = testbed.config(tmp_path, testbed.two_nodes(), "host", 7000, {"n1": 7001, "n2": 7002})
    lines = text.splitlines()
    assert "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny" in lines
    assert "NodeName=n1 CPUs=2 RealMemory=2048 NodeAddr=127.0.0.1 Port=7001 State=UNKNOWN" \
        in lines
    assert "NodeName=n2 CPUs=2 RealMemory=2048 NodeAddr=127.0.0.1 Port=7002 State=UNKNOWN" \
        in lines
    assert {"SlurmdTimeout=5", "MinJobAge=600", "ReturnToService=2"} <= set(lines)
    assert "PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP" in lines


def test_two_ranks_run_one_on_each_node(slurm_cluster: testbed.SlurmCluster,
                                        tmp_path: Path) -> None:
    out = tmp_path / "ranks.txt"
    slurm_cluster.command(["sbatch", "--parsable", "-N2", "-n2", f"--output={out}", "--wrap",
                           "srun sh -c 'echo $SLURM_PROCID $SLURMD_NODENAME'"])
    deadline = time.monotonic() + 30
    while len(out.read_text().split("\n")) < 3 if out.exists() else True:
        assert time.monotonic() < deadline, "the job did not finish"
        time.sleep(0.2)
    assert sorted(out.read_text().split("\n")[:2]) == ["0 n1", "1 n2"]
