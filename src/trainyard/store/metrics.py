"""Metric time series, ingested exactly once per line of a job's METRICS_PATH."""

from __future__ import annotations

import time
from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, func, insert, select, update

from trainyard.store.db import Database
from trainyard.store.records import MetricPoint
from trainyard.store.schema import jobs, metrics

_LATEST = select(metrics.c.key, metrics.c.value, metrics.c.step).where(
    metrics.c.id.in_(
        select(func.max(metrics.c.id))
        .where(metrics.c.job_id == bindparam("b_job"))
        .group_by(metrics.c.key)
    )
)


class MetricStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def ingest(
        self, job_id: str, attempt: int, *, from_offset: int, to_offset: int,
        points: Sequence[MetricPoint], malformed: int,
    ) -> bool:
        """Append points and advance the job's file offset in one transaction.

        The offset is compared-and-set, so a restarted tracker never ingests a line twice.
        Returns False (and writes nothing) when the offset moved meanwhile.
        """
        now = time.time()
        with self.db.write() as conn:
            result = conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id, jobs.c.metrics_offset == from_offset)
                .values(
                    metrics_offset=to_offset,
                    malformed_metric_lines=jobs.c.malformed_metric_lines + malformed,
                )
            )
            if result.rowcount != 1:
                return False
            rows = [
                {"job_id": job_id, "attempt": attempt, "step": p.step, "key": k, "value": v,
                 "time": now}
                for p in points
                for k, v in p.values.items()
            ]
            if rows:
                conn.execute(insert(metrics), rows)
        return True

    def latest(self, job_id: str,
               conn: Connection | None = None) -> dict[str, tuple[float, int | None]]:
        """The newest value of each metric key, with its step."""
        with self.db.read(conn) as c:
            rows = c.execute(_LATEST, {"b_job": job_id}).all()
        return {r.key: (r.value, r.step) for r in rows}

    def series(self, job_id: str, key: str) -> list[tuple[int | None, float]]:
        with self.db.read() as conn:
            rows = conn.execute(
                select(metrics.c.step, metrics.c.value)
                .where(metrics.c.job_id == job_id, metrics.c.key == key)
                .order_by(metrics.c.id)
            ).all()
        return [(r.step, r.value) for r in rows]
