from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.store.db import Database
from trainyard.store.jobs import JobStore
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
