"""The tracker's view of the waiting jobs, read from the store incrementally.

Reading every waiting row on every pass would make each submit cost as much as the whole
backlog; instead each pass reads only rows submitted since the last one, and the whole
list is re-read after a cancellation and on a period, which also catches rows another
server committed out of sequence order.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from trainyard.scheduler import PendingJob
from trainyard.store.jobs import JobStore


class WaitingJobs:
    def __init__(self, jobs: JobStore, *, full_read_every: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._jobs = jobs
        self._full_read_every = full_read_every
        self._clock = clock
        self._by_id: dict[str, PendingJob] = {}
        self._max_seq = 0
        self._read_at = float("-inf")
        self._stale = True

    def invalidate(self) -> None:
        """Something other than the tracker took a job out of the queue (a cancel)."""
        self._stale = True

    def remove(self, job_id: str) -> None:
        self._by_id.pop(job_id, None)

    def current(self) -> list[PendingJob]:
        """The waiting jobs in submit order, as the scheduler takes them."""
        now = self._clock()
        if self._stale or now - self._read_at >= self._full_read_every:
            self._stale = False
            self._read_at = now
            self._by_id = {}
            self._max_seq = 0
            rows = self._jobs.queued()
        else:
            rows = self._jobs.queued(after_seq=self._max_seq)
        for row in rows:
            self._by_id[row.id] = PendingJob(row.id, row.queue, row.priority, row.seq,
                                             row.resources)
            self._max_seq = max(self._max_seq, row.seq)
        return list(self._by_id.values())
