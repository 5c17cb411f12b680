"""Engines for SQLite (embedded default) and PostgreSQL, and schema migration at start."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url

from trainyard.store.feed import ChangeFeed
from trainyard.store.group_commit import GroupCommitter
from trainyard.store.telemetry import NO_STORE_TELEMETRY, StoreTelemetry

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def sqlite_url(data_dir: Path) -> str:
    return f"sqlite:///{(data_dir / 'trainyard.db').resolve()}"


def normalize_url(url: str) -> str:
    """Accept plain postgresql:// URLs and use the psycopg 3 driver for them."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


class Database:
    """One engine, plus the rules for writing to it safely from many threads."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.is_sqlite = engine.dialect.name == "sqlite"
        # SQLite has one writer; taking turns in-process avoids SQLITE_BUSY round trips.
        self._write_lock: contextlib.AbstractContextManager[Any] = (
            threading.Lock() if self.is_sqlite else contextlib.nullcontext()
        )
        self.feed = ChangeFeed()
        self.group = GroupCommitter(self.write)
        self._lease: Any = None  # what holds claim_exclusive's lock
        # Told each commit's time and each job's move; the server's metrics replace it.
        self.telemetry: StoreTelemetry = NO_STORE_TELEMETRY

    @contextlib.contextmanager
    def write(self, *, synced: bool = True) -> Iterator[Connection]:
        """A transaction that commits on success and rolls back on any error. The
        telemetry hears how long a committed one took, from its start (not the wait for
        SQLite's writer lock) to its commit; group commits come through here too.

        `synced=False`: the commit survives a crash of this process (it is in the log) but
        does not wait for the disk, so a power cut may undo it until the next synced commit
        (the log is written in order, so that one carries it). Only for facts the service
        can tell again from their source after such a cut: a process seen started, which
        recovery polls again; metrics with the file offset they advance; a finished job's
        model version, which its final state's synced commit follows. And for one whose cut
        also undoes what it records: a local job's launch, on a store that loses commits
        only with this host (Launcher.launching_synced)."""
        with self._write_lock:
            began = time.perf_counter()
            if synced:
                with self.engine.begin() as conn:
                    yield conn
            else:
                with self._unsynced() as conn:
                    yield conn
            self.telemetry.committed(time.perf_counter() - began)

    @property
    def unsynced_lost_only_with_host(self) -> bool:
        """Whether an unsynced commit is undone only when this host goes down: SQLite's log
        is a file of this host, which outlives this process; a PostgreSQL server can crash
        and restart on its own, taking its unflushed commits with it."""
        return self.is_sqlite

    @contextlib.contextmanager
    def _unsynced(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            if not self.is_sqlite:
                with conn.begin():
                    conn.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")
                    yield conn
                return
            # The driver opens its transaction at the first write, so the setting, made on
            # the connection before it, holds for this commit; the pool's next user gets
            # FULL again whatever happened.
            raw = conn.connection.dbapi_connection
            assert raw is not None
            raw.execute("PRAGMA synchronous=NORMAL")
            try:
                with conn.begin():
                    yield conn
            finally:
                try:
                    raw.execute("PRAGMA synchronous=FULL")
                except sqlite3.Error:
                    conn.invalidate()  # closed, never handed out again unsynced

    @contextlib.contextmanager
    def read(self, conn: Connection | None = None) -> Iterator[Connection]:
        """A connection for reads; with `conn`, that one, so a caller can group its reads."""
        if conn is not None:
            yield conn
            return
        with self.engine.connect() as fresh:
            yield fresh

    def claim_exclusive(self) -> None:
        """On SQLite, make this process the only one running a tracker on this database, for
        as long as it lives: two trackers would each adopt, poll and fail the other's jobs.
        Servers sharing a PostgreSQL all serve and elect the one that tracks by a lease
        (store/lease.py): nothing to claim here."""
        if self.is_sqlite:
            path = make_url(self.engine.url).database
            self._lease = _flock(Path(f"{path}.lock"), f"the database {path}")

    def confirm_lease(self) -> None:
        """Before a side effect outside the store (a launch, a sweep), raise if this process
        may no longer act alone; nothing to confirm for a database no lease fences."""

    def close(self) -> None:
        self.group.close()
        if self._lease is not None:
            self._lease.close()
            self._lease = None
        self.engine.dispose()


class AlreadyRunning(Exception):
    """Another server holds the exclusive claim on this database or data directory."""


def _flock(path: Path, what: str) -> IO[str]:
    """An exclusive, non-blocking lock on path, held while the returned file stays open."""
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise AlreadyRunning(f"another Trainyard server (pid {holder}) is already using "
                             f"{what}") from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def _configure_sqlite(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    # FULL: a commit is on disk before the caller hears it succeeded (all but those of
    # Database.write(synced=False), which set NORMAL for themselves).
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def make_engine(url: str) -> Engine:
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(
            # Enough pooled connections for every concurrent handler: a connection opened
            # past the pool is closed on return and its set-up paid again next time.
            url, connect_args={"check_same_thread": False, "timeout": 10}, pool_size=64,
            max_overflow=64,
        )
        event.listen(engine, "connect", _configure_sqlite)
        return engine
    return create_engine(url, pool_size=32, max_overflow=32, pool_pre_ping=True)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # Serialize concurrent starts of several servers on one database.
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7210401)")
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def open_database(url: str) -> Database:
    engine = make_engine(url)
    if engine.dialect.name == "sqlite":
        db_path = make_url(engine.url).database
        if db_path:
            Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    migrate(engine)
    return Database(engine)
