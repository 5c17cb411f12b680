"""Reads on the driver's cursor give exactly the rows SQLAlchemy's execute gives, on both
dialects (converted by the same result processors, keyed the same ways), raise what it
raises, and leave to SQLAlchemy what their plans cannot carry."""

from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, bindparam, event, literal, select
from sqlalchemy.exc import DBAPIError, StatementError

from trainyard.domain.spec import DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.store import driver_reads, prepared
from trainyard.store.db import Database
from trainyard.store.dependencies import DependencyStore
from trainyard.store.jobs import JobFilter, JobStore
from trainyard.store.predictions import PredictionStore
from trainyard.store.records import JobRecord
from trainyard.store.schema import jobs

SPEC = JobSpec(name="read", command="echo 'a \"quoted\" $x'", labels={"team": "vision"},
               hyperparameters={"LR": "0.1", "NOTE": "ünïcode\nline"},
               resources=Resources(cpus=1.5, memory_mb=512, gpus=0),
               dataset=DatasetRef("digits", "v" * 64), retry_on_failure=True,
               retry_exit_codes=(3, 4), max_attempts=2)


class Statements:
    """The statements SQLAlchemy itself runs on the engine (the driver's path fires none)."""

    def __init__(self, db: Database) -> None:
        self.count = 0
        event.listen(db.engine, "before_cursor_execute", self._seen)

    def _seen(self, *args: object) -> None:
        self.count += 1


def _seqs(store: JobStore, count: int) -> list[int]:
    ids = [store.create(SPEC, owner="ana", team="vision", now=10.0 + i)[0]
           for i in range(count)]
    return [store.get(job_id).seq for job_id in ids]


def test_a_page_reads_the_same_rows_as_sqlalchemy_and_runs_none_of_its_statements(
        db: Database) -> None:
    store = JobStore(db)
    seqs = _seqs(store, 3)
    with db.write() as conn:  # a true flag and a float beside the nulls of the others
        conn.execute(jobs.update().where(jobs.c.seq == seqs[0]).values(
            cancel_requested=True, started_at=3.5))
    params = {"b_seqs": seqs[:2], "b_states": [JobState.WAITING.value]}
    seen = Statements(db)
    with db.read() as conn:
        mine = driver_reads.rows(conn, prepared.JOBS_BY_SEQ, params)
        assert seen.count == 0
        theirs = conn.execute(prepared.JOBS_BY_SEQ, params).all()
    assert len(mine) == 2
    for a, b in zip(mine, theirs, strict=True):
        assert a._mapping == dict(b._mapping)
        assert tuple(a) == tuple(b)
        assert [type(v) for v in a] == [type(v) for v in b]  # 1 is not True, nor 1.0
        assert (a.hyperparameters, a.retry_on_failure, a.cpus) == \
            (SPEC.hyperparameters, b.retry_on_failure, 1.5)
        assert JobRecord.from_row(a) == JobRecord.from_row(b)


def test_each_length_of_a_list_reads_its_own_rows(db: Database) -> None:
    """A list is compiled for the next power of two at or above its length, its last item
    repeated: 3 and 4 items share a plan, and each reads exactly its own rows."""
    store = JobStore(db)
    seqs = _seqs(store, 5)
    with db.read() as conn:
        for wanted in ([], seqs[:1], seqs[1:3], seqs[:3], seqs[1:], seqs, seqs[2:]):
            found = driver_reads.rows(conn, prepared.JOBS_BY_SEQ, {
                "b_seqs": wanted, "b_states": [JobState.WAITING.value]})
            assert [r.seq for r in found] == sorted(wanted, reverse=True)
        # A state no job is in: the second list is read as given too.
        assert driver_reads.rows(conn, prepared.JOBS_BY_SEQ, {
            "b_seqs": seqs, "b_states": [JobState.RUNNING.value]}) == []

    def plan(length: int) -> object:
        return driver_reads._plan(db.engine.dialect, prepared.JOBS_BY_SEQ, {
            "b_seqs": seqs[:1] * length, "b_states": [JobState.WAITING.value]})

    assert plan(3) is plan(4)
    assert plan(4) is not plan(5)


def test_a_long_list_goes_through_sqlalchemy_with_the_same_result(db: Database) -> None:
    store = JobStore(db)
    seqs = _seqs(store, 3)
    many = seqs + list(range(10**6, 10**6 + driver_reads.EXPANDED_MAX))
    seen = Statements(db)
    with db.read() as conn:
        found = driver_reads.rows(conn, prepared.JOBS_BY_SEQ, {
            "b_seqs": many, "b_states": [JobState.WAITING.value]})
    assert seen.count == 1
    assert [r.seq for r in found] == sorted(seqs, reverse=True)
    assert found[0]._mapping["hyperparameters"] == SPEC.hyperparameters


