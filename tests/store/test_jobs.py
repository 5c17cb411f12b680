"""The job store on both dialects: idempotent create, the kind kept, compare-and-set
transitions, the requeue in one transaction, queries."""

import os
import signal
import subprocess
import sys
import threading
from dataclasses import replace
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import JSON, Column, MetaData, Table, bindparam, event, func, insert, select

from trainyard.domain.errors import InvalidArgument, NotFound, StaleState
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import InvalidTransition, JobState
from trainyard.store import faults
from trainyard.store.db import MIGRATIONS_DIR, Database, make_engine, migrate
from trainyard.store.jobs import JobFilter, JobStore
from trainyard.store.metrics import MetricStore
from trainyard.store.records import MetricPoint
from trainyard.store.runs import RunStore
from trainyard.store.schema import job_events, jobs
from trainyard.store.telemetry import JobMove

SPEC = JobSpec(name="job", command="true", labels={"team": "a"})


def count(db: Database, table) -> int:  # type: ignore[no-untyped-def]
    with db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_migrations_are_idempotent(db: Database) -> None:
    migrate(db.engine)
    migrate(db.engine)
    assert count(db, jobs) == 0


def test_create_stores_a_waiting_job_with_its_first_event(db: Database) -> None:
    store = JobStore(db)
    job_id, existing = store.create(SPEC, owner="ann")
    job = store.get(job_id)
    assert not existing
    assert job.state is JobState.WAITING and job.spec == SPEC and job.owner == "ann"
    [event] = store.events(job_id)
    assert event.from_state is None and event.to_state is JobState.WAITING


def test_request_id_makes_submit_idempotent(db: Database) -> None:
    store = JobStore(db)
    first, _ = store.create(SPEC, client_request_id="req-1")
    again, existing = store.create(SPEC, client_request_id="req-1")
    assert again == first and existing
    assert count(db, jobs) == 1
    with pytest.raises(InvalidArgument, match="client_request_id"):
        store.create(replace(SPEC, command="false"), client_request_id="req-1")
    assert count(db, jobs) == 1


def test_a_retry_that_races_past_the_callers_lookup_still_finds_its_job(db: Database) -> None:
    """look_up_request=False: the id is not looked up first (the caller found nothing, or a
    retry stored it since); the id's unique index sends the insert to the stored job."""
    store = JobStore(db)
    assert store.job_for_request("req-2") is None
    first, _ = store.create(SPEC, client_request_id="req-2")
    assert store.job_for_request("req-2") == first
    again, existing = store.create(SPEC, client_request_id="req-2", look_up_request=False)
    assert again == first and existing
    with pytest.raises(InvalidArgument, match="client_request_id"):
        store.create(replace(SPEC, command="false"), client_request_id="req-2",
                     look_up_request=False)
    assert count(db, jobs) == 1


def test_concurrent_retries_make_one_job(db: Database) -> None:
    store = JobStore(db)
    ids: list[str] = []
    barrier = threading.Barrier(8)

    def submit() -> None:
        barrier.wait()
        ids.append(store.create(SPEC, client_request_id="same")[0])

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1 and count(db, jobs) == 1


def test_transition_is_compare_and_set_with_an_event(db: Database) -> None:
    store = JobStore(db)
    job_id, _ = store.create(SPEC)
    store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                     handle="h-1")
    with pytest.raises(StaleState):
        store.transition(job_id, JobState.WAITING, JobState.CANCELLED, reason="late")
    job = store.get(job_id)
    assert job.state is JobState.LAUNCHING and job.handle == "h-1"
    assert [(e.from_state, e.to_state, e.reason) for e in store.events(job_id)][1:] == [
        (JobState.WAITING, JobState.LAUNCHING, "admitted")
    ]


def test_an_edge_outside_the_machine_writes_nothing(db: Database) -> None:
    store = JobStore(db)
    job_id, _ = store.create(SPEC)
    with pytest.raises(InvalidTransition):
        store.transition(job_id, JobState.WAITING, JobState.SUCCEEDED, reason="skip")
    assert store.get(job_id).state is JobState.WAITING
    assert count(db, job_events) == 1


def test_unknown_job(db: Database) -> None:
    with pytest.raises(NotFound):
        JobStore(db).get("nope")


