"""The first admission check: a sweep or pipeline runs at most its limit of jobs at once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from trainyard.domain.reasons import ReasonCode
from trainyard.scheduler.model import PendingJob, PendingReason, RunningJob


class SweepSlots:
    def __init__(self, limits: Mapping[str, int], running: Iterable[RunningJob],
                 titles: Mapping[str, str] | None = None) -> None:
        self.limits = limits
        self.running = Counter(job.sweep for job in running if job.sweep in limits)
        self.titles = titles or {}  # group id -> how sentences name it
        self._reasons: dict[str, PendingReason] = {}  # one per group: its jobs share it

    def blocked(self, job: PendingJob) -> PendingReason | None:
        limit = self.limits.get(job.sweep)
        if limit is None or self.running[job.sweep] < limit:
            return None
        reason = self._reasons.get(job.sweep)
        if reason is None:
            title = self.titles.get(job.sweep) or f"sweep {job.sweep}"
            reason = self._reasons[job.sweep] = PendingReason(
                ReasonCode.SWEEP_LIMIT, f"{title} runs at its limit of {limit} jobs at once; it "
                "starts when one of them ends")
        return reason

    def take(self, job: PendingJob) -> None:
        if job.sweep in self.limits:
            self.running[job.sweep] += 1
