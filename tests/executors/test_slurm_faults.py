"""The Slurm executor when the cluster fails under it: the controller killed and restarted,
a node's slurmd killed mid-job."""

from __future__ import annotations

import time
from pathlib import Path

from tests.executors.slurmjobs import ended, executor, request, running, wait_for
from trainyard.executors.base import Phase
from trainyard.testbed.slurm_cluster import SlurmCluster


def test_a_controller_away_and_back_keeps_the_job(slurm_cluster: SlurmCluster,
                                                   tmp_path: Path) -> None:
    slurm = executor(slurm_cluster)
    # It ends after the controller is back: a job that ends while no controller listens is
    # reported when its node next registers, later than a test should wait.
    job = request(tmp_path, "survives", "sleep 15")
    try:
        slurm.launch(job)
        wait_for(lambda: slurm.poll(job.handle), running)
        # slurmctld saves its job state every few seconds; a SIGKILL keeps what it saved, and
        # one before the save of the job's start would forget that it started.
        time.sleep(6)
        slurm_cluster.kill_controller()
        try:
            time.sleep(0.6)  # past the reconcile interval
            why = slurm.unavailable()
            assert why is not None and why.startswith("the Slurm controller does not answer")
            assert slurm.poll(job.handle).phase is Phase.UNKNOWN
        finally:
            slurm_cluster.start_controller()  # recovers its jobs from its saved state
        back = wait_for(lambda: slurm.poll(job.handle), lambda o: o.phase is not Phase.UNKNOWN)
        assert back.phase in (Phase.RUNNING, Phase.EXITED) and slurm.unavailable() is None
        outcome = wait_for(lambda: slurm.poll(job.handle), ended, timeout=40)
        assert (outcome.phase, outcome.exit_code) == (Phase.EXITED, 0)
    finally:
        slurm.close()


def test_a_node_lost_mid_job_is_a_lost_attempt_naming_the_node(slurm_cluster: SlurmCluster,
                                                               tmp_path: Path) -> None:
    slurm = executor(slurm_cluster)
    job = request(tmp_path, "doomed", "sleep 120", workers=2, cpus=2.0)  # one task per node
    # Both nodes free first: the cluster is shared with the other Slurm tests of this
    # process, whose jobs may still be ending (or left behind: each is over by now); and a
    # loaded machine starts it slowly.
    slurm_cluster.cancel_all()
    slurm_cluster.wait_idle(timeout=60)
    try:
        slurm.launch(job)
        wait_for(lambda: slurm.poll(job.handle), running, timeout=60)
        slurm_cluster.kill_node("n2")
        try:
            outcome = wait_for(lambda: slurm.poll(job.handle), ended, timeout=60)
            assert outcome.phase is Phase.LOST and outcome.retry
            assert outcome.message == "node n2 failed"
        finally:
            slurm_cluster.start_node("n2")
            slurm_cluster.wait_idle(timeout=60)
    finally:
        slurm.close()
