"""Metric time series, ingested exactly once per line of a job's METRICS_PATH."""

from __future__ import annotations

import time
from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, func, insert, select, update

from trainyard.store import driver_writes
from trainyard.store.db import Database
from trainyard.store.records import MetricPoint
from trainyard.store.schema import jobs, metrics, run_final_metrics, runs

_LATEST = select(metrics.c.key, metrics.c.value, metrics.c.step).where(
    metrics.c.id.in_(
        select(func.max(metrics.c.id))
        .where(metrics.c.job_id == bindparam("b_job"))
        .group_by(metrics.c.key)
    )
)

_f = run_final_metrics.c
_INSERT_FINAL = insert(run_final_metrics)
_UPDATE_FINAL = update(run_final_metrics).where(
    _f.job_id == bindparam("b_job"), _f.attempt == bindparam("b_attempt"),
    _f.key == bindparam("b_key")).values(value=bindparam("b_value"), step=bindparam("b_step"))

# What an ingest runs, built once (store/prepared.py says why); its writes go to the
# driver's cursor (store/driver_writes.py).
_FINAL_KEYS = select(_f.key).where(_f.job_id == bindparam("b_job"),
                                   _f.attempt == bindparam("b_attempt"),
                                   _f.key.in_(bindparam("b_keys", expanding=True)))
_ADVANCE = update(jobs).where(
    jobs.c.id == bindparam("b_job"), jobs.c.metrics_offset == bindparam("b_from")).values(
    metrics_offset=bindparam("b_to"),
    malformed_metric_lines=jobs.c.malformed_metric_lines + bindparam("b_malformed"))
_INSERT_POINTS = insert(metrics)
_RUN = (runs.c.job_id == bindparam("b_job"), runs.c.attempt == bindparam("b_attempt"))
_KEPT = select(runs.c.metric_points).where(*_RUN)
_COUNT = update(runs).where(*_RUN).values(
    metric_points=runs.c.metric_points + bindparam("b_kept"),
    dropped_metric_points=runs.c.dropped_metric_points + bindparam("b_dropped"))

DEFAULT_MAX_METRIC_POINTS = 100_000  # per attempt; a point is one key's value at one step


def _keep_finals(conn: Connection, job_id: str, attempt: int,
                 rows: list[dict[str, object]]) -> None:
    """The run's last value of each key these rows hold becomes the newest of them: rows are
    written in order, so the last of a key is the one written last."""
    last = {str(row["key"]): row for row in rows}
    found = set(conn.execute(_FINAL_KEYS, {"b_job": job_id, "b_attempt": attempt,
                                           "b_keys": sorted(last)}).scalars())
    driver_writes.execute_many(conn, _UPDATE_FINAL, [
        {"b_job": job_id, "b_attempt": attempt, "b_key": key, "b_value": row["value"],
         "b_step": row["step"]} for key, row in last.items() if key in found])
    driver_writes.execute_many(conn, _INSERT_FINAL, [
        {"job_id": job_id, "attempt": attempt, "key": key, "value": row["value"],
         "step": row["step"]} for key, row in last.items() if key not in found])


class MetricStore:
    def __init__(self, db: Database, max_points: int = DEFAULT_MAX_METRIC_POINTS) -> None:
        self.db = db
        self.max_points = max_points

    def ingest(
        self, job_id: str, attempt: int, *, from_offset: int, to_offset: int,
        points: Sequence[MetricPoint], malformed: int, synced: bool = True,
    ) -> bool:
        """Append points and advance the job's file offset in one transaction.

        The offset is compared-and-set, so a restarted tracker never ingests a line twice.
        Returns False (and writes nothing) when the offset moved meanwhile. An attempt keeps
        at most `max_points` points; those past it are counted on its run and dropped.
        `synced=False` (Database.write) where the points are read again from their file
        after a power cut undid them: the offset is undone with them.
        """
        now = time.time()
        with self.db.write(synced=synced) as conn:
            if driver_writes.execute(conn, _ADVANCE, {
                    "b_job": job_id, "b_from": from_offset, "b_to": to_offset,
                    "b_malformed": malformed}) != 1:
                return False
            rows = [
                {"job_id": job_id, "attempt": attempt, "step": p.step, "key": k, "value": v,
                 "time": now}
                for p in points
                for k, v in p.values.items()
            ]
            rows = self._within_cap(conn, job_id, attempt, rows)
            if rows:
                driver_writes.execute_many(conn, _INSERT_POINTS, rows)
                _keep_finals(conn, job_id, attempt, rows)
        return True

    def _within_cap(self, conn: Connection, job_id: str, attempt: int,
                    rows: list[dict[str, object]]) -> list[dict[str, object]]:
        """The rows the attempt's cap leaves room for; its run counts them and the rest."""
        run = {"b_job": job_id, "b_attempt": attempt}
        kept = conn.execute(_KEPT, run).scalar_one_or_none()
        if kept is None or not rows:
            return rows  # no run row (a job never launched): nothing to count on
        room = max(0, self.max_points - int(kept))
        driver_writes.execute(conn, _COUNT, {**run, "b_kept": min(room, len(rows)),
                                             "b_dropped": max(0, len(rows) - room)})
        return rows[:room]

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
