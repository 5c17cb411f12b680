"""The service's history: the jobs that ended after they ran, read a page at a time.

A job counts when it is SUCCEEDED, FAILED or CANCELLED and ran at some point (`held_s`, the
seconds its attempts ran, above zero): a job cancelled while it waited, or one whose every
launch failed, never held its resources and has no run time to replay. Pages follow the
primary key (`seq > after ORDER BY seq LIMIT n`), so each is one range of an index and the
export never holds more than a page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, and_, func, select

from trainyard.domain.spec import Resources
from trainyard.domain.states import JobState
from trainyard.store.db import Database
from trainyard.store.schema import jobs, runs

FINISHED = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True)
class FinishedJob:
    seq: int
    id: str
    name: str
    owner: str
    team: str
    queue: str
    priority: int
    resources: Resources  # the whole job's: every worker's together
    state: JobState
    submitted_at: float
    ended_at: float  # its final move
    ran_s: float  # in all its attempts
    launch_s: float  # its attempts' time from LAUNCHING to RUNNING, together
    attempts: int


@dataclass(frozen=True)
class Window:
    jobs: int
    first_submit: float | None  # None when it holds none


def _finished(since: float | None) -> ColumnElement[bool]:
    clauses = [jobs.c.state.in_([s.value for s in FINISHED]), jobs.c.held_s > 0.0]
    if since is not None:
        clauses.append(jobs.c.submitted_at >= since)
    return and_(*clauses)


_COLUMNS = (jobs.c.seq, jobs.c.id, jobs.c.name, jobs.c.owner, jobs.c.team, jobs.c.queue,
            jobs.c.priority, jobs.c.cpus, jobs.c.memory_mb, jobs.c.gpus, jobs.c.workers,
            jobs.c.state, jobs.c.submitted_at, jobs.c.updated_at, jobs.c.held_s,
            jobs.c.attempt)


class HistoryStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def window(self, since: float | None) -> Window:
        """How many finished jobs were submitted since then, and the first one's submit."""
        with self.db.read() as conn:
            count, first = conn.execute(
                select(func.count(), func.min(jobs.c.submitted_at)).where(_finished(since))
            ).one()
        return Window(int(count), first)

    def page(self, since: float | None, after_seq: int, limit: int) -> list[FinishedJob]:
        """The next `limit` finished jobs after `after_seq`, in submit order (seq)."""
        with self.db.read() as conn:
            rows = conn.execute(select(*_COLUMNS).where(_finished(since),
                                                        jobs.c.seq > after_seq)
                                .order_by(jobs.c.seq).limit(limit)).all()
            launching = self._launch_seconds(conn, [row.id for row in rows])
        return [FinishedJob(
            seq=row.seq, id=row.id, name=row.name, owner=row.owner, team=row.team,
            queue=row.queue, priority=row.priority,
            resources=Resources(row.cpus * row.workers, row.memory_mb * row.workers,
                                row.gpus * row.workers),
            state=JobState(row.state), submitted_at=row.submitted_at, ended_at=row.updated_at,
            ran_s=row.held_s, launch_s=launching.get(row.id, 0.0), attempts=row.attempt)
            for row in rows]

    @staticmethod
    def _launch_seconds(conn: Connection, job_ids: Sequence[str]) -> dict[str, float]:
        """Each job's attempts' time from launch to running, summed (the runs' unique
        (job_id, attempt) index finds them)."""
        if not job_ids:
            return {}
        spent = func.sum(runs.c.started_at - runs.c.launched_at)
        query = (select(runs.c.job_id, spent)
                 .where(runs.c.job_id.in_(job_ids), runs.c.started_at.is_not(None))
                 .group_by(runs.c.job_id))
        return {job_id: float(seconds or 0.0)
                for job_id, seconds in conn.execute(query)}
