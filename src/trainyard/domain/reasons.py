"""Why a waiting job waits: one code per reason, shared by every policy, the replay, queue
positions and the tracker. A code travels with a sentence a person reads."""

from __future__ import annotations

from enum import StrEnum


class ReasonCode(StrEnum):
    # Limits that mean "the jobs ahead go first".
    GLOBAL_CONCURRENCY_LIMIT = "GLOBAL_CONCURRENCY_LIMIT"  # the server runs all it may
    QUEUE_LIMIT = "QUEUE_LIMIT"  # the queue runs as many jobs as it may
    # Room.
    POOL_CAPACITY = "POOL_CAPACITY"  # the job does not fit in what its pool has free
    POOL_ORDER = "POOL_ORDER"  # an earlier job of the same pool waits for room first
    POOL_UNAVAILABLE = "POOL_UNAVAILABLE"  # the pool's engine is away, or there is no such pool
    NO_POOL = "NO_POOL"  # none of the queue's pools runs this kind of job
    RESERVED = "RESERVED"  # capacity is held for a job that has waited too long
    # Teams and access.
    TEAM_QUOTA = "TEAM_QUOTA"  # the team's quota is used and nothing idle can be borrowed
    RECLAIMING = "RECLAIMING"  # room is being made for it by preemption
    QUEUE_ACCESS = "QUEUE_ACCESS"  # the queue no longer takes jobs from this job's owner
    SWEEP_LIMIT = "SWEEP_LIMIT"  # its sweep or pipeline runs as many trials as it may
    # Set by the tracker on a job put back in the queue after it was preempted.
    PREEMPTED = "PREEMPTED"
    # Set by the tracker on a job waiting out the back-off before its next attempt.
    BACKOFF = "BACKOFF"
    # Set at submit on a job that waits for other jobs (--after) until they end as it asks.
    DEPENDENCY = "DEPENDENCY"
    # Its team's or queue's budget of GPU- or CPU-hours over a period is used (domain.budgets).
    BUDGET = "BUDGET"
    # Sweeps as one unit (domain/sweep_control.py): its sweep is paused; its sweep may start
    # no more trials (max_trials).
    SWEEP_PAUSED = "SWEEP_PAUSED"
    SWEEP_BUDGET = "SWEEP_BUDGET"


# Reasons for which how many jobs are ahead is the news.
BEHIND_OTHERS = frozenset({ReasonCode.GLOBAL_CONCURRENCY_LIMIT, ReasonCode.QUEUE_LIMIT})