def test_list_filters_and_pages(db: Database) -> None:
    store = JobStore(db)
    ids = [store.create(replace(SPEC, queue="q1" if i % 2 else "q2",
                                labels={"i": str(i), "team": "a"}))[0] for i in range(7)]
    store.transition(ids[0], JobState.WAITING, JobState.CANCELLED, reason="x")
    page, after = store.list(JobFilter(), page_size=3)
    assert [j.id for j in page] == ids[::-1][:3] and after is not None
    rest, end = store.list(JobFilter(), page_size=10, after_seq=after)
    assert [j.id for j in rest] == ids[::-1][3:] and end is None
    q1, _ = store.list(JobFilter(queue="q1"), page_size=10)
    assert {j.id for j in q1} == {ids[1], ids[3], ids[5]}
    by_label, _ = store.list(JobFilter(labels={"i": "4", "team": "a"}), page_size=10)
    assert [j.id for j in by_label] == [ids[4]]
    none, _ = store.list(JobFilter(labels={"i": "4", "team": "b"}), page_size=10)
    assert none == []
    cancelled, _ = store.list(JobFilter(states=[JobState.CANCELLED]), page_size=10)
    assert [j.id for j in cancelled] == [ids[0]]


def test_a_list_of_several_states_pages_newest_first_across_them(db: Database) -> None:
    store = JobStore(db)
    ids = [store.create(replace(SPEC, queue="q1" if i % 3 else "q2"))[0] for i in range(10)]
    moved = {i: JobState.CANCELLED for i in (0, 4, 5, 9)} | \
        {i: JobState.LAUNCHING for i in (1, 2, 7)}
    for i, state in moved.items():
        store.transition(ids[i], JobState.WAITING, state, reason="x")

    def pages(flt: JobFilter, size: int) -> list[list[str]]:
        out, after = [], None
        for _ in range(20):
            page, after = store.list(flt, page_size=size, after_seq=after)
            out.append([j.id for j in page])
            if after is None:
                return out
        raise AssertionError("the pages never ended")

    both = JobFilter(states=[JobState.LAUNCHING, JobState.CANCELLED, JobState.LAUNCHING])
    newest = [ids[i] for i in (9, 7, 5, 4, 2, 1, 0)]
    assert pages(both, 3) == [newest[:3], newest[3:6], newest[6:]]
    assert pages(both, 7) == [newest]
    in_q1 = replace(both, queue="q1")
    assert pages(in_q1, 2) == [[ids[7], ids[5]], [ids[4], ids[2]], [ids[1]]]
    assert pages(replace(both, states=[JobState.SUCCEEDED, JobState.FAILED]), 5) == [[]]


def test_a_job_moving_between_the_listed_states_mid_list_is_listed_once(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """The states' newest seqs are read in one statement and the page's rows in a second:
    a job that moves from the first state to the second between them is on the page once,
    as it is now, and the paging neither repeats it nor ends early."""
    from trainyard.store import jobs as job_store
    store = JobStore(db)
    ids = [store.create(SPEC)[0] for _ in range(6)]
    for job_id in ids[:3]:
        store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="x")
        store.transition(job_id, JobState.LAUNCHING, JobState.RUNNING, reason="x")
    newest_of_each, moved = job_store._newest_of_each, []

    def racing(*args: Any, **kwargs: Any) -> Any:
        query, params = newest_of_each(*args, **kwargs)
        with db.read() as conn:  # what the page's first statement reads, before the move
            seqs = list(conn.execute(query, params).scalars())
        if not moved:
            moved.append(ids[5])
            store.transition(ids[5], JobState.WAITING, JobState.LAUNCHING, reason="x")
            store.transition(ids[5], JobState.LAUNCHING, JobState.RUNNING, reason="x")
        # The seqs as read then, whatever the states are now.
        return select(jobs.c.seq).where(jobs.c.seq.in_(bindparam("b_read", expanding=True))), \
            {"b_read": seqs}

    monkeypatch.setattr(job_store, "_newest_of_each", racing)
    flt = JobFilter(states=[JobState.WAITING, JobState.RUNNING])
    page, after = store.list(flt, page_size=4)
    assert moved and [(j.id, j.state) for j in page] == [
        (ids[5], JobState.RUNNING), (ids[4], JobState.WAITING), (ids[3], JobState.WAITING),
        (ids[2], JobState.RUNNING)]
    assert after is not None
    rest, after = store.list(flt, page_size=4, after_seq=after)
    assert [j.id for j in rest] == [ids[1], ids[0]] and after is None


def test_queue_position_counts_waiting_jobs_ahead_in_the_same_queue(db: Database) -> None:
    store = JobStore(db)
    a, _ = store.create(SPEC)
    other, _ = store.create(replace(SPEC, queue="other"))
    b, _ = store.create(SPEC)
    c, _ = store.create(SPEC)
    assert [store.queue_position(store.get(j)) for j in (a, b, c)] == [1, 2, 3]
    assert store.queue_position(store.get(other)) == 1
    store.transition(a, JobState.WAITING, JobState.LAUNCHING, reason="admitted")
    assert store.queue_position(store.get(a)) == 0
    assert [store.queue_position(store.get(j)) for j in (b, c)] == [1, 2]


