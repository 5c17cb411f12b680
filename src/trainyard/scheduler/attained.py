"""Attained service: how much of the machine a job has held so far, and the levels that
order a queue's jobs by it (least attained first, as Tiresias does).

A job's service grows at its rate, its GPUs (or, without GPUs, its CPUs) per second while it
runs, and is kept across preemptions and restarts. Levels, not the raw figure, order jobs,
so that two jobs of nearly equal service keep their submit order and a running job is
preempted for a less-served one only once it passes a threshold, not every instant. The
thresholds double from one GPU-hour: a heavy-tailed mix of short and long jobs finishes
sooner on average when the jobs that have run least go first, without anyone telling the
scheduler how long a job will run.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence

from trainyard.domain.spec import Resources

FIRST_LEVEL_S = 3600.0  # GPU-seconds (or CPU-seconds) before a job leaves level 0
LEVELS = 24  # thresholds: FIRST_LEVEL_S × 2**k for k < LEVELS, about 1,900 GPU-years at most
THRESHOLDS: tuple[float, ...] = tuple(FIRST_LEVEL_S * 2.0**k for k in range(LEVELS))


def rate(resources: Resources) -> float:
    """Service a job gains per second of running: its GPUs, or its CPUs when it has none."""
    return float(resources.gpus) or resources.cpus


def level(attained: float) -> int:
    """How many thresholds the service has passed: 0 for a job that has not run."""
    return bisect_right(THRESHOLDS, attained) if attained > 0 else 0


def held_service(resources: Resources, held_s: float) -> float:
    """The service of ended runs that together held these resources `held_s` seconds."""
    return rate(resources) * held_s


def attained_by(attained_before: float, resources: Resources, started_at: float,
                now: float) -> float:
    """A running job's service: what it had when it started, plus this run's."""
    return attained_before + rate(resources) * max(0.0, now - started_at)


def next_threshold_at(attained_before: float, resources: Resources, started_at: float,
                      after: float | None = None,
                      thresholds: Sequence[float] = THRESHOLDS) -> float | None:
    """When a job that started at `started_at` with `attained_before` of service next
    passes a threshold (after `after`, by default its start); None: never, with no rate or
    past the last. It is the first time, to the float, at which attained_by() says so, so
    that a pass then sees the new level."""
    speed = rate(resources)
    if speed <= 0:
        return None
    since = started_at if after is None else max(after, started_at)
    index = bisect_right(thresholds, attained_by(attained_before, resources, started_at, since))
    if index >= len(thresholds):
        return None
    threshold = thresholds[index]
    at = started_at + (threshold - attained_before) / speed
    while attained_by(attained_before, resources, started_at, at) < threshold:
        at = math.nextafter(at, math.inf)  # a rounding short of it: a few steps at most
    return at
