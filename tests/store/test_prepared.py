"""Prepared statements for a move's writes, on both dialects: a shape is built once and
reused, and what it writes is what the statement built for the call would have written."""

from sqlalchemy import select

from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.store import prepared
from trainyard.store.db import Database
from trainyard.store.jobs import JobStore
from trainyard.store.schema import jobs, runs


def test_sql_values_are_not_plain() -> None:
    assert prepared.is_plain({"message": "x", "exit_code": None})
    assert not prepared.is_plain({"message": "x", "retries": jobs.c.retries + 1})


def test_a_shape_is_built_once_and_writes_its_values(db: Database) -> None:
    store = JobStore(db)
    ids = [store.create(JobSpec(name=f"j{i}", command="true"))[0] for i in range(2)]
    built = prepared.job_move.cache_info().misses
    for n, job_id in enumerate(ids):
        store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                         attempt=1, executor="local", pool="p", handle=f"h{n}",
                         gpu_ids="0,1", pending_code="", pending_message="", exit_code=None)
    # The second move took the first one's statement; whatever other test came first may
    # have built it already.
    assert prepared.job_move.cache_info().misses - built <= 1
    with db.read() as conn:
        rows = conn.execute(select(jobs.c.id, jobs.c.state, jobs.c.handle, jobs.c.gpu_ids,
                                   jobs.c.attempt).order_by(jobs.c.seq)).all()
        run_rows = conn.execute(select(runs.c.job_id, runs.c.handle, runs.c.state)
                                .order_by(runs.c.id)).all()
    assert [tuple(r) for r in rows] == [(ids[0], "LAUNCHING", "h0", "0,1", 1),
                                        (ids[1], "LAUNCHING", "h1", "0,1", 1)]
    assert [tuple(r) for r in run_rows] == [(ids[0], "h0", "LAUNCHING"),
                                            (ids[1], "h1", "LAUNCHING")]
    # The run's update has a shape of its own: the end's columns.
    store.mark_running(ids[0], reason="started", now=10.0)
    store.transition(ids[0], JobState.RUNNING, JobState.FAILED, reason="exit 3", now=12.5,
                     message="exit 3", exit_code=3)
    with db.read() as conn:
        run = conn.execute(select(runs).where(runs.c.job_id == ids[0])).one()
        job = conn.execute(select(jobs.c.held_s, jobs.c.exit_code, jobs.c.updated_at)
                           .where(jobs.c.id == ids[0])).one()
    assert (run.state, run.exit_code, run.message, run.started_at, run.ended_at) == \
        ("FAILED", 3, "exit 3", 10.0, 12.5)
    assert (job.held_s, job.exit_code, job.updated_at) == (2.5, 3, 12.5)
