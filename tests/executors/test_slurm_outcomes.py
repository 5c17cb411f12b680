"""What each ending Slurm reports becomes for the attempt: a pure table."""

from __future__ import annotations

import pytest

from trainyard.executors.base import Observation, Phase
from trainyard.executors.slurm.jobs import CANCELLED_OUTSIDE, SlurmJob, observe


def job(state: str, code: int | None = None, nodes: tuple[str, ...] = ("n1", "n2"),
        reason: str = "None") -> SlurmJob:
    return SlurmJob(job_id="7", name="trainyard-j-1", state=state, reason=reason,
                    exit_code=code, comment="trainyard:x", nodes=nodes, batch_host=nodes[0])


@pytest.mark.parametrize(("seen", "ours", "failed", "expected"), [
    (job("PENDING"), False, (), Observation(Phase.STARTING)),
    (job("PENDING", reason="Resources"), False, (), Observation(Phase.STARTING)),
    # Held for good: it fails, naming why, instead of holding its quota forever.
    (job("PENDING", reason="InvalidAccount"), False, (),
     Observation(Phase.LOST, message="Slurm will not start it: InvalidAccount")),
    (job("RUNNING"), False, (), Observation(Phase.RUNNING)),
    (job("COMPLETED", 0), False, (), Observation(Phase.EXITED, 0)),
    (job("FAILED", 3), False, (), Observation(Phase.EXITED, 3, "exited with code 3")),
    (job("OUT_OF_MEMORY", 0), False, (),
     Observation(Phase.EXITED, 137, "out of memory (Slurm's memory limit)")),
    (job("TIMEOUT", 0), False, (), Observation(Phase.EXITED, 143, "time limit reached")),
    (job("NODE_FAIL"), False, ("n2",), Observation(Phase.LOST, message="node n2 failed",
                                                    retry=True)),
    # Killed under a node the controller has since marked down: lost, not the job's fault.
    (job("FAILED", 137), False, ("n2",), Observation(Phase.LOST, message="node n2 failed",
                                                      retry=True)),
    (job("FAILED", 137), False, ("n9",), Observation(
        Phase.EXITED, 137, "killed by SIGKILL (possibly out of memory), exit code 137")),
    (job("CANCELLED", 0), True, (), Observation(Phase.EXITED, 143, "cancelled")),
    (job("CANCELLED", 0), False, (), Observation(Phase.EXITED, 143, CANCELLED_OUTSIDE)),
])
def test_outcomes(seen: SlurmJob, ours: bool, failed: tuple[str, ...],
                  expected: Observation) -> None:
    assert observe(seen, cancelled_by_us=ours, failed_nodes=failed) == expected


def test_a_submit_that_timed_out_may_have_reached_the_controller() -> None:
    from trainyard.executors.slurm.commands import ControllerAway, never_reached

    refused = ControllerAway("sbatch failed: Batch job submission failed: Unable to contact "
                             "slurm controller (connect failure)")
    timed_out = ControllerAway("sbatch did not finish within 30 s")
    assert never_reached(refused)  # nothing was created: launch again once it answers
    assert not never_reached(timed_out)  # it may hold the job: look for it by name
