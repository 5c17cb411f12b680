"""The sample training service's 32-bit job ids: each names one of Trainyard's jobs for
good. A number is made in the transaction that stores its job (`JobStore.create(...,
sample_id=True)`), so a job the sample service acknowledged always has its number."""

from __future__ import annotations

from sqlalchemy import Connection, insert, select

from trainyard.store.db import Database
from trainyard.store.schema import sample_job_ids

INSERT = insert(sample_job_ids)
# The largest number a 32-bit signed id holds: the sample contract's `int32 job_id`.
MAX_NUMBER = 2**31 - 1


def row(job_id: str) -> dict[str, str]:
    """The row of a new job's number (the store numbers it), for its create's transaction."""
    return {"job_id": job_id}


class SampleIdStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def job_of(self, number: int) -> str | None:
        if not 0 < number <= MAX_NUMBER:
            return None
        with self.db.read() as conn:
            return conn.execute(select(sample_job_ids.c.job_id)
                                .where(sample_job_ids.c.number == number)).scalar()

    def number_of(self, job_id: str, conn: Connection | None = None) -> int | None:
        with self.db.read(conn) as c:
            return c.execute(select(sample_job_ids.c.number)
                             .where(sample_job_ids.c.job_id == job_id)).scalar()
