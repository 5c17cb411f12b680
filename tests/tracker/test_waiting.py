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
