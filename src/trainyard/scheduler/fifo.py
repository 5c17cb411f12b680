"""First in, first out under one global concurrency limit."""

from __future__ import annotations

from trainyard.scheduler.model import Decisions, PendingJob, PendingReason, Snapshot

GLOBAL_CONCURRENCY_LIMIT = "GLOBAL_CONCURRENCY_LIMIT"


def fifo_key(job: PendingJob) -> int:
    return job.seq


class FifoPolicy:
    """Admit waiting jobs in submit order while fewer than max_concurrent are active."""

    def schedule(self, snapshot: Snapshot) -> Decisions:
        ordered = sorted(snapshot.pending, key=fifo_key)
        free = max(0, snapshot.max_concurrent - len(snapshot.running))
        admit = tuple(job.job_id for job in ordered[:free])
        pending: dict[str, PendingReason] = {}
        for ahead, job in enumerate(ordered[free:]):
            pending[job.job_id] = PendingReason(
                GLOBAL_CONCURRENCY_LIMIT,
                _limit_sentence(snapshot.max_concurrent, len(snapshot.running) + len(admit),
                                ahead),
            )
        return Decisions(admit=admit, pending=pending)


def _limit_sentence(limit: int, active: int, ahead: int) -> str:
    slots = "slot is" if limit == 1 else "slots are"
    sentence = f"all {limit} job {slots} in use ({active} running or launching)"
    if ahead:
        jobs = "job is" if ahead == 1 else "jobs are"
        sentence += f"; {ahead} waiting {jobs} ahead of this one"
    return sentence + "."
