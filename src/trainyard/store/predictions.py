"""Each waiting job's latest predicted start. The tracker's forecast writes the whole set at
each refresh, in one transaction (through the tracker's database, so a fenced term writes
none); status and list read one row, or one page's rows, and never compute anything."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import Connection, Row, bindparam, delete, insert, select

from trainyard.domain.prediction import PredictedStart
from trainyard.store import driver_reads
from trainyard.store.db import Database
from trainyard.store.schema import predicted_starts

_SELECT_ONE = select(predicted_starts).where(predicted_starts.c.job_id == bindparam("b_id"))
_SELECT_MANY = select(predicted_starts).where(
    predicted_starts.c.job_id.in_(bindparam("b_ids", expanding=True)))
# Well under every dialect's limit on bound parameters in one statement.
_IN_CHUNK = 1000


def _from_row(row: Row[tuple[object, ...]]) -> PredictedStart:
    return PredictedStart(as_of=row.as_of, p50=row.p50, p90=row.p90,
                          cannot_start=row.cannot_start, horizon_s=row.horizon_s)


class PredictionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def replace(self, predictions: Mapping[str, PredictedStart]) -> None:
        """The whole set, by job id, in one transaction: a job left out loses its row.
        Readers see the old set or the new one, never a mix or nothing. One bulk insert
        (executemany), so ten thousand rows take a few tens of milliseconds."""
        rows = [{"job_id": job_id, "p50": p.p50, "p90": p.p90, "as_of": p.as_of,
                 "cannot_start": p.cannot_start, "horizon_s": p.horizon_s}
                for job_id, p in predictions.items()]
        with self.db.write() as conn:
            conn.execute(delete(predicted_starts))
            if rows:
                conn.execute(insert(predicted_starts), rows)

    def get(self, job_id: str, conn: Connection | None = None) -> PredictedStart | None:
        with self.db.read(conn) as c:
            row = c.execute(_SELECT_ONE, {"b_id": job_id}).first()
        return None if row is None else _from_row(row)

    def many(self, job_ids: Iterable[str],
             conn: Connection | None = None) -> dict[str, PredictedStart]:
        """The predictions of those of the jobs that have one, by job id."""
        wanted = list(dict.fromkeys(job_ids))
        out: dict[str, PredictedStart] = {}
        if not wanted:
            return out
        with self.db.read(conn) as c:
            for start in range(0, len(wanted), _IN_CHUNK):
                chunk = wanted[start:start + _IN_CHUNK]
                for row in driver_reads.rows(c, _SELECT_MANY, {"b_ids": chunk}):
                    out[row.job_id] = _from_row(row)
        return out
