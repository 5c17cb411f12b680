"""The job store on both dialects: idempotent create, compare-and-set transitions, queries."""

import threading
from dataclasses import replace

import pytest
from sqlalchemy import func, select

from trainyard.domain.errors import InvalidArgument, NotFound, StaleState
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import InvalidTransition, JobState
from trainyard.store.db import Database, migrate
from trainyard.store.jobs import JobFilter, JobStore
from trainyard.store.metrics import MetricStore
from trainyard.store.records import MetricPoint
from trainyard.store.schema import job_events, jobs

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
