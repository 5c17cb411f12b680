"""The first admission check: a sweep or pipeline runs at most its limit of jobs at once, a
paused sweep (or one held for another reason) starts none, and a sweep with a trial budget
starts at most the trials it has left."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from trainyard.domain.reasons import ReasonCode
from trainyard.scheduler.model import PendingJob, PendingReason, RunningJob


class SweepSlots:
    def __init__(self, limits: Mapping[str, int], running: Iterable[RunningJob],
                 titles: Mapping[str, str] | None = None,
                 holds: Mapping[str, PendingReason] | None = None,
                 starts: Mapping[str, int] | None = None) -> None:
        self.limits = limits
        self.holds = holds or {}  # group id -> why none of its jobs starts
        self.starts = Counter(starts or {})  # group id -> how many more of its jobs may start
        self.running = Counter(job.sweep for job in running if job.sweep in limits)
        self.titles = titles or {}  # group id -> how sentences name it
        self._reasons: dict[str, PendingReason] = {}  # one per group: its jobs share it

    @property
    def any(self) -> bool:
        """Whether some group has a rule here (else no job need be checked)."""
        return bool(self.limits or self.holds or self.starts)

    def full(self) -> set[str]:
        """The groups none of whose jobs may start now, whatever else the pass does."""
        return ({sweep for sweep, most in self.limits.items()
                 if not self.running[sweep] < most} | set(self.holds)
                | {sweep for sweep, left in self.starts.items() if left <= 0})

    def blocked(self, job: PendingJob) -> PendingReason | None:
        held = self.holds.get(job.sweep)
        if held is not None:
            return held
        if job.sweep in self.starts and self.starts[job.sweep] <= 0:
            return self._reason(job.sweep, ReasonCode.SWEEP_BUDGET, "has started all the "
                                "trials its budget allows (max_trials)")
        limit = self.limits.get(job.sweep)
        if limit is None or self.running[job.sweep] < limit:
            return None
        return self._reason(job.sweep, ReasonCode.SWEEP_LIMIT, f"runs at its limit of {limit} "
                            "jobs at once; it starts when one of them ends")

    def _reason(self, sweep: str, code: ReasonCode, what: str) -> PendingReason:
        reason = self._reasons.get(sweep)
        if reason is None or reason.code is not code:
            title = self.titles.get(sweep) or f"sweep {sweep}"
            reason = self._reasons[sweep] = PendingReason(code, f"{title} {what}")
        return reason

    def take(self, job: PendingJob) -> None:
        if job.sweep in self.limits:
            self.running[job.sweep] += 1
        if job.sweep in self.starts:
            self.starts[job.sweep] -= 1
