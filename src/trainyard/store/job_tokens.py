"""Job token rows: one per attempt, the hash of its secret. A row is written before the
attempt is launched and removed when the attempt ends (store/jobs.py removes them in the
transaction of that move); the job's state decides validity either way."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, delete, insert, select

from trainyard.store.db import Database
from trainyard.store.records import JobRecord
from trainyard.store.schema import job_tokens, jobs

# One read for a call: the stored hash of the attempt's secret beside the job's row.
_GRANT = (select(jobs, job_tokens.c.secret_hash.label("token_secret_hash"))
          .select_from(jobs.outerjoin(job_tokens, (job_tokens.c.job_id == jobs.c.id)
                                      & (job_tokens.c.attempt == bindparam("b_attempt"))))
          .where(jobs.c.id == bindparam("b_id")))
_DELETE_FOR_JOB = delete(job_tokens).where(job_tokens.c.job_id == bindparam("b_id"))


@dataclass(frozen=True)
class TokenView:
    """A job as a presented token finds it: the job (None: no such job) and the hash stored
    for the token's attempt (None: no token was minted for it, or it ended)."""

    job: JobRecord | None
    secret_hash: str | None


class JobTokenStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def put(self, job_id: str, attempt: int, secret_hash: str, now: float) -> None:
        """The token of this attempt, replacing one minted for it before (a relaunch)."""
        with self.db.write() as conn:
            conn.execute(delete(job_tokens).where(job_tokens.c.job_id == job_id,
                                                  job_tokens.c.attempt == attempt))
            conn.execute(insert(job_tokens).values(job_id=job_id, attempt=attempt,
                                                   secret_hash=secret_hash, created_at=now))

    def lookup(self, job_id: str, attempt: int) -> TokenView:
        with self.db.read() as conn:
            row = conn.execute(_GRANT, {"b_id": job_id, "b_attempt": attempt}).first()
        if row is None:
            return TokenView(None, None)
        return TokenView(JobRecord.from_row(row), row.token_secret_hash)

    def attempts(self, job_id: str) -> list[int]:
        """The attempts of the job that hold a token row."""
        with self.db.read() as conn:
            return list(conn.execute(select(job_tokens.c.attempt)
                                     .where(job_tokens.c.job_id == job_id)
                                     .order_by(job_tokens.c.attempt)).scalars())


def delete_for_job(conn: Connection, job_id: str) -> None:
    """Inside the caller's transaction: the job's attempt ended, and its tokens with it."""
    conn.execute(_DELETE_FOR_JOB, {"b_id": job_id})
