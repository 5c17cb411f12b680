from sqlalchemy import update

from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.store.db import Database
from trainyard.store.jobs import JobStore
from trainyard.store.schema import jobs
from trainyard.tracker.waiting import WaitingJobs


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def counted_reads(store: JobStore) -> list[int]:
    """The `after_seq` of each read of the waiting rows from now on."""
    reads: list[int] = []
    queued = store.queued

    def counted(after_seq: int = 0) -> list:  # type: ignore[type-arg]
        reads.append(after_seq)
        return queued(after_seq)

    store.queued = counted  # type: ignore[method-assign]
    return reads


def test_reads_new_rows_incrementally_and_everything_when_told(db: Database) -> None:
    store = JobStore(db)
    clock = Clock()
    waiting = WaitingJobs(store, full_read_every=10, clock=clock)
    a = store.create(JobSpec(name="a", command="true"))[0]
    b = store.create(JobSpec(name="b", command="true"))[0]
    assert [j.job_id for j in waiting.current()] == [a, b]
    c = store.create(JobSpec(name="c", command="true"))[0]
    assert [j.job_id for j in waiting.current()] == [a, b, c]
    waiting.remove(a)
    assert [j.job_id for j in waiting.current()] == [b, c]
    # A cancel outside the tracker is invisible to incremental reads until invalidated...
    store.transition(b, JobState.WAITING, JobState.CANCELLED, reason="x")
    assert [j.job_id for j in waiting.current()] == [b, c]
    waiting.invalidate()
    assert [j.job_id for j in waiting.current()] == [a, c]  # a is still WAITING in the store
    # ...or until the period for a full read comes round.
    store.transition(c, JobState.WAITING, JobState.CANCELLED, reason="x")
    clock.now = 10
    assert [j.job_id for j in waiting.current()] == [a]


def test_jobs_carry_their_attained_service_only_for_a_policy_that_orders_by_it(
        db: Database) -> None:
    store = JobStore(db)
    waiting = WaitingJobs(store, full_read_every=10, clock=Clock())
    served = store.create(JobSpec(name="s", command="true", resources=Resources(cpus=2)))[0]
    fresh = store.create(JobSpec(name="f", command="true"))[0]
    with db.write() as conn:  # it ran two hours in an earlier attempt
        conn.execute(update(jobs).where(jobs.c.id == served).values(held_s=7200.0))
    order = [j.job_id for j in waiting.current().queues["default"]]
    assert order == [served, fresh] and waiting.current().get(served).attained == 0.0
    waiting.order_by_service(True)  # re-read: 2 CPUs for 2 h, level 2, after the new job
    assert [j.job_id for j in waiting.current().queues["default"]] == [fresh, served]
    assert waiting.current().get(served).attained == 2 * 7200.0
    waiting.order_by_service(False)
    assert [j.job_id for j in waiting.current().queues["default"]] == [served, fresh]


def test_the_periods_check_reads_everything_again_only_when_out_of_step(db: Database) -> None:
    store = JobStore(db)
    clock = Clock()
    waiting = WaitingJobs(store, full_read_every=10, clock=clock)
    reads = counted_reads(store)
    a = store.create(JobSpec(name="a", command="true"))[0]
    b = store.create(JobSpec(name="b", command="true"))[0]
    assert [j.job_id for j in waiting.current()] == [a, b]
    assert reads == [0]  # the first read is whole
    # In step at the period: only the new rows are read, as between periods.
    c = store.create(JobSpec(name="c", command="true"))[0]
    clock.now = 10
    assert [j.job_id for j in waiting.current()] == [a, b, c]
    assert 0 not in reads[1:]
    # A job the store still lists as waiting but not held here (dropped as launched, then
    # back): the next period's check finds it and reads everything again.
    waiting.remove(a)
    clock.now = 15
    assert [j.job_id for j in waiting.current()] == [b, c]
    clock.now = 20
    assert [j.job_id for j in waiting.current()] == [a, b, c]
    assert reads[-1] == 0
    # A job changed elsewhere (its columns set, so when it began to wait moves): read again.
    assert store.update_fields(b, JobState.WAITING, priority=5)
    clock.now = 30
    assert waiting.current().get(b).priority == 5  # type: ignore[union-attr]
    # A job that left the queue elsewhere.
    store.transition(c, JobState.WAITING, JobState.CANCELLED, reason="x")
    clock.now = 40
    assert {j.job_id for j in waiting.current()} == {a, b}


