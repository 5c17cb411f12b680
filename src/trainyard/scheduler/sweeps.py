"""The first admission check: a sweep or pipeline runs at most its limit of jobs at once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from trainyard.scheduler.model import PendingJob, PendingReason, RunningJob

SWEEP_LIMIT = "SWEEP_LIMIT"


class SweepSlots:
    def __init__(self, limits: Mapping[str, int], running: Iterable[RunningJob]) -> None:
        self.limits = limits
        self.running = Counter(job.sweep for job in running if job.sweep in limits)

    def blocked(self, job: PendingJob) -> PendingReason | None:
        limit = self.limits.get(job.sweep)
        if limit is None or self.running[job.sweep] < limit:
            return None
        return PendingReason(SWEEP_LIMIT, f"sweep {job.sweep} runs at its limit of {limit} "
                             "jobs at once; it starts when one of them ends")

    def take(self, job: PendingJob) -> None:
        if job.sweep in self.limits:
            self.running[job.sweep] += 1
