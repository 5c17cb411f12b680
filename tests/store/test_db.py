"""Database.write: synced and unsynced commits, on both dialects."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Connection, select

from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.store.db import Database
from trainyard.store.jobs import JobStore
from trainyard.store.schema import job_events, jobs

SPEC = JobSpec(name="job", command="true")


def synchronous(raw: Any, db: Database) -> str:
    """The setting a driver connection's next commit obeys."""
    if db.is_sqlite:
        value = raw.execute("PRAGMA synchronous").fetchone()[0]
        return {0: "off", 1: "normal", 2: "full", 3: "extra"}[value]
    with raw.cursor() as cur:
        cur.execute("SHOW synchronous_commit")
        value = cur.fetchone()[0]
    raw.rollback()  # the SHOW began a transaction of the driver's own
    return str(value)


def driver_connection(conn: Connection) -> Any:
    return conn.connection.dbapi_connection


def test_an_unsynced_commit_waits_for_no_disk_and_its_connection_syncs_again(
        db: Database) -> None:
    with db.write(synced=False) as conn:
        raw = driver_connection(conn)
        if db.is_sqlite:
            inside = synchronous(raw, db)
        else:
            inside = str(conn.exec_driver_sql("SHOW synchronous_commit").scalar_one())
    assert inside == ("normal" if db.is_sqlite else "off")
    # The very connection that wrote, back in the pool, commits synced again.
    assert synchronous(raw, db) == ("full" if db.is_sqlite else "on")


def test_a_failed_unsynced_write_rolls_back_and_leaves_its_connection_synced(
        db: Database) -> None:
    store = JobStore(db)
    job_id, _ = store.create(SPEC)
    with pytest.raises(RuntimeError), db.write(synced=False) as conn:
        raw = driver_connection(conn)
        conn.execute(jobs.update().where(jobs.c.id == job_id).values(name="changed"))
        raise RuntimeError("midway")
    assert store.get(job_id).spec.name == SPEC.name
    assert synchronous(raw, db) == ("full" if db.is_sqlite else "on")


def test_a_start_is_recorded_unsynced_with_its_event(db: Database) -> None:
    store = JobStore(db)
    job_id, _ = store.create(SPEC)
    store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                     attempt=1, handle="h-1")
    store.mark_running(job_id, reason="process started", now=123.0)
    got = store.get(job_id)
    assert got.state is JobState.RUNNING and got.started_at == 123.0
    with db.read() as conn:
        moves = conn.execute(select(job_events.c.to_state).where(
            job_events.c.job_id == job_id).order_by(job_events.c.id)).scalars().all()
    assert moves[-1] == JobState.RUNNING.value
