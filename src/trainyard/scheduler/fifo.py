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
        # The sentence is the same for every waiting job and changes only with the limit,
        # so it is stored once per job, not rewritten on every pass; the queue position
        # (computed when asked) says how many are ahead.
        reason = PendingReason(GLOBAL_CONCURRENCY_LIMIT, _limit_sentence(snapshot.max_concurrent))
        pending = {job.job_id: reason for job in ordered[free:]}
        full = len(snapshot.running) + len(admit) >= snapshot.max_concurrent
        return Decisions(admit=admit, pending=pending, saturated=reason if full else None)


def _limit_sentence(limit: int) -> str:
    slots = "the only job slot is" if limit == 1 else f"all {limit} job slots are"
    return (f"{slots} in use; it starts when a running job ends and the jobs ahead of it "
            "have started.")