def test_a_check_that_finds_a_change_is_not_lost_to_an_incremental_read(db: Database) -> None:
    """read_new() may be what runs the period's check: the full read it asks for then
    happens on the next current(), though the period has just been restarted."""
    store = JobStore(db)
    clock = Clock()
    waiting = WaitingJobs(store, full_read_every=10, clock=clock)
    a = store.create(JobSpec(name="a", command="true"))[0]
    assert [j.job_id for j in waiting.current()] == [a]
    store.transition(a, JobState.WAITING, JobState.CANCELLED, reason="x")
    clock.now = 10
    assert waiting.read_new() is None
    assert [j.job_id for j in waiting.current()] == []


def test_an_invalidate_during_the_periods_check_is_not_undone(db: Database) -> None:
    """A cancel on another thread invalidates the list while the check reads the store from
    before it: the check finding nothing must not clear what the cancel asked for."""
    store = JobStore(db)
    clock = Clock()
    waiting = WaitingJobs(store, full_read_every=10, clock=clock)
    a = store.create(JobSpec(name="a", command="true"))[0]
    assert [j.job_id for j in waiting.current()] == [a]
    since = store.waiting_since

    def read_then_cancelled(upto_seq: int) -> dict[str, float]:
        found = since(upto_seq)  # still in step: the cancel has not committed yet
        store.transition(a, JobState.WAITING, JobState.CANCELLED, reason="x")
        waiting.invalidate()
        return found

    store.waiting_since = read_then_cancelled  # type: ignore[method-assign]
    clock.now = 10
    assert [j.job_id for j in waiting.current()] == []


def test_the_first_in_line_are_those_last_read_without_a_read(db: Database) -> None:
    # A submit-only pass still finds the jobs submitted since, and says why they wait.
    store = JobStore(db)
    waiting = WaitingJobs(store, full_read_every=10, clock=Clock())
    a = store.create(JobSpec(name="a", command="true"))[0]
    b = store.create(JobSpec(name="b", command="true"))[0]
    assert waiting.first_in_line(4) == []  # nothing read yet
    waiting.current()
    c = store.create(JobSpec(name="c", command="true"))[0]
    assert waiting.first_in_line(4) == [a, b]
    assert [j.job_id for j in waiting.read_new() or []] == [c]


def test_with_a_period_new_rows_are_read_only_where_a_job_may_have_been_submitted(
        db: Database) -> None:
    """A pass woken by an exit reads no new rows where no job was stored here nor a submit
    heard of: those are read at once, and a row no one told of on the period."""
    store = JobStore(db)
    clock = Clock()
    waiting = WaitingJobs(store, full_read_every=100, new_read_every=5, clock=clock)
    reads = counted_reads(store)
    a = store.create(JobSpec(name="a", command="true"))[0]
    assert [j.job_id for j in waiting.current()] == [a]
    assert len(reads) == 1
    waiting.current()
    assert len(reads) == 1  # nothing stored since: no read
    b = store.create(JobSpec(name="b", command="true"))[0]  # stored by this process
    assert [j.job_id for j in waiting.current()] == [a, b]
    assert len(reads) == 2
    # Stored by another process (another server on the same database): unseen here...
    other = JobStore(db)
    c = other.create(JobSpec(name="c", command="true"))[0]
    db.feed._created -= 1  # as if the count were another process's
    assert [j.job_id for j in waiting.current()] == [a, b]
    # ...until its server's word is heard (store/notices.py)...
    waiting.submitted()
    assert [j.job_id for j in waiting.current()] == [a, b, c]
    # ...or the period comes round.
    d = other.create(JobSpec(name="d", command="true"))[0]
    db.feed._created -= 1
    clock.now = 4
    assert [j.job_id for j in waiting.current()] == [a, b, c]
    clock.now = 5
    assert [j.job_id for j in waiting.current()] == [a, b, c, d]
    # A submit-only pass (read_new) reads whatever it was woken for.
    e = other.create(JobSpec(name="e", command="true"))[0]
    db.feed._created -= 1
    assert [j.job_id for j in waiting.read_new() or []] == [e]
