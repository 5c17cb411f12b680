"""Jobs that wait for jobs, as the tracker resolves them at each pass: a waiting job whose
needs are all met joins the queue; one that needed a job to succeed which ended FAILED or
CANCELLED is cancelled with that reason, and so, in the same pass, is whatever waited for
it; one still waiting has its pending message kept up to date ("waits for job abc (RUNNING)
to succeed").

What to look at comes from the needed jobs' events since the last pass (one read of the new
events, joined through the index on needs_job_id), so a pass where no needed job moved
costs one read of the newest event's id. The first pass after a start looks at every
waiting dependent (what happened while the service was down); every `full_every` seconds
a pass also reads the dependents whose need has ended (an event another server committed
out of order, a need that ended while its dependent was being submitted). Its writes are
batched: one transaction for the needs met, one for the jobs cancelled."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from trainyard.domain.dependencies import judge, waiting_sentence
from trainyard.domain.reasons import ReasonCode
from trainyard.store.dependencies import DependencyStore, Met
from trainyard.store.jobs import JobStore
from trainyard.tracker.waiting import WaitingJobs

log = logging.getLogger(__name__)

FULL_EVERY_S = 5.0


class Dependencies:
    def __init__(self, *, jobs: JobStore, waiting: WaitingJobs, clock: Callable[[], float],
                 full_every: float = FULL_EVERY_S,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.jobs = jobs
        self.store = DependencyStore(jobs.db)
        self.waiting = waiting
        self.clock = clock
        self._full_every = full_every
        self._monotonic = monotonic
        self._cursor: int | None = None  # the last event looked at; None: look at all
        self._full_at = float("-inf")

    def resolve(self) -> int:
        """Settle the waiting dependents whose needs moved. Returns how many joined the
        queue or were cancelled."""
        upto = self.store.last_event_id()  # read first: a later event is seen next time
        now = self._monotonic()
        todo: dict[str, str] = {}
        if self._cursor is None:
            todo = self.store.waiting()  # after a start: every one, its sentence too
            self._full_at = now
        else:
            if upto != self._cursor:
                todo = self.store.dependents_moved(self._cursor, upto)
            if now - self._full_at >= self._full_every:
                # Only those an ended need settles: sentences follow the events.
                todo = {**self.store.settleable(), **todo}
                self._full_at = now
        self._cursor = upto
        return self._settle(todo)

    def _settle(self, todo: Mapping[str, str]) -> int:
        settled = 0
        released = False
        while todo:
            needs = self.store.needs_of(todo.keys())
            cancel: dict[str, str] = {}
            changes: list[Met] = []
            for job_id, said in sorted(todo.items()):
                verdict = judge(needs.get(job_id, []))
                if verdict.cancel:
                    cancel[job_id] = verdict.cancel
                elif verdict.ready:
                    changes.append(Met(job_id, verdict.newly_met, ("", "")))
                else:
                    sentence = waiting_sentence(verdict.waiting)
                    if verdict.newly_met or sentence != said:
                        changes.append(Met(job_id, verdict.newly_met,
                                           (ReasonCode.DEPENDENCY, sentence)))
            self.store.mark_met(changes)
            for change in changes:
                if not change.pending[0]:
                    log.info("job %s: the jobs it waits for are done; it joins the queue",
                             change.job_id)
                    released = True
                    settled += 1
            # Those cancelled meanwhile, or that moved, are left out.
            cancelled = self.jobs.cancel_waiting(cancel, now=self.clock())
            for job_id in cancelled:
                log.info("job %s: %s", job_id, cancel[job_id])
            settled += len(cancelled)
            # A cancelled job is a need that ended CANCELLED: its dependents go next.
            todo = self.store.dependents_of(cancelled) if cancelled else {}
        if released:
            self.waiting.invalidate()  # an old submit order, now in the queue
        return settled
