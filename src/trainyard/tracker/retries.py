"""Retries and time limits as the tracker applies them: a job's retry rule read from its
row, the limit its attempt has run past, and the write that puts it back in the queue for
its next attempt after a back-off."""

from __future__ import annotations

import logging
import random

from trainyard.domain.reasons import ReasonCode
from trainyard.domain.retry import (
    DEFAULT_MAX_ATTEMPTS,
    Backoff,
    RetryState,
    waiting_to_retry,
)
from trainyard.domain.states import JobState
from trainyard.store.jobs import JobStore
from trainyard.store.records import JobRecord
from trainyard.tracker.settle import LOST_MARK, Settlement

log = logging.getLogger(__name__)

RETRIED = "requeued for its next attempt; resumes from its checkpoint"


class Retries:
    def __init__(self, jobs: JobStore, backoff: Backoff | None = None,
                 rng: random.Random | None = None) -> None:
        self.jobs = jobs
        self.backoff = backoff or Backoff()
        self._rng = rng or random.Random()

    @staticmethod
    def state(job: JobRecord) -> RetryState:
        spec = job.spec
        return RetryState(spec.max_attempts or DEFAULT_MAX_ATTEMPTS, job.retries,
                          spec.retry_on_failure, spec.retry_exit_codes)

    @staticmethod
    def over_time(job: JobRecord, now: float) -> float:
        """The time limit this job's attempt has run past (0: none, or not yet)."""
        limit = job.spec.time_limit_s
        if not limit or job.state is not JobState.RUNNING or job.started_at is None:
            return 0.0
        return limit if now - job.started_at >= limit else 0.0

    def retry(self, job: JobRecord, outcome: Settlement, *, now: float) -> None:
        """The attempt ended lost or failed and the job has attempts left: it waits out its
        back-off, then runs again with the same CHECKPOINT_PATH."""
        state = self.state(job)
        delay = self.backoff.delay(state.counted, self._rng.random())
        if outcome.target is JobState.PREEMPTED:
            ended = outcome.message.partition(LOST_MARK)[2]
            said = f"was lost: {ended}"
        else:
            said = f"failed: {outcome.message}"
        waiting = waiting_to_retry(state, delay, job.attempt, said)
        assert outcome.target is not None
        self.jobs.retry(job.id, ended=outcome.target, outcome=outcome.message,
                        exit_code=outcome.exit_code, requeued=RETRIED,
                        pending=(ReasonCode.BACKOFF, waiting), retry_after=now + delay,
                        now=now)
        log.info("job %s: %s", job.id, waiting)
