"""Fair share between queues of equal priority: each queue's decayed usage, over its weight,
says whose turn it is; the queue that has used least per weight goes next."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from trainyard.scheduler.attained import rate
from trainyard.scheduler.model import PendingJob, RunningJob


def decayed_usage(usage: Mapping[str, float], running: Iterable[RunningJob], seconds: float,
                  half_life: float) -> dict[str, float]:
    """Each queue's usage after `seconds` more: the old halves every `half_life`, and each
    running job adds its GPUs (or, without GPUs, its CPUs) over the time, each moment of it
    decayed as the old is. Over a long gap (a restart, a quiet stretch of a replay) that is
    at most cost × half_life / ln 2, not cost × the gap."""
    if half_life > 0:
        factor = 0.5 ** (seconds / half_life)
        span = half_life / math.log(2) * (1.0 - factor) if seconds > 0 else 0.0
    else:
        factor, span = 0.0, seconds
    updated = {queue: value * factor for queue, value in usage.items() if value * factor > 1e-9}
    for job in running:
        cost = rate(job.resources)
        updated[job.queue] = updated.get(job.queue, 0.0) + cost * span
    return updated


def share(usage: Mapping[str, float], queue: str, weight: float) -> float:
    """Where a queue stands at the start of a pass: its usage per weight."""
    return usage.get(queue, 0.0) / weight


def after_turn(share_now: float, job: PendingJob, weight: float) -> float:
    """Where a queue stands once it admitted the job: a turn costs at least one, so that
    jobs asking for little still take turns."""
    return share_now + max(1.0, rate(job.resources)) / weight
