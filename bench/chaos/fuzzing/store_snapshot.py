"""What a request could change in the store, read cheaply and read-only: row counts of what
callers create, and a digest of the rows no background loop rewrites. Equal snapshots around
a refused request mean it changed nothing."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

# Tables only requests write (the tracker never does), digested whole.
DIGESTED = ("users", "teams", "team_members", "api_tokens", "queue_access",
            "dataset_versions", "model_aliases", "model_alias_history")
# The columns of a job that only requests write: its existence, spec and a cancel asked.
JOB_COLUMNS = "id, name, owner, queue, priority, command, cancel_requested"
COUNTED = ("jobs", "sweeps", "job_labels")


class StoreSnapshot:
    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)
        return self._conn

    def take(self) -> dict[str, str]:
        db = self._db()
        out: dict[str, str] = {}
        with db:  # one read transaction: a consistent view
            for table in COUNTED:
                out[table] = str(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            for table in DIGESTED:
                out[table] = _digest(db.execute(f"SELECT * FROM {table}"))
            out["jobs:requested"] = _digest(db.execute(
                f"SELECT {JOB_COLUMNS} FROM jobs ORDER BY seq"))
        return out

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def _digest(rows: sqlite3.Cursor) -> str:
    h = hashlib.sha256()
    for row in sorted(map(repr, rows)):
        h.update(row.encode())
    return h.hexdigest()[:16]


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(k for k in before if before[k] != after.get(k))
