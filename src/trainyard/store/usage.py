"""Fair-share usage by queue, kept so that a restart does not forget who used what."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import delete, insert, select

from trainyard.store.db import Database
from trainyard.store.schema import queue_usage


class UsageStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def load(self) -> tuple[dict[str, float], float | None]:
        """The usage last saved and when it was saved (None if never)."""
        with self.db.read() as conn:
            rows = conn.execute(select(queue_usage)).all()
        if not rows:
            return {}, None
        return {r.queue: r.usage for r in rows}, max(r.updated_at for r in rows)

    def save(self, usage: Mapping[str, float], at: float) -> None:
        """Replace what is saved with this usage, as of `at`, in one transaction."""
        with self.db.write() as conn:
            conn.execute(delete(queue_usage))
            if usage:
                conn.execute(insert(queue_usage), [
                    {"queue": queue, "usage": value, "updated_at": at}
                    for queue, value in usage.items()])