def test_scalars_of_a_union_are_its_first_column(db: Database) -> None:
    store = JobStore(db)
    seqs = _seqs(store, 3)
    statement = prepared.newest_seqs_by_state(2, False, False, 0, False)
    with db.read() as conn:
        found = driver_reads.scalars(conn, statement, {
            "b_limit": 2, "b_state_0": JobState.WAITING.value,
            "b_state_1": JobState.RUNNING.value})
    assert sorted(found) == sorted(seqs)[-2:]


def test_a_column_that_cannot_be_an_attribute_is_read_by_sqlalchemy(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    _seqs(JobStore(db), 1)
    statement = select(jobs.c.seq.label("_private"), literal(1).label("class"))
    seen = Statements(db)

    def not_here(*args: object) -> None:
        raise AssertionError("ran on the driver's cursor first")

    monkeypatch.setattr(driver_reads, "as_sqlalchemy_errors", not_here)
    with db.read() as conn:
        found = driver_reads.rows(conn, statement, {})
    assert seen.count == 1
    assert found[0]._mapping["class"] == 1


def test_a_driver_error_reaches_its_caller_as_sqlalchemys(db: Database) -> None:
    missing = Table("no_such_table", MetaData(), Column("n", Integer))
    statement = select(missing.c.n).where(missing.c.n.in_(bindparam("b_ns", expanding=True)))
    with db.read() as conn, pytest.raises(DBAPIError) as caught:
        driver_reads.rows(conn, statement, {"b_ns": [1, 2]})
    assert "no_such_table" in str(caught.value)
    with db.read() as conn:  # the pool's connection is fine for the next read
        assert driver_reads.scalars(conn, select(literal(7).label("n")), {}) == [7]


def test_a_read_in_a_write_sees_the_writes_own_rows(db: Database) -> None:
    store = JobStore(db)
    seqs = _seqs(store, 1)
    with db.write() as conn:
        conn.execute(jobs.update().where(jobs.c.seq == seqs[0]).values(priority=42))
        found: list[Any] = driver_reads.rows(conn, prepared.JOBS_BY_SEQ, {
            "b_seqs": seqs, "b_states": [JobState.WAITING.value]})
        assert found[0].priority == 42


def test_the_reads_polled_and_made_at_every_pass_run_no_statement_of_sqlalchemys(
        db: Database) -> None:
    """Each caller switched to the driver's cursor stays on it: a fallback to SQLAlchemy,
    which would pass every other test here, fails this one."""
    store = JobStore(db)
    job_id = store.create(SPEC, owner="ana", team="vision", now=10.0)[0]
    waiting = [JobState.WAITING]
    several = [JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING]
    seen = Statements(db)
    reads: dict[str, Any] = {
        "get": store.get(job_id).id,
        "active": store.active()[0],
        "in_states": [r.id for r in store.in_states(waiting)],
        "queued": [q.id for q in store.queued()],
        "waiting_since": list(store.waiting_since(10**9)),
        "one state": [r.id for r in store.list(JobFilter(waiting), page_size=10)[0]],
        "several": [r.id for r in store.list(JobFilter(several, owners=frozenset({"ana"}),
                                                        labels={"team": "vision"}),
                                              page_size=10)[0]],
        "predictions": PredictionStore(db).many([job_id]),
        "needs": DependencyStore(db).needs_of([job_id]),
    }
    assert seen.count == 0
    assert reads == {"get": job_id, "active": [], "in_states": [job_id], "queued": [job_id],
                     "waiting_since": [job_id], "one state": [job_id], "several": [job_id],
                     "predictions": {}, "needs": {}}


def test_a_parameter_missing_from_the_call_is_named_as_sqlalchemy_names_it(
        db: Database) -> None:
    statement = select(jobs.c.seq).where(jobs.c.seq.in_(bindparam("b_seqs", expanding=True)),
                                         jobs.c.state == bindparam("b_state"))
    with db.read() as conn, pytest.raises(StatementError) as caught:
        driver_reads.rows(conn, statement, {"b_seqs": [1, 2]})
    assert "b_state" in str(caught.value)


def test_a_name_the_paramstyle_escapes_reads_the_same_rows(db: Database) -> None:
    seqs = _seqs(JobStore(db), 2)
    statement = select(jobs.c.seq).where(jobs.c.seq.in_(bindparam("b.seqs", expanding=True)),
                                         jobs.c.state == bindparam("b.state"))
    params = {"b.seqs": seqs, "b.state": JobState.WAITING.value}
    with db.read() as conn:
        assert sorted(driver_reads.scalars(conn, statement, params)) == seqs
        assert sorted(conn.execute(statement, params).scalars()) == seqs
