"""Group commit: concurrent writers share one transaction and one sync to disk.

Each caller still returns only after its own rows are committed, so durability is the same
as a transaction per call; what changes is that 32 concurrent submits cost one commit and
one multi-row insert per table, instead of 32 transactions taken in turn.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import Connection, Executable

from trainyard.store.driver_writes import run_many

MAX_BATCH = 256

# One write: a statement (insert or update) and the rows of parameters for it. Within a
# batch every caller's rows for one statement go in together, in the order statements were
# first seen: parents before children when callers list them that way.
Write = tuple[Executable, Sequence[dict[str, Any]]]


class _Work:
    __slots__ = ("done", "error", "wake", "writes")

    def __init__(self, writes: Sequence[Write]) -> None:
        self.writes = writes
        self.done = False
        self.error: BaseException | None = None
        self.wake = threading.Event()  # set when done, or when handed the lead


class GroupCommitter:
    """Leader-based: a caller that finds no commit in progress commits everything queued,
    its own work included. Whoever queued meanwhile waits on its own event and is woken
    once: when its work is committed, or to lead the next batch. No thread of its own, so
    a lone caller pays no hand-off."""

    def __init__(self, transaction: Callable[[], AbstractContextManager[Connection]]) -> None:
        self._transaction = transaction
        self._lock = threading.Lock()
        self._pending: list[_Work] = []
        self._leading = False

    def execute(self, writes: Sequence[Write]) -> None:
        """Run the statements for their rows in a shared transaction; return once it has
        committed."""
        work = _Work(writes)
        with self._lock:
            self._pending.append(work)
            lead = not self._leading
            self._leading = True
        if not lead:
            work.wake.wait()
        while not work.done:
            self._lead_one_batch(work)
        if work.error is not None:
            raise work.error

    def _lead_one_batch(self, own: _Work) -> None:
        with self._lock:
            batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
        try:
            self._commit(batch)
        except BaseException as exc:  # even an interrupt must not strand the waiters
            for work in batch:
                work.error = work.error or exc
            with self._lock:
                if own in self._pending:
                    self._pending.remove(own)  # its caller is leaving with the error
            self._finish(batch, hand_off=True)
            raise
        self._finish(batch, hand_off=own in batch)

    def _finish(self, batch: list[_Work], *, hand_off: bool) -> None:
        for done in batch:
            done.done = True
            done.wake.set()
        with self._lock:
            if not self._pending:
                self._leading = False
            elif hand_off:
                self._pending[0].wake.set()  # it leads the next batch
            # else: the leader's own work is still queued (a long queue): it leads again

    def close(self) -> None:
        """Nothing to stop: commits run on their callers' threads."""

    def _commit(self, batch: list[_Work]) -> None:
        by_statement: dict[int, tuple[Executable, list[dict[str, Any]]]] = {}
        for work in batch:
            for statement, rows in work.writes:
                by_statement.setdefault(id(statement), (statement, []))[1].extend(rows)
        try:
            with self._transaction() as conn:
                for statement, rows in by_statement.values():
                    if rows and not run_many(conn, statement, rows):
                        conn.execute(statement, rows)
        except Exception:
            # One bad row (say a duplicate key) must not fail its neighbours: retry alone.
            for work in batch:
                self._commit_one(work)

    def _commit_one(self, work: _Work) -> None:
        try:
            with self._transaction() as conn:
                for statement, rows in work.writes:
                    if rows:
                        conn.execute(statement, list(rows))
        except BaseException as exc:  # handed to the caller, who re-raises it
            work.error = exc
