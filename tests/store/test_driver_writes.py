"""Writes on the driver's cursor store exactly what SQLAlchemy's execute stores, on both
dialects, raise what it raises, and leave to SQLAlchemy what they cannot run."""

from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, insert, select
from sqlalchemy.exc import IntegrityError

from trainyard.domain.errors import StaleState
from trainyard.domain.spec import DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.store import driver_writes
from trainyard.store.db import Database
from trainyard.store.jobs import _INSERT_EVENT, _INSERT_JOB, _INSERT_LABEL, JobStore
from trainyard.store.schema import job_events, job_labels, jobs, runs


def _spec(name: str) -> JobSpec:
    return JobSpec(name=name, command="echo 'a \"quoted\" $x'", labels={"team": "vision"},
                   hyperparameters={"LR": "0.1", "NOTE": "ünïcode\nline"},
                   resources=Resources(cpus=1.5, memory_mb=512, gpus=0),
                   dataset=DatasetRef("digits", "v" * 64), retry_on_failure=True,
                   retry_exit_codes=(3, 4), max_attempts=2)


def _rows(db: Database, job_id: str) -> dict[str, Any]:
    with db.read() as conn:
        job = dict(conn.execute(select(jobs).where(jobs.c.id == job_id)).mappings().one())
        events = [dict(r) for r in conn.execute(
            select(job_events.c.from_state, job_events.c.to_state, job_events.c.time,
                   job_events.c.reason).where(job_events.c.job_id == job_id)).mappings()]
        labels = [dict(r) for r in conn.execute(
            select(job_labels.c.key, job_labels.c.value).where(
                job_labels.c.job_id == job_id)).mappings()]
    for generated in ("id", "seq"):
        job.pop(generated)
    return {"job": job, "events": events, "labels": labels}


