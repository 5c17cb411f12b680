from functools import partial

import pytest

from tests import factories
from tests.factories import waiting
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import Resources
from trainyard.scheduler import (
    Decisions,
    FifoPolicy,
    PendingJob,
    PendingReason,
    RunningJob,
    Snapshot,
)


def pending(*seqs: int) -> list[PendingJob]:
    return [waiting(s, "default") for s in seqs]


def running(n: int) -> list[RunningJob]:
    return [factories.running(f"r{i}", "default") for i in range(n)]


def test_admits_in_submit_order_up_to_the_free_slots() -> None:
    snap = Snapshot(pending=pending(5, 2, 9, 3), running=running(1), now=0)
    decisions = FifoPolicy(3).schedule(snap)
    assert decisions.admit == ("j2", "j3")
    assert set(decisions.pending) == {"j5", "j9"}


def test_priority_does_not_reorder_fifo() -> None:
    jobs = [PendingJob("late", "default", 100, 2), PendingJob("early", "default", 0, 1)]
    decisions = FifoPolicy(1).schedule(Snapshot(jobs, [], now=0))
    assert decisions.admit == ("early",)


def test_every_waiting_job_gets_a_reason_with_its_place() -> None:
    snap = Snapshot(pending=pending(1, 2, 3), running=running(2), now=0)
    decisions = FifoPolicy(2).schedule(snap)
    assert decisions.admit == ()
    reasons = decisions.pending
    assert {r.code for r in reasons.values()} == {ReasonCode.GLOBAL_CONCURRENCY_LIMIT}
    assert reasons["j1"].message == ("all 2 job slots are in use; it starts when a running "
                                     "job ends and the jobs ahead of it have started.")
    # One stable sentence: a pass that admits a job need not rewrite every other reason.
    assert reasons["j1"] == reasons["j2"] == reasons["j3"]


def test_an_unchanged_reason_is_the_same_object_from_pass_to_pass() -> None:
    # The tracker writes only the reasons that changed and tells most of them by identity:
    # a pass over a deep backlog compares no sentences.
    policy = FifoPolicy(2)
    first = policy.schedule(Snapshot(pending(*range(1, 40)), running(1), now=0))
    assert first.admit == ("j1",)
    second = policy.schedule(Snapshot(pending(*range(2, 40)), running(2), now=1))
    assert second.admit == ()
    assert len(second.pending) == 38
    assert all(second.pending[job] is first.pending[job] for job in second.pending)
    policy.max_running = 3  # another limit is another sentence
    third = policy.schedule(Snapshot(pending(*range(3, 40)), running(3), now=2))
    assert third.pending["j3"] != first.pending["j3"]
    assert third.pending["j3"].message.startswith("all 3 job slots are in use")


def test_behind_full_slots_a_sweep_at_its_limit_still_says_so() -> None:
    # With every slot taken the rest of the queue waits for the limit, except where a group
    # rule says more: the jobs of a sweep at its own limit keep that reason.
    jobs = [waiting(1, "default"), waiting(2, "default", sweep="s"), waiting(3, "default")]
    snap = Snapshot(jobs, [factories.running("r0", "default", sweep="s")], now=0,
                    sweep_limits={"s": 1})
    decisions = FifoPolicy(2).schedule(snap)
    assert decisions.admit == ("j1",)
    assert decisions.pending["j2"].code is ReasonCode.SWEEP_LIMIT
    assert decisions.pending["j3"].code is ReasonCode.GLOBAL_CONCURRENCY_LIMIT


def test_saturation_is_declared_only_when_every_slot_is_taken() -> None:
    policy = FifoPolicy(2)
    full = policy.schedule(Snapshot(pending(1, 2), running(1), now=0))
    assert full.admit == ("j1",) and full.saturated == full.pending["j2"]
    room = policy.schedule(Snapshot(pending(1), running(0), now=0))
    assert room.admit == ("j1",) and room.saturated is None


def test_over_full_cluster_admits_nothing() -> None:
    snap = Snapshot(pending=pending(1), running=running(5), now=0)
    assert FifoPolicy(2).schedule(snap).admit == ()