def test_queue_place_by_priority_counts_higher_priority_jobs_first(db: Database) -> None:
    store = JobStore(db)
    low, _ = store.create(SPEC)
    high, _ = store.create(replace(SPEC, priority=5))
    later_low, _ = store.create(SPEC)
    places = [store.queue_place(store.get(j), by_priority=True) for j in (low, high, later_low)]
    assert [(p.position, p.higher_priority_ahead) for p in places] == [(2, 1), (1, 0), (3, 1)]
    # In submit order alone (FIFO), no job is ahead for its priority.
    fifo = store.queue_place(store.get(later_low), by_priority=False)
    assert (fifo.position, fifo.higher_priority_ahead) == (3, 0)


def test_metrics_ingest_exactly_once(db: Database) -> None:
    store, metrics = JobStore(db), MetricStore(db)
    job_id, _ = store.create(SPEC)
    points = [MetricPoint(1, {"loss": 0.5}), MetricPoint(2, {"loss": 0.25, "acc": 0.9})]
    assert metrics.ingest(job_id, 1, from_offset=0, to_offset=100, points=points, malformed=2)
    # A second tracker that read the same bytes loses the compare-and-set.
    assert not metrics.ingest(job_id, 1, from_offset=0, to_offset=100, points=points,
                              malformed=2)
    assert metrics.latest(job_id) == {"loss": (0.25, 2), "acc": (0.9, 2)}
    assert metrics.series(job_id, "loss") == [(1, 0.5), (2, 0.25)]
    job = store.get(job_id)
    assert job.metrics_offset == 100 and job.malformed_metric_lines == 2


def test_migrations_build_exactly_the_declared_schema(db: Database) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from trainyard.store.schema import metadata

    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == [], f"schema.py and the migrations disagree: {diff}"


def running(store: JobStore, spec: JobSpec = SPEC) -> str:
    """A job whose first attempt runs, asked to stop for preemption."""
    job_id, _ = store.create(spec)
    store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                     attempt=1, executor="local", handle="h-1")
    store.mark_running(job_id, reason="process started", now=10.0)
    assert store.update_fields(job_id, JobState.RUNNING, preempt_requested=True)
    return job_id


def requeue(store: JobStore, job_id: str, **options: Any) -> None:
    store.requeue(job_id, preempted="preempted for a team (exited with code 143)",
                  requeued="requeued after preemption", pending=("PREEMPTED", "preempted"),
                  **options)


def test_a_retry_writes_its_attempts_end_and_the_wait_in_one_go(db: Database) -> None:
    store = JobStore(db)
    job_id = running(store)
    store.retry(job_id, ended=JobState.FAILED, outcome="exited with code 1", exit_code=1,
                requeued="requeued", pending=("BACKOFF", "backs off"), retry_after=50.0,
                now=20.0)
    job = store.get(job_id)
    assert (job.state, job.retries, job.retry_after, job.pending_code) == (
        JobState.WAITING, 1, 50.0, "BACKOFF")
    moves = [(e.from_state, e.to_state) for e in store.events(job_id)][-2:]
    assert moves == [(JobState.RUNNING, JobState.FAILED), (JobState.FAILED, JobState.WAITING)]


@pytest.mark.parametrize("ended", [JobState.FAILED, JobState.PREEMPTED])
def test_a_job_asked_to_cancel_is_never_put_back_to_wait(db: Database, ended: JobState
                                                         ) -> None:
    store = JobStore(db)
    job_id = running(store)
    assert store.update_fields(job_id, JobState.RUNNING, cancel_requested=True)
    before = len(store.events(job_id))
    with pytest.raises(StaleState):
        store.retry(job_id, ended=ended, outcome="lost", exit_code=None, requeued="requeued",
                    pending=("BACKOFF", "backs off"), retry_after=50.0, now=20.0)
    with pytest.raises(StaleState):
        requeue(store, job_id)
    job = store.get(job_id)
    assert job.state is JobState.RUNNING and job.retries == 0
    assert len(store.events(job_id)) == before


def test_mark_running_starts_the_attempt(db: Database) -> None:
    store = JobStore(db)
    job_id = running(store)
    job = store.get(job_id)
    assert job.state is JobState.RUNNING and job.started_at == 10.0
    assert store.events(job_id)[-1].reason == "process started"
    with pytest.raises(StaleState):
        store.mark_running(job_id, reason="again", now=11.0)


