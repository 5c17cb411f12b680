"""The tracker's view of the waiting jobs, read from the store incrementally.

Reading every waiting row on every pass would make each submit cost as much as the whole
backlog; instead each pass reads only rows submitted since the last one, and the whole
list is re-read after a cancellation (or a requeue, or a dependency met: an old submit
order back in the queue). On a period the waiting jobs are checked against the store, each
by its id and when it began to wait (every move and JobStore.update_fields set that time;
a pending reason, which no policy reads, does not): a row another server committed out of
sequence order, a job that left the queue or changed elsewhere, makes the check re-read the
whole list. The check reads two columns a job, so a deep backlog costs a fraction of
reading it all again each period. The jobs are kept in a Backlog, each queue's in the order
it admits them, so a pass need not group and sort them again.

A job backing off before a retry is held out of the Backlog until its time comes, so the
policy never sees it; jobs with a pending timeout are remembered with their deadline.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from trainyard.scheduler import PendingJob
from trainyard.scheduler.attained import held_service
from trainyard.scheduler.backlog import Backlog
from trainyard.store.jobs import JobStore
from trainyard.store.records import QueuedJob


class WaitingJobs:
    def __init__(self, jobs: JobStore, *, full_read_every: float, new_read_every: float = 0.0,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self._jobs = jobs
        self._full_read_every = full_read_every
        # With a period: the rows submitted since are read when this process stored a job
        # or heard of a submit (submitted(): another server's) since the last read, or once
        # the period is over (a row nobody told of); without one, at every pass.
        self._new_read_every = new_read_every
        self._heard = True  # a submit heard of since the last read of new rows
        self._created = -1  # the store's count of jobs created at that read
        self._new_read_at = float("-inf")
        self._clock = clock
        self._wall_clock = wall_clock  # the store's times: retry_after, deadlines
        self._backlog = Backlog()
        self._held: dict[str, PendingJob] = {}  # backing off: job id -> job
        self._retry_after: dict[str, float] = {}  # of the held ones
        self._deadlines: dict[str, tuple[float, float]] = {}  # id -> (deadline, timeout)
        self._sweeps: Counter[str] = Counter()  # sweep id -> its jobs in the backlog
        self._since: dict[str, float] = {}  # each job held here: when it began to wait
        self._max_seq = 0
        self._read_at = float("-inf")
        self._stale = True
        self._by_service = False  # whether jobs carry their attained service

    def order_by_service(self, on: bool) -> None:
        """Hand jobs to the policy with the service they attained (so each queue's Backlog
        orders them by level), or without; a change re-reads them all."""
        if on != self._by_service:
            self._by_service = on
            self._stale = True

    def submitted(self) -> None:
        """A job was submitted, here or on another server (committed before this is
        called): the next pass reads it."""
        self._heard = True

    def invalidate(self) -> None:
        """Something other than the tracker took a job out of the queue (a cancel)."""
        self._stale = True

    def remove(self, job_id: str) -> None:
        self._since.pop(job_id, None)
        self._held.pop(job_id, None)
        self._retry_after.pop(job_id, None)
        self._deadlines.pop(job_id, None)
        job = self._backlog.remove(job_id)
        if job is not None and job.sweep:
            self._sweeps[job.sweep] -= 1
            if not self._sweeps[job.sweep]:
                del self._sweeps[job.sweep]

    @property
    def sweeps(self) -> set[str]:
        """The sweeps (and pipelines) that waiting jobs belong to."""
        return set(self._sweeps)

    def first_in_line(self, count: int) -> list[str]:
        """The ids of up to `count` jobs at the fronts of the queues as last read (no read of
        the store: jobs submitted since are left to the next pass that reads them)."""
        return self._backlog.heads(count)

    def current(self) -> Backlog:
        """The waiting jobs, as the scheduler takes them. The tracker's own: callers read it
        and change it only through remove()."""
        if not self._full_read_due():
            self._read_new()
        else:
            self._stale = False
            self._read_at = self._clock()
            self._backlog = Backlog()
            self._sweeps = Counter()
            self._held, self._retry_after, self._deadlines = {}, {}, {}
            self._since = {}
            self._max_seq = 0
            self._mark_new_read()
            self._add(self._jobs.queued())
        self._release_due()
        return self._backlog

    def _in_step(self) -> bool:
        """Whether the store's waiting jobs, up to the last submit order read, are exactly
        those held here, each unchanged since it was read."""
        return self._jobs.waiting_since(self._max_seq) == self._since

    def expired(self) -> list[tuple[str, float]]:
        """The waiting jobs past their pending timeout: (job id, the timeout)."""
        now = self._wall_clock()
        return [(job_id, timeout) for job_id, (deadline, timeout) in self._deadlines.items()
                if deadline <= now]

    def _release_due(self) -> None:
        """Jobs whose back-off is over join the Backlog."""
        if not self._retry_after:
            return
        now = self._wall_clock()
        for job_id in [j for j, at in self._retry_after.items() if at <= now]:
            del self._retry_after[job_id]
            job = self._held.pop(job_id)
            self._backlog.add(job)
            if job.sweep:
                self._sweeps[job.sweep] += 1

    def read_new(self) -> list[PendingJob] | None:
        """Only the jobs submitted since the last read; None when a full read is due."""
        if self._full_read_due():
            return None
        return self._read_new(always=True)  # asked for after a submit

    def _read_new(self, always: bool = False) -> list[PendingJob]:
        """The rows submitted since the last read (unless `always`: where one may have
        been)."""
        if not (always or self._heard or self._jobs.db.feed.created != self._created) and \
                self._clock() - self._new_read_at < self._new_read_every:
            return []
        self._mark_new_read()
        return self._add(self._jobs.queued(after_seq=self._max_seq))

    def _mark_new_read(self) -> None:
        """Before a read of new rows: a submit committed during it is read by the next."""
        self._heard, self._created = False, self._jobs.db.feed.created
        self._new_read_at = self._clock()

    def _full_read_due(self) -> bool:
        """Whether the whole list must be read again: after an invalidate(), or when the
        period's check finds the store's waiting jobs out of step with those held here."""
        if not self._stale and self._clock() - self._read_at >= self._full_read_every:
            self._read_at = self._clock()
            if not self._in_step():
                # Only ever set here: an invalidate() from another thread during the check
                # must not be undone by a check that read the store before it.
                self._stale = True
        return self._stale

    def _add(self, rows: list[QueuedJob]) -> list[PendingJob]:
        added = []
        for row in rows:
            job = pending_job(row, self._by_service)
            self.remove(row.id)
            self._max_seq = max(self._max_seq, row.seq)
            self._since[row.id] = row.waiting_since
            if row.pending_deadline is not None:
                self._deadlines[row.id] = (row.pending_deadline,
                                           row.pending_deadline - row.submitted_at)
            if row.retry_after is not None and row.retry_after > self._wall_clock():
                self._held[row.id] = job
                self._retry_after[row.id] = row.retry_after
                continue
            self._backlog.add(job)
            if job.sweep:
                self._sweeps[job.sweep] += 1
            added.append(job)
        return added


def pending_job(row: QueuedJob, by_service: bool) -> PendingJob:
    """A waiting job's row as the scheduler takes it; with the service it attained when the
    policy orders by it."""
    return PendingJob(row.id, row.queue, row.priority, row.seq, row.resources, row.kind,
                      row.owner, row.team, row.submitted_at, row.sweep_id,
                      attained=held_service(row.resources, row.held_s) if by_service else 0.0,
                      time_limit_s=row.time_limit_s)