def test_a_submit_stores_the_same_rows_either_way(db: Database,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store = JobStore(db)
    fast, _ = store.create(_spec("same"), owner="ana", team="vision", now=12.5)
    ran: list[object] = []
    real = driver_writes.run_many

    def counted(conn: Any, statement: Any, rows: Any) -> bool:
        ran.append(statement)
        return real(conn, statement, rows)

    monkeypatch.setattr("trainyard.store.group_commit.run_many", counted)
    second, _ = store.create(_spec("same"), owner="ana", team="vision", now=12.5)
    # The job, its label and its event all went to the driver's cursor.
    assert {id(s) for s in ran} == {id(_INSERT_JOB), id(_INSERT_LABEL), id(_INSERT_EVENT)}
    monkeypatch.setattr("trainyard.store.group_commit.run_many", lambda *_: False)
    slow, _ = store.create(_spec("same"), owner="ana", team="vision", now=12.5)
    for job_id in (fast, second):
        mine, theirs = _rows(db, job_id), _rows(db, slow)
        assert mine["job"].pop("client_request_id") is None
        theirs["job"].pop("client_request_id")
        assert mine == theirs
    assert store.get(fast).spec == store.get(slow).spec == _spec("same")


def test_rows_of_other_keys_are_left_to_sqlalchemy(db: Database) -> None:
    table = Table("t", MetaData(), Column("a", Integer), Column("b", String))
    with db.write() as conn:
        assert not driver_writes.run_many(conn, insert(table), [{"a": 1}, {"a": 1, "b": "x"}])
        assert not driver_writes.run_many(conn, insert(table), [{"a": 1}, {"b": "x"}])


def test_a_default_computed_in_python_is_left_to_sqlalchemy(db: Database) -> None:
    counter = iter(range(100))
    table = Table("t", MetaData(), Column("a", Integer, default=lambda: next(counter)),
                  Column("b", String))
    with db.write() as conn:
        assert not driver_writes.run_many(conn, insert(table), [{"b": "x"}])


def test_a_batch_goes_in_whole_and_in_order(db: Database) -> None:
    store = JobStore(db)
    job_id, _ = store.create(_spec("first"))
    rows = [{"job_id": job_id, "from_state": "WAITING", "to_state": "WAITING", "time": float(i),
             "reason": f"r{i}"} for i in range(5)]
    with db.write() as conn:
        assert driver_writes.run_many(conn, _INSERT_EVENT, rows)
    assert [e.reason for e in store.events(job_id)] == ["submitted", "r0", "r1", "r2", "r3",
                                                        "r4"]


def test_a_none_goes_through_its_columns_conversion_as_sqlalchemy_sends_it(
        db: Database) -> None:
    """A JSON column given None stores JSON null either way, not SQL NULL on one path."""
    from sqlalchemy import JSON

    table = Table("driver_json", MetaData(), Column("k", Integer), Column("v", JSON))
    table.create(db.engine)
    with db.write() as conn:
        assert driver_writes.run_many(conn, insert(table), [{"k": 1, "v": None}])
        conn.execute(insert(table), [{"k": 2, "v": None}])
    with db.read() as conn:
        stored = conn.exec_driver_sql("SELECT k, v IS NULL FROM driver_json ORDER BY k").all()
    assert [tuple(r) for r in stored] == [(1, False), (2, False)]


def test_a_driver_error_in_a_batch_reaches_its_caller_as_sqlalchemys(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch ran on the driver's cursor and failed there (a duplicate key); its writer
    is retried alone through SQLAlchemy and hears SQLAlchemy's IntegrityError, nothing
    written."""
    from sqlalchemy.exc import IntegrityError

    from trainyard.store.schema import dataset_versions

    outcomes: list[object] = []
    real = driver_writes.run_many

    def watched(conn: Any, statement: Any, rows: Any) -> bool:
        try:
            outcomes.append(real(conn, statement, rows))
        except Exception as exc:
            outcomes.append(type(exc).__module__)
            raise
        return bool(outcomes[-1])

    monkeypatch.setattr("trainyard.store.group_commit.run_many", watched)
    row = {"name": "d", "version": "v" * 64, "size_bytes": 1, "file_count": 1, "path": "/x",
           "created_at": 0.0}
    with pytest.raises(IntegrityError):
        db.group.execute([(insert(dataset_versions), [row, row])])
    assert outcomes and outcomes[0] in ("sqlite3", "psycopg.errors")  # the driver's own
    with db.read() as conn:
        assert conn.execute(select(dataset_versions.c.name)).all() == []


def _moved_rows(db: Database, job_id: str) -> dict[str, Any]:
    found = _rows(db, job_id)
    with db.read() as conn:
        found["runs"] = [dict(r) for r in conn.execute(
            select(runs).where(runs.c.job_id == job_id)).mappings()]
    return found


def _moves(store: JobStore, job_id: str) -> None:
    store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="launch", now=20.0,
                     executor="local", handle="h-1")
    store.mark_running(job_id, reason="started", now=21.5)
    store.transition(job_id, JobState.RUNNING, JobState.SUCCEEDED, reason="exit 0",
                     now=30.25, exit_code=0, message="done")


def test_a_jobs_moves_store_the_same_rows_either_way(db: Database,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    store = JobStore(db)
    fast, _ = store.create(_spec("moved"), now=12.5)
    ran: list[object] = []
    real = driver_writes.run_one

    def counted(conn: Any, statement: Any, row: Any) -> int | None:
        matched = real(conn, statement, row)
        ran.append(matched)
        return matched

    monkeypatch.setattr(driver_writes, "run_one", counted)
    _moves(store, fast)
    # Each move's update, event and run write went to the driver's cursor, one row each.
    assert len(ran) >= 9 and all(matched == 1 for matched in ran)
    monkeypatch.setattr(driver_writes, "run_one", lambda *_: None)
    slow, _ = store.create(_spec("moved"), now=12.5)
    _moves(store, slow)
    mine, theirs = _moved_rows(db, fast), _moved_rows(db, slow)
    for found in (mine, theirs):
        found["job"].pop("client_request_id")
        for run in found["runs"]:
            run.pop("job_id")
            run.pop("id", None)
    assert mine == theirs
    assert [r["state"] for r in mine["runs"]] == ["SUCCEEDED"]
    assert mine["runs"][0]["started_at"] == 21.5 and mine["runs"][0]["exit_code"] == 0


def test_a_move_that_finds_its_job_moved_already_changes_nothing(db: Database) -> None:
    store = JobStore(db)
    job_id, _ = store.create(_spec("raced"), now=1.0)
    with pytest.raises(StaleState):
        store.transition(job_id, JobState.LAUNCHING, JobState.RUNNING, reason="late", now=2.0)
    assert store.get(job_id).state is JobState.WAITING
    assert [e.reason for e in store.events(job_id)] == ["submitted"]


def test_a_driver_error_of_one_row_reaches_its_caller_as_sqlalchemys(db: Database) -> None:
    """A run row for an attempt that has one already: the driver's duplicate key, raised as
    SQLAlchemy's IntegrityError (what callers and the API's sentences know), with the
    driver's own error as its cause."""
    store = JobStore(db)
    job_id, _ = store.create(_spec("twice"), now=1.0)
    store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="launch", now=2.0,
                     executor="local", handle="h")
    with db.read() as conn:
        row = dict(conn.execute(select(runs).where(runs.c.job_id == job_id)).mappings().one())
    row.pop("id", None)
    with pytest.raises(IntegrityError) as raised, db.write() as conn:
        driver_writes.execute(conn, insert(runs), row)
    assert type(raised.value.orig).__module__ in ("sqlite3", "psycopg.errors")