class Moves:
    """The store's telemetry of job moves, and the statements run meanwhile."""

    def __init__(self, db: Database) -> None:
        self.moves: list[JobMove] = []
        self.statements: list[str] = []
        db.telemetry = self  # type: ignore[assignment]
        event.listen(db.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.statements.append(statement.lstrip().split()[0].upper())

    def committed(self, seconds: float) -> None:
        pass

    def job_moved(self, move: JobMove) -> None:
        self.moves.append(move)


def test_a_launch_given_the_record_read_reads_nothing_back_and_reports_the_same(
        db: Database) -> None:
    """The tracker's launch and start moves pass the job as it read it: the run is written
    from the move's own fields, and the queue and times reported are the record's."""
    store = JobStore(db)
    told, known = store.create(SPEC)[0], store.create(SPEC)[0]
    seen = Moves(db)
    for job_id in (told, known):
        record = store.get(job_id)
        seen.statements.clear()
        store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                         now=record.updated_at + 5, known=record if job_id == known else None,
                         attempt=1, executor="local", pool="local", handle=f"h-{job_id}",
                         gpu_ids="0,1")
        reads = seen.statements.count("SELECT")
        assert reads == (0 if job_id == known else 1)
        launched = replace(record, state=JobState.LAUNCHING, updated_at=record.updated_at + 5)
        store.mark_running(job_id, reason="process started", now=record.updated_at + 7,
                           known=launched if job_id == known else None)
    for job_id in (told, known):
        run = RunStore(db).get(job_id, 1)
        assert (run.attempt, run.executor, run.pool, run.handle, run.gpu_ids) == \
            (1, "local", "local", f"h-{job_id}", ("0", "1"))
    by_job = {told: seen.moves[:2], known: seen.moves[2:]}
    for job_id, (launch, start) in by_job.items():
        record = store.get(job_id)
        assert (launch.queue, launch.submitted_at) == (SPEC.queue, record.submitted_at)
        assert launch.at - launch.entered_at == 5.0  # the wait, from the row or the record
        assert start.at - start.entered_at == 2.0


def test_requeue_moves_running_to_waiting_in_one_step_with_both_events(db: Database) -> None:
    store = JobStore(db)
    job_id = running(store)
    requeue(store, job_id, now=20.0)
    job = store.get(job_id)
    assert job.state is JobState.WAITING and not job.preempt_requested
    assert job.message == "preempted for a team (exited with code 143)"
    assert (job.pending_code, job.pending_message) == ("PREEMPTED", "preempted")
    assert job.held_s == 10.0  # the attempt's time running counts
    assert [(e.from_state, e.to_state, e.reason) for e in store.events(job_id)][-2:] == [
        (JobState.RUNNING, JobState.PREEMPTED, "preempted for a team (exited with code 143)"),
        (JobState.PREEMPTED, JobState.WAITING, "requeued after preemption"),
    ]
    assert [j.id for j in store.queued()] == [job_id]


def test_requeue_takes_a_job_left_preempted_back_to_waiting(db: Database) -> None:
    store = JobStore(db)
    job_id = running(store)
    # What an earlier version's first write left when it crashed before the second.
    store.transition(job_id, JobState.RUNNING, JobState.PREEMPTED, reason="stopped",
                     message="stopped", preempt_requested=False)
    requeue(store, job_id, expected=JobState.PREEMPTED)
    job = store.get(job_id)
    assert job.state is JobState.WAITING and job.message == "stopped"
    assert [e.to_state for e in store.events(job_id)][-2:] == [JobState.PREEMPTED,
                                                              JobState.WAITING]


def test_requeue_of_a_job_that_moved_on_writes_nothing(db: Database) -> None:
    store = JobStore(db)
    job_id = running(store)
    store.transition(job_id, JobState.RUNNING, JobState.CANCELLED, reason="cancelled")
    events = count(db, job_events)
    with pytest.raises(StaleState):
        requeue(store, job_id)
    with pytest.raises(InvalidTransition):
        requeue(store, job_id, expected=JobState.WAITING)
    assert store.get(job_id).state is JobState.CANCELLED and count(db, job_events) == events


REQUEUE_IN_A_CHILD = """
import sys
from trainyard.store.db import open_database
from trainyard.store.jobs import JobStore
JobStore(open_database(sys.argv[1])).requeue(
    sys.argv[2], preempted="stopped", requeued="requeued", pending=("PREEMPTED", "p"))
"""


