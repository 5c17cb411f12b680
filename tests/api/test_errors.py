"""A store that cannot answer now (its database away, its disk full) is UNAVAILABLE with a
sentence that says to retry; anything else unexpected stays INTERNAL."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from trainyard.api.errors import DATABASE_AWAY, DISK_FULL, grpc_errors, unavailable
from trainyard.store.db import open_database


class Aborted(Exception):
    pass


class Context:
    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)


def wrapped(error: BaseException) -> OperationalError:
    return OperationalError("INSERT INTO jobs ...", {}, error)


@pytest.mark.parametrize(("error", "sentence"), [
    (wrapped(sqlite3.OperationalError("database or disk is full")), DISK_FULL),
    (wrapped(psycopg.errors.DiskFull("could not extend file: No space left on device")),
     DISK_FULL),
    (OSError(errno.ENOSPC, "No space left on device"), DISK_FULL),
    (wrapped(psycopg.OperationalError("connection failed: Connection refused")),
     DATABASE_AWAY),
    (wrapped(sqlite3.OperationalError("database is locked")), DATABASE_AWAY),
    (wrapped(sqlite3.OperationalError("no such table: jobs")), None),
    (ValueError("a bug"), None),
])
def test_what_a_retry_may_mend_is_told_apart(error: BaseException, sentence: str | None) -> None:
    assert unavailable(error) == sentence
    assert sentence is None or "retry" in sentence


def test_a_servicer_whose_database_is_away_answers_unavailable() -> None:
    class Servicer:
        @grpc_errors
        def Train(self, request: Any, context: Any) -> None:
            raise wrapped(psycopg.OperationalError("server closed the connection"))

        @grpc_errors
        def Broken(self, request: Any, context: Any) -> None:
            raise KeyError("bug")

    with pytest.raises(Aborted) as refused:
        Servicer().Train(None, Context())
    assert refused.value.args == (grpc.StatusCode.UNAVAILABLE, DATABASE_AWAY)
    with pytest.raises(Aborted) as broken:
        Servicer().Broken(None, Context())
    assert broken.value.args[0] is grpc.StatusCode.INTERNAL


def test_a_stopped_postgresql_is_told_apart_from_a_bug(tmp_path: Path) -> None:
    """The real error of a database that went away, not a hand-made one."""
    from tests.postgres import ThrowawayPostgres, find_bindir

    bindir = find_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed")
    pg = ThrowawayPostgres(bindir)
    pg.start()
    db = open_database(pg.new_database())
    try:
        pg.stop()
        with pytest.raises(Exception) as gone, db.read() as conn:
            conn.exec_driver_sql("SELECT 1")
        assert unavailable(gone.value) == DATABASE_AWAY
    finally:
        db.engine.dispose()
    assert unavailable(wrapped(sqlite3.OperationalError("no such column: x"))) is None
