"""What a forecast reads of the store: the jobs that finished lately with how long they
ran, and what is known of the live jobs it predicts for. Reads only; the newest finished
first, through indexes on (state, updated_at) and submitted_at, so history never costs a
scan."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Any

from sqlalchemy import select

from trainyard.domain.states import ACTIVE_STATES, JobState
from trainyard.store.db import Database
from trainyard.store.records import JobRecord
from trainyard.store.schema import jobs

# Jobs that ran until they ended by themselves: a cancelled job's time says nothing of how
# long its kind runs.
ENDED_BY_THEMSELVES = (JobState.SUCCEEDED, JobState.FAILED)
ALGORITHM_LABEL = "algorithm"


@dataclass(frozen=True)
class JobTraitsRow:
    """A job's columns the run-time estimator groups by."""

    id: str
    owner: str
    algorithm: str  # its `algorithm` label, else its name
    program: str  # its image, else its command
    queue: str
    time_limit_s: float  # 0: none
    held_s: float  # seconds it ran in attempts that ended (a finished job: all of them)
    updated_at: float


_COLUMNS = (jobs.c.id, jobs.c.owner, jobs.c.name, jobs.c.labels, jobs.c.image, jobs.c.command,
            jobs.c.queue, jobs.c.time_limit_s, jobs.c.held_s, jobs.c.updated_at)


def _traits(row: Any) -> JobTraitsRow:
    labels = row.labels if isinstance(row.labels, dict) else {}
    algorithm = labels.get(ALGORITHM_LABEL) or row.name
    return JobTraitsRow(row.id, row.owner, str(algorithm), row.image or row.command, row.queue,
                        row.time_limit_s or 0.0, row.held_s or 0.0, row.updated_at)


class RunHistory:
    def __init__(self, db: Database) -> None:
        self.db = db

    def finished(self, since: float, limit: int) -> list[JobTraitsRow]:
        """Jobs that succeeded or failed since `since` (their end: updated_at), newest
        first, at most `limit`. Each state's are read newest first along the (state,
        updated_at) index and merged as they come, so only the rows returned are visited:
        one query for both states would sort every job that ended in the window."""
        with self.db.read() as conn:
            newest = [conn.execution_options(stream_results=True).execute(
                select(*_COLUMNS).where(jobs.c.state == state.value,
                                        jobs.c.updated_at >= since)
                .order_by(jobs.c.updated_at.desc()).limit(limit))
                for state in ENDED_BY_THEMSELVES]
            try:
                merged = heapq.merge(*newest, key=lambda row: row.updated_at, reverse=True)
                return [_traits(row) for row in islice(merged, limit)]
            finally:
                for result in newest:
                    result.close()

    def submitted(self, since: float, limit: int) -> list[tuple[JobRecord, JobTraitsRow]]:
        """The jobs submitted since `since`, whatever became of them, newest first, at most
        `limit`: the pattern a forecast expects the next hours to repeat."""
        with self.db.read() as conn:
            rows = conn.execute(select(jobs).where(jobs.c.submitted_at >= since)
                                .order_by(jobs.c.submitted_at.desc()).limit(limit)).all()
        return [(JobRecord.from_row(row), _traits(row)) for row in rows]

    def live(self, states: Iterable[JobState] = (JobState.WAITING, *ACTIVE_STATES)
             ) -> dict[str, JobTraitsRow]:
        """The traits of the waiting and active jobs, by id."""
        with self.db.read() as conn:
            rows = conn.execute(select(*_COLUMNS).where(
                jobs.c.state.in_([s.value for s in states]))).all()
        return {row.id: _traits(row) for row in rows}
