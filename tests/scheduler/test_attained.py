"""Attained service: its levels, and the order they give a queue's jobs."""

from __future__ import annotations

from trainyard.domain.spec import Resources
from trainyard.scheduler.attained import (
    FIRST_LEVEL_S,
    attained_by,
    held_service,
    level,
    next_threshold_at,
    rate,
)
from trainyard.scheduler.backlog import Backlog
from trainyard.scheduler.model import PendingJob, RunningJob

HOUR = FIRST_LEVEL_S


ONE = Resources(1.0, 0, 1)


NOW = 10 * HOUR


def test_levels_double_from_the_first_threshold() -> None:
    assert [level(x) for x in (0, HOUR - 1, HOUR, 2 * HOUR - 1, 2 * HOUR, 4 * HOUR)] == \
        [0, 0, 1, 1, 2, 3]
    assert rate(Resources(4.0, 0, 2)) == 2.0 and rate(Resources(4.0, 0, 0)) == 4.0
    assert held_service(Resources(4.0, 0, 2), 10.0) == 20.0
    run = RunningJob("r", "a", ONE, "p", ("0",), started_at=NOW - 2 * HOUR, attained=HOUR)
    assert run.service_level(NOW) == 2 and run.service_level(NOW - 2 * HOUR) == 1
    assert attained_by(100.0, Resources(1.0, 0, 2), 10.0, 60.0) == 200.0
    assert attained_by(100.0, Resources(1.0, 0, 2), 60.0, 10.0) == 100.0  # clock behind
    # 2 GPUs from 0 GPU-s pass 3600 after 1800 s; from 3600, 7200 after another 1800 s.
    assert next_threshold_at(0.0, Resources(1.0, 0, 2), 100.0) == 1900.0
    assert next_threshold_at(HOUR, Resources(1.0, 0, 2), 0.0) == 1800.0
    assert next_threshold_at(0.0, Resources(0.0, 0, 0), 0.0) is None


def test_a_requeued_job_that_ran_longer_waits_behind_new_jobs_of_its_priority() -> None:
    older = PendingJob("old", "a", 0, 1, ONE, attained=3 * HOUR)
    newer = PendingJob("new", "a", 0, 2, ONE)
    urgent = PendingJob("hot", "a", 5, 3, ONE, attained=50 * HOUR)
    assert [j.job_id for j in Backlog.of([older, newer, urgent]).queues["a"]] == \
        ["hot", "new", "old"]  # priority first, then least attained, then submit order
    backlog = Backlog()
    for job in (older, newer, urgent):
        backlog.add(job)
    assert [j.job_id for j in backlog.queues["a"]] == ["hot", "new", "old"]
    # Past level 0, fewer GPUs first; at level 0 (new jobs), submit order whatever the size.
    wide = PendingJob("wide", "a", 0, 0, Resources(1.0, 0, 8), attained=3 * HOUR)
    big_new = PendingJob("big", "a", 0, 0, Resources(1.0, 0, 8))
    assert [j.job_id for j in Backlog.of([older, wide, newer, big_new]).queues["a"]] == \
        ["big", "new", "old", "wide"]
