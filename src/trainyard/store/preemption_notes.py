"""What the tracker notes of a job being preempted with notice (domain.notice): when it gave
the attempt notice, and each checkpoint the attempt reported, on the job and its run alike."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update

from trainyard.domain.states import JobState
from trainyard.store.db import Database
from trainyard.store.schema import jobs, runs


class PreemptionNotes:
    def __init__(self, db: Database) -> None:
        self.db = db

    def noticed(self, job_id: str, attempt: int, now: float) -> bool:
        """The attempt was given notice now. False if it no longer runs."""
        return self._note(job_id, attempt, {"notice_at": now}, {"notice_at": now})

    def checkpointed(self, job_id: str, attempt: int, count: int, now: float) -> bool:
        """The attempt's runtime has counted `count` complete checkpoints, the last seen
        now. False if it no longer runs."""
        return self._note(job_id, attempt, {"checkpoints": count, "checkpoint_at": now},
                          {"checkpoint_at": now})

    def uploaded(self, job_id: str, attempt: int, now: float) -> bool:
        """A remote attempt's runtime uploaded one more checkpoint now. False if it no
        longer runs."""
        return self._note(job_id, attempt, {"checkpoints": jobs.c.checkpoints + 1,
                                            "checkpoint_at": now}, {"checkpoint_at": now})

    def _note(self, job_id: str, attempt: int, job_values: dict[str, Any],
              run_values: dict[str, Any]) -> bool:
        with self.db.write() as conn:
            moved = conn.execute(update(jobs).where(
                jobs.c.id == job_id, jobs.c.attempt == attempt,
                jobs.c.state == JobState.RUNNING.value).values(**job_values))
            if moved.rowcount != 1:
                return False
            conn.execute(update(runs).where(runs.c.job_id == job_id, runs.c.attempt == attempt)
                         .values(**run_values))
        return True