def test_empty_snapshot() -> None:
    decisions = FifoPolicy(4).schedule(Snapshot([], [], now=0))
    assert decisions.admit == () and decisions.pending == {}


# --- pools ---------------------------------------------------------------------------------

DOCKER = PoolCapacity("docker", max_jobs=4, cpus=4.0, memory_mb=8192,
                      gpu_ids=("g0", "g1", "g2", "g3"))


job = partial(waiting, queue="default", kind="docker")


LOCAL = PoolCapacity("local", max_jobs=10, gpu_ids=("g0", "g1"))  # the same host's GPUs


def schedule(pending: list[PendingJob], running: list[RunningJob] = (),
             unavailable: dict[str, str] | None = None) -> Decisions:
    return FifoPolicy(10).schedule(Snapshot(pending, list(running), now=0,
                                            pools={"docker": DOCKER, "local": LOCAL},
                                            unavailable=unavailable or {}))


def test_gpu_ids_go_to_one_job_each_and_skip_those_in_use() -> None:
    busy = RunningJob("r", "default", Resources(1, 1024, 1), "docker", ("g1",))
    decisions = schedule([job(1, gpus=2), job(2, gpus=1), job(3, gpus=1)], [busy])
    assert decisions.admit == ("j1", "j2")
    assert decisions.gpu_ids == {"j1": ("g0", "g2"), "j2": ("g3",)}
    assert decisions.pending["j3"].code == ReasonCode.POOL_CAPACITY
    assert "0 of 4 GPUs free" in decisions.pending["j3"].message


def test_a_job_that_does_not_fit_holds_back_only_its_own_pool() -> None:
    decisions = schedule([job(1, cpus=3), job(2, cpus=2), job(3, cpus=0.5), job(4, kind="local")])
    assert decisions.admit == ("j1", "j4")  # j3 would fit, but j2 came first
    assert decisions.pending["j2"].code == ReasonCode.POOL_CAPACITY
    assert "1 of 4 CPUs free and the job needs 2" in decisions.pending["j2"].message
    assert decisions.pending["j3"].code == ReasonCode.POOL_ORDER


@pytest.mark.parametrize(("pending", "words"), [
    ([job(1, memory_mb=4096), job(2, memory_mb=4097)], "4096 of 8192 MiB free"),
    ([job(i, cpus=0.5) for i in range(5)], "all 4 job slots of pool 'docker'"),
])
def test_each_capacity_is_counted(pending: list[PendingJob], words: str) -> None:
    decisions = schedule(pending)
    waiting = [r for r in decisions.pending.values() if r.code == ReasonCode.POOL_CAPACITY]
    assert len(waiting) == 1 and words in waiting[0].message


def test_running_jobs_count_against_their_pool() -> None:
    running = [RunningJob(f"r{i}", "default", Resources(2, 1024, 0), "docker") for i in range(2)]
    assert schedule([job(1, cpus=0.5)], running).admit == ()


def test_a_gpu_is_never_given_twice_even_across_pools() -> None:
    busy = RunningJob("r", "default", Resources(1, 1024, 1), "local", ("g0",))
    decisions = schedule([job(1, gpus=1), job(2, kind="local", gpus=1)], [busy])
    assert decisions.gpu_ids == {"j1": ("g1",)}  # g0 is the local job's
    # The local pool's last GPU went.
    assert decisions.pending["j2"].code == ReasonCode.POOL_CAPACITY


def test_jobs_of_an_unavailable_or_unknown_pool_wait_and_say_why() -> None:
    away = "the Docker engine is unreachable; jobs start once it answers again"
    decisions = schedule([job(1), job(2, kind="local"), job(3, kind="slurm")],
                         unavailable={"docker": away})
    assert decisions.admit == ("j2",)
    assert decisions.pending["j1"] == PendingReason(ReasonCode.POOL_UNAVAILABLE, away)
    assert decisions.pending["j3"].code == ReasonCode.POOL_UNAVAILABLE
    assert "runs no slurm pool" in decisions.pending["j3"].message
