from trainyard.scheduler import FifoPolicy, PendingJob, RunningJob, Snapshot
from trainyard.scheduler.fifo import GLOBAL_CONCURRENCY_LIMIT


def pending(*seqs: int) -> list[PendingJob]:
    return [PendingJob(f"j{s}", "default", 0, s) for s in seqs]


def running(n: int) -> list[RunningJob]:
    return [RunningJob(f"r{i}", "default") for i in range(n)]


def test_admits_in_submit_order_up_to_the_free_slots() -> None:
    snap = Snapshot(pending=pending(5, 2, 9, 3), running=running(1), max_concurrent=3, now=0)
    decisions = FifoPolicy().schedule(snap)
    assert decisions.admit == ("j2", "j3")
    assert set(decisions.pending) == {"j5", "j9"}


def test_priority_does_not_reorder_fifo() -> None:
    jobs = [PendingJob("late", "default", 100, 2), PendingJob("early", "default", 0, 1)]
    decisions = FifoPolicy().schedule(Snapshot(jobs, [], max_concurrent=1, now=0))
    assert decisions.admit == ("early",)


def test_every_waiting_job_gets_a_reason_with_its_place() -> None:
    snap = Snapshot(pending=pending(1, 2, 3), running=running(2), max_concurrent=2, now=0)
    decisions = FifoPolicy().schedule(snap)
    assert decisions.admit == ()
    reasons = decisions.pending
    assert {r.code for r in reasons.values()} == {GLOBAL_CONCURRENCY_LIMIT}
    assert reasons["j1"].message == ("all 2 job slots are in use; it starts when a running "
                                     "job ends and the jobs ahead of it have started.")
    # One stable sentence: a pass that admits a job need not rewrite every other reason.
    assert reasons["j1"] == reasons["j2"] == reasons["j3"]


def test_saturation_is_declared_only_when_every_slot_is_taken() -> None:
    policy = FifoPolicy()
    full = policy.schedule(Snapshot(pending(1, 2), running(1), max_concurrent=2, now=0))
    assert full.admit == ("j1",) and full.saturated == full.pending["j2"]
    room = policy.schedule(Snapshot(pending(1), running(0), max_concurrent=2, now=0))
    assert room.admit == ("j1",) and room.saturated is None


def test_over_full_cluster_admits_nothing() -> None:
    snap = Snapshot(pending=pending(1), running=running(5), max_concurrent=2, now=0)
    assert FifoPolicy().schedule(snap).admit == ()


def test_empty_snapshot() -> None:
    decisions = FifoPolicy().schedule(Snapshot([], [], max_concurrent=4, now=0))
    assert decisions.admit == () and decisions.pending == {}