def test_a_kill_inside_the_requeue_leaves_the_job_running_not_preempted(
        db: Database, database_url: str) -> None:
    store = JobStore(db)
    job_id = running(store)
    events = count(db, job_events)
    child = subprocess.run(
        [sys.executable, "-c", REQUEUE_IN_A_CHILD, database_url, job_id],
        env={**os.environ, faults.FAULT_ENV: faults.INSIDE_REQUEUE}, capture_output=True,
        timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    assert b"fault point inside-requeue" in child.stderr  # it died between the two moves
    # The transaction died with it: the job is as it was, and a requeue now completes.
    job = store.get(job_id)
    assert job.state is JobState.RUNNING and job.preempt_requested
    assert count(db, job_events) == events
    assert store.in_states([JobState.PREEMPTED]) == []
    requeue(store, job_id)
    assert store.get(job_id).state is JobState.WAITING


def test_create_stores_the_kind_its_image_gives_or_the_one_given(db: Database) -> None:
    store = JobStore(db)
    command, _ = store.create(SPEC)
    image, _ = store.create(replace(SPEC, image="trainyard/demo"))
    chosen, _ = store.create(SPEC, kind="slurm")
    assert [store.get(j).kind for j in (command, image, chosen)] == ["local", "docker", "slurm"]
    assert [j.kind for j in store.queued()] == ["local", "docker", "slurm"]


def test_jobs_stored_before_kinds_existed_take_their_images_kind(database_url: str) -> None:
    engine = make_engine(database_url)
    database = Database(engine)
    try:
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0010")
            old = Table("jobs", MetaData(), Column("hyperparameters", JSON),
                        Column("labels", JSON), autoload_with=conn)
            for job_id, image in (("cmd", ""), ("img", "trainyard/demo")):
                conn.execute(insert(old).values(
                    id=job_id, owner="", name=job_id, command="true", image=image,
                    hyperparameters={}, labels={}, cpus=1.0, memory_mb=100, gpus=0,
                    queue="default", priority=0, state="WAITING", attempt=0, message="",
                    cancel_requested=False, pending_code="", pending_message="",
                    executor="", handle="", metrics_offset=0, malformed_metric_lines=0,
                    submitted_at=1.0, updated_at=1.0))
        migrate(engine)
        store = JobStore(database)
        assert (store.get("cmd").kind, store.get("img").kind) == ("local", "docker")
        assert [(j.id, j.kind) for j in store.queued()] == [("cmd", "local"),
                                                            ("img", "docker")]
    finally:
        database.close()


def test_live_counts_read_the_state_index_and_never_the_finished_jobs(db: Database) -> None:
    store = JobStore(db)
    done = store.create(SPEC, owner="ann", team="", now=1.0)[0]
    store.transition(done, JobState.WAITING, JobState.CANCELLED, reason="x", now=2.0)
    waiting = [store.create(replace(SPEC, queue=q), owner="ann", team="", now=3.0)[0]
               for q in ("a", "a", "b")]
    store.transition(waiting[0], JobState.WAITING, JobState.LAUNCHING, reason="x", now=4.0)
    assert store.live_counts() == {(JobState.LAUNCHING, "a"): 1, (JobState.WAITING, "a"): 1,
                                   (JobState.WAITING, "b"): 1}
    # Many finished jobs, as a long-lived store holds: the plan still reads only the index.
    with db.write() as conn:
        conn.execute(insert(jobs), [
            {"id": f"old{i}", "name": "old", "command": "true", "hyperparameters": {},
             "labels": {}, "cpus": 1.0, "memory_mb": 1, "gpus": 0, "queue": "a",
             "priority": 0, "state": JobState.SUCCEEDED.value, "submitted_at": 0.0,
             "updated_at": 0.0} for i in range(20_000)])
    from trainyard.store.jobs import _LIVE_COUNTS

    with db.read() as conn:
        if db.is_sqlite:
            conn.exec_driver_sql("ANALYZE")
            sql = str(_LIVE_COUNTS.compile(conn, compile_kwargs={"literal_binds": True}))
            plan = " ".join(str(r[-1]) for r in conn.exec_driver_sql(
                f"EXPLAIN QUERY PLAN {sql}"))
            assert "COVERING INDEX ix_jobs_state_queue_seq" in plan, plan
        else:
            conn.exec_driver_sql("ANALYZE jobs")
            sql = str(_LIVE_COUNTS.compile(conn, compile_kwargs={"literal_binds": True}))
            plan = " ".join(str(r[0]) for r in conn.exec_driver_sql(f"EXPLAIN {sql}"))
            assert "ix_jobs_state_queue_seq" in plan and "Seq Scan" not in plan, plan
    assert store.live_counts()[(JobState.WAITING, "a")] == 1
