"""Word between the servers sharing one PostgreSQL (LISTEN/NOTIFY): a standby that stored a
submit or a cancel tells the leader, whose tracker then wakes at once instead of at its next
period."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg
from sqlalchemy import text

from trainyard.store.db import Database

log = logging.getLogger(__name__)

CHANNEL = "trainyard_tracker"
SUBMITTED, CANCELLED, EXITED = "submitted", "cancelled", "exited"
_NOTIFY = text(f"SELECT pg_notify('{CHANNEL}', :what)")
RETRY_S = 1.0  # between tries to reconnect the listener


class Notices:
    """Sends notices beside the callers (a submit does not wait for one) and hears others'.
    Notices sent while one is on its way go together: one round trip for a burst."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._due = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self, heard: Callable[[str], None]) -> None:
        for target, name in ((self._send_loop, "notices-out"), (self._listen_loop, "notices-in")):
            thread = threading.Thread(target=target, args=(heard,), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def send(self, what: str) -> None:
        with self._lock:
            self._pending.add(what)
        self._due.set()

    def stop(self) -> None:
        self._stop.set()
        self._due.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def _send_loop(self, _heard: Callable[[str], None]) -> None:
        while not self._stop.is_set():
            self._due.wait()
            self._due.clear()
            with self._lock:
                pending, self._pending = self._pending, set()
            if not pending or self._stop.is_set():
                continue
            try:
                with self.db.write() as conn:
                    for what in sorted(pending):
                        conn.execute(_NOTIFY, {"what": what})
            except Exception as exc:  # the leader's own period still finds the work
                log.warning("could not notify the leader: %s", exc)

    def _listen_loop(self, heard: Callable[[str], None]) -> None:
        url = self.db.engine.url.set(drivername="postgresql")
        conninfo = url.render_as_string(hide_password=False)
        while not self._stop.is_set():
            try:
                with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    while not self._stop.is_set():
                        for notice in conn.notifies(timeout=RETRY_S):
                            heard(notice.payload)
            except Exception as exc:  # the database restarting, say: listen again soon
                if not self._stop.is_set():
                    log.debug("listening for notices: %s", exc)
                    self._stop.wait(RETRY_S)
