"""Group commit: concurrent writers share one transaction and one sync to disk.

Each caller still returns only after its own rows are committed, so durability is the same
as a transaction per call; what changes is that 32 concurrent submits cost one commit and
one multi-row insert per table, instead of 32 transactions taken in turn.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import Connection, Executable

MAX_BATCH = 256

# One write: a statement (insert or update) and the rows of parameters for it. Within a
# batch every caller's rows for one statement go in together, in the order statements were
# first seen: parents before children when callers list them that way.
Write = tuple[Executable, Sequence[dict[str, Any]]]


class _Work:
    __slots__ = ("done", "error", "writes")

    def __init__(self, writes: Sequence[Write]) -> None:
        self.writes = writes
        self.done = threading.Event()
        self.error: BaseException | None = None


class GroupCommitter:
    def __init__(self, transaction: Callable[[], AbstractContextManager[Connection]]) -> None:
        self._transaction = transaction
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def execute(self, writes: Sequence[Write]) -> None:
        """Run the statements for their rows in a shared transaction; return once it has
        committed."""
        self._ensure_thread()
        work = _Work(writes)
        self._queue.put(work)
        work.done.wait()
        if work.error is not None:
            raise work.error

    def close(self) -> None:
        with self._lock:
            if self._thread is not None:
                self._queue.put(None)
                self._thread.join(timeout=10)
                self._thread = None

    def _ensure_thread(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._loop, name="group-commit",
                                                    daemon=True)
                    self._thread.start()

    def _loop(self) -> None:
        while True:
            batch, stop = self._drain()
            if batch:
                self._commit(batch)
            if stop:
                return

    def _drain(self) -> tuple[list[_Work], bool]:
        first = self._queue.get()
        if first is None:
            return [], True
        batch = [first]
        while len(batch) < MAX_BATCH:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _commit(self, batch: list[_Work]) -> None:
        by_statement: dict[int, tuple[Executable, list[dict[str, Any]]]] = {}
        for work in batch:
            for statement, rows in work.writes:
                by_statement.setdefault(id(statement), (statement, []))[1].extend(rows)
        try:
            with self._transaction() as conn:
                for statement, rows in by_statement.values():
                    if rows:
                        conn.execute(statement, rows)
        except Exception:
            # One bad row (say a duplicate key) must not fail its neighbours: retry alone.
            for work in batch:
                self._commit_one(work)
            return
        for work in batch:
            work.done.set()

    def _commit_one(self, work: _Work) -> None:
        try:
            with self._transaction() as conn:
                for statement, rows in work.writes:
                    if rows:
                        conn.execute(statement, list(rows))
        except BaseException as exc:  # handed to the caller, who re-raises it
            work.error = exc
        work.done.set()