def test_a_value_its_column_cannot_take_is_refused_as_a_statement_error(db: Database) -> None:
    """A JSON column given what JSON cannot hold: StatementError naming the cause on both
    dialects, though psycopg serializes JSON as it executes (where SQLAlchemy's own path
    lets the driver's TypeError through), and nothing written."""
    from sqlalchemy import JSON
    from sqlalchemy.exc import StatementError

    table = Table("driver_bad_json", MetaData(), Column("k", Integer), Column("v", JSON))
    table.create(db.engine)
    with pytest.raises(StatementError) as raised, db.write() as conn:
        driver_writes.run_one(conn, insert(table), {"k": 1, "v": object()})
    assert "TypeError" in str(raised.value) and "JSON serializable" in str(raised.value)
    with pytest.raises((StatementError, TypeError)), db.write() as conn:
        conn.execute(insert(table), {"k": 2, "v": object()})
    with db.read() as conn:
        assert conn.execute(select(table.c.k)).all() == []


def test_many_rows_written_on_the_driver_fail_as_sqlalchemys(db: Database) -> None:
    """execute_many: rows of one set of keys go to the driver's cursor in order, and a
    duplicate key there is SQLAlchemy's IntegrityError, the driver's own as its cause."""
    table = Table("driver_many", MetaData(), Column("k", Integer, primary_key=True),
                  Column("v", Integer, nullable=True))
    table.create(db.engine)
    with db.write() as conn:
        driver_writes.execute_many(conn, insert(table), [{"k": 1, "v": 10}, {"k": 2, "v": None}])
        driver_writes.execute_many(conn, insert(table), [])
    with pytest.raises(IntegrityError) as raised, db.write() as conn:
        driver_writes.execute_many(conn, insert(table), [{"k": 5, "v": 0}, {"k": 1, "v": 0}])
    assert type(raised.value.orig).__module__ in ("sqlite3", "psycopg.errors")
    with db.read() as conn:
        stored = conn.execute(select(table.c.k, table.c.v).order_by(table.c.k)).all()
    assert [tuple(r) for r in stored] == [(1, 10), (2, None)]


def test_many_rows_that_need_sqlalchemy_go_through_it(db: Database) -> None:
    """execute_many where the statement needs SQLAlchemy at run time (a default computed in
    Python): the rows go through Connection.execute, which fills that default."""
    counter = iter(range(100, 200))
    table = Table("driver_many_default", MetaData(),
                  Column("a", Integer, default=lambda: next(counter)), Column("b", String))
    table.create(db.engine)
    with db.write() as conn:
        driver_writes.execute_many(conn, insert(table), [{"b": "x"}, {"b": "y"}])
    with db.read() as conn:
        stored = conn.execute(select(table.c.a, table.c.b).order_by(table.c.b)).all()
    assert [tuple(r) for r in stored] == [(100, "x"), (101, "y")]
