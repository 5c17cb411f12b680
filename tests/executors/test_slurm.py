"""The Slurm executor against a real two-node cluster (tests/conftest.py: slurm_cluster)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.executors.slurmjobs import (
    TOKEN,
    ended,
    executor,
    request,
    running,
    wait_file,
    wait_for,
)
from trainyard.domain.pools import PoolCapacity, never_fits
from trainyard.domain.spec import Resources
from trainyard.executors.base import Phase
from trainyard.executors.slurm.capacity import read_capacity
from trainyard.executors.slurm.jobs import CANCELLED_OUTSIDE
from trainyard.testbed.slurm_cluster import SlurmCluster


def test_a_command_runs_and_its_exit_code_comes_back(slurm_cluster: SlurmCluster,
                                                      tmp_path: Path) -> None:
    slurm = executor(slurm_cluster)
    seen: list[str] = []
    slurm.set_exit_listener(seen.append)
    ok = request(tmp_path, "ok", "echo token=${TRAINYARD_JOB_TOKEN:+set} lr=$lr; sleep 2")
    three = request(tmp_path, "three", "exit 3")
    try:
        slurm.launch(ok)
        slurm.launch(three)
        assert slurm.poll(ok.handle).phase in (Phase.STARTING, Phase.RUNNING)
        assert wait_for(lambda: slurm.poll(ok.handle), running).phase is Phase.RUNNING
        finished = wait_for(lambda: slurm.poll(ok.handle), ended)
        assert (finished.phase, finished.exit_code) == (Phase.EXITED, 0)
        three_seen = wait_for(lambda: slurm.poll(three.handle), ended)
        assert (three_seen.phase, three_seen.exit_code) == (Phase.EXITED, 3)
        assert "token=set lr=0.1" in ok.files.log.read_text()
        assert ok.handle in seen and three.handle in seen  # the listener heard both end
        # The token reached the job through its environment only: not in the script, and
        # not in what the controller shows of the job.
        assert TOKEN not in slurm.script_for(ok)
        assert TOKEN not in slurm_cluster.command(["scontrol", "show", "job", "-o"])
        # A handle is created once.
        try:
            slurm.launch(ok)
            raise AssertionError("launched twice")
        except Exception as exc:
            assert "already exists" in str(exc)
    finally:
        slurm.close()


def test_two_workers_get_one_node_each_and_the_group_addresses(
        slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    slurm = executor(slurm_cluster)
    gang = request(tmp_path, "gang", "echo rank=$SLURM_PROCID node=$SLURMD_NODENAME "
                   "master=$TRAINYARD_MASTER_ADDR:$TRAINYARD_MASTER_PORT "
                   "hosts=$TRAINYARD_WORKER_HOSTS", workers=2, cpus=2.0)
    try:
        slurm.launch(gang)
        assert wait_for(lambda: slurm.poll(gang.handle), ended).exit_code == 0
    finally:
        slurm.close()
    lines = sorted(ln for ln in gang.files.log.read_text().splitlines() if ln.startswith("rank"))
    assert [ln.split()[:2] for ln in lines] == [["rank=0", "node=n1"], ["rank=1", "node=n2"]]
    master = lines[0].split()[2]
    assert master.startswith("master=127.0.0.1:") and master.split(":")[1].isdigit()
    assert all(ln.endswith("hosts=127.0.0.1,127.0.0.1") for ln in lines)


def test_cancel_terms_every_task_then_kills(slurm_cluster: SlurmCluster,
                                            tmp_path: Path) -> None:
    slurm = executor(slurm_cluster)
    marks = tmp_path / "marks"
    marks.mkdir()
    # Each task notes the TERM and carries on, so only the KILL after the grace ends it.
    stubborn = request(tmp_path, "stubborn", f"trap 'echo term > {marks}/$SLURM_PROCID' TERM; "
                       "echo up; while true; do sleep 0.2; done", workers=2, cpus=2.0)
    try:
        slurm.launch(stubborn)
        wait_for(lambda: slurm.poll(stubborn.handle), running)
        wait_file(stubborn.files.log)
        time.sleep(1.0)  # both tasks have set their trap
        started = time.monotonic()
        assert slurm.cancel(stubborn.handle, grace_seconds=2.0)
        assert slurm.cancel(stubborn.handle, grace_seconds=2.0)  # idempotent
        outcome = wait_for(lambda: slurm.poll(stubborn.handle), ended)
        # Killed after the grace period (or, had the KILL come last, cancelled).
        assert outcome.phase is Phase.EXITED
        assert "SIGKILL" in outcome.message or outcome.message == "cancelled", outcome
        assert time.monotonic() - started >= 1.5  # it outlived the TERM
        assert wait_file(marks / "0").strip() == "term"
        assert wait_file(marks / "1").strip() == "term"
    finally:
        slurm.close()


def test_a_cancel_from_outside_trainyard_is_named(slurm_cluster: SlurmCluster,
                                                  tmp_path: Path) -> None:
    slurm = executor(slurm_cluster)
    job = request(tmp_path, "outside", "sleep 60")
    try:
        slurm.launch(job)
        wait_for(lambda: slurm.poll(job.handle), running)
        slurm_cluster.command(["scancel", "--name", job.handle])
        outcome = wait_for(lambda: slurm.poll(job.handle), ended)
        assert outcome.phase is Phase.EXITED and outcome.message == CANCELLED_OUTSIDE
    finally:
        slurm.close()


def test_capacity_is_read_from_the_controller_and_refuses_what_no_node_holds(
        slurm_cluster: SlurmCluster) -> None:
    slurm = executor(slurm_cluster)
    capacity = read_capacity(slurm.commands, slurm_cluster.partition)
    assert (capacity.nodes, capacity.cpus, capacity.memory_mb, capacity.gpus) == (2, 4, 4096, 0)
    assert (capacity.node_cpus, capacity.node_memory_mb) == (2, 2048)
    pool = PoolCapacity("hpc", max_jobs=100, cpus=capacity.cpus,
                        memory_mb=capacity.memory_mb, node_cpus=capacity.node_cpus,
                        node_memory_mb=capacity.node_memory_mb, node_gpus=capacity.node_gpus)
    assert never_fits(pool, Resources(4.0, 256, 0)) == (
        "resources.cpus", "4 is more than the 2 CPUs of the largest node of pool 'hpc'")
    assert never_fits(pool, Resources(2.0, 256, 0), workers=2) is None  # one per node
    assert never_fits(pool, Resources(2.0, 256, 0), workers=3)[0] == "workers"  # type: ignore[index]


def test_a_new_executor_adopts_its_jobs_by_name_and_sweeps_its_orphans(
        slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    first = executor(slurm_cluster, "test-b")
    other = executor(slurm_cluster, "test-c")  # another service on the same cluster
    kept, orphan, foreign = (request(tmp_path, name, "sleep 60")
                             for name in ("kept", "orphan", "foreign"))
    try:
        first.launch(kept)
        first.launch(orphan)
        other.launch(foreign)
        wait_for(lambda: first.poll(kept.handle), running)
        first.close()  # as the service stops
        restarted = executor(slurm_cluster, "test-b")
        try:
            assert restarted.adopt(kept.handle).phase in (Phase.RUNNING, Phase.STARTING)
            swept = restarted.sweep({kept.handle})
            assert len(swept) == 1 and orphan.handle in swept[0]
            assert wait_for(lambda: restarted.poll(orphan.handle), ended).phase is Phase.EXITED
            assert other.poll(foreign.handle).phase in (Phase.RUNNING, Phase.STARTING)
            assert restarted.poll(kept.handle).phase in (Phase.RUNNING, Phase.STARTING)
            # Never launched by anyone: nothing under that name.
            assert restarted.adopt("trainyard-never-1").phase is Phase.LOST
        finally:
            restarted.close()
    finally:
        for name in (kept, orphan, foreign):
            slurm_cluster.command(["scancel", "--name", name.handle])
        other.close()
