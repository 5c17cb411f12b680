"""Jobs that wait for jobs, as the tracker resolves them at each pass: a waiting job whose
needs are all met joins the queue; one that needed a job to succeed which ended FAILED or
CANCELLED is cancelled with that reason, and so, in the same pass, is whatever waited for
it; one still waiting has its pending message kept up to date ("waits for job abc (RUNNING)
to succeed").

What to look at comes from the needed jobs' events since the last pass (one read of the new
events, joined through the index on needs_job_id), so a pass costs nothing when no needed
job moved. Every `full_every` seconds, and at the first pass after a start, every waiting
dependent is looked at instead: that catches what happened while the service was down, an
event another server committed out of order, and a need that ended while its dependent was
being submitted."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from trainyard.domain.dependencies import judge, waiting_sentence
from trainyard.domain.errors import StaleState
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.states import JobState
from trainyard.store.dependencies import DependencyStore
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
        upto = self.store.last_event_id()
        if self._cursor is None or self._monotonic() - self._full_at >= self._full_every:
            self._full_at = self._monotonic()
            todo = self.store.waiting()
        elif upto == self._cursor:
            return 0
        else:
            todo = self.store.dependents_moved(self._cursor, upto)
        self._cursor = upto  # read before the jobs: a later event is seen next time
        return self._settle(todo)

    def _settle(self, todo: Mapping[str, str]) -> int:
        settled = 0
        released = False
        while todo:
            needs = self.store.needs_of(todo.keys())
            cancelled: list[str] = []
            for job_id, said in sorted(todo.items()):
                verdict = judge(needs.get(job_id, []))
                if verdict.cancel:
                    if self._cancel(job_id, verdict.cancel):
                        cancelled.append(job_id)
                        settled += 1
                elif verdict.ready:
                    self.store.mark_met(job_id, verdict.newly_met, pending=("", ""))
                    log.info("job %s: the jobs it waits for are done; it joins the queue",
                             job_id)
                    released = True
                    settled += 1
                else:
                    sentence = waiting_sentence(verdict.waiting)
                    if verdict.newly_met or sentence != said:
                        self.store.mark_met(job_id, verdict.newly_met,
                                            pending=(ReasonCode.DEPENDENCY, sentence))
            # A cancelled job is a need that ended CANCELLED: its dependents go next.
            todo = self.store.dependents_of(cancelled) if cancelled else {}
        if released:
            self.waiting.invalidate()  # an old submit order, now in the queue
        return settled

    def _cancel(self, job_id: str, why: str) -> bool:
        try:
            self.jobs.transition(job_id, JobState.WAITING, JobState.CANCELLED, reason=why,
                                 now=self.clock(), message=why, pending_code="",
                                 pending_message="")
        except StaleState:
            return False  # cancelled, or moved, meanwhile
        log.info("job %s: %s", job_id, why)
        return True
