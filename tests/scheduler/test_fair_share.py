"""Fair share between queues of equal priority: decayed usage, and the turns it gives."""

from __future__ import annotations

import math

import pytest

from tests.scheduler.builders import job, policy, run
from trainyard.domain.spec import Resources
from trainyard.scheduler.fair_share import after_turn, decayed_usage, share
from trainyard.scheduler.model import RunningJob


def test_fair_share_favours_the_queue_that_used_less() -> None:
    pending = [job(i, "a") for i in range(1, 5)] + [job(i, "b") for i in range(5, 9)]
    decided = run(policy(max_running=3), pending, usage={"a": 10.0, "b": 0.0})
    assert sorted(decided.admit) == ["j5", "j6", "j7"]


def test_usage_over_a_long_gap_is_bounded_by_the_half_life() -> None:
    gpu_job = RunningJob("r", "a", Resources(1, 1024, 8), "gpu")
    short = decayed_usage({}, [gpu_job], 1.0, 3600.0)["a"]
    assert short == pytest.approx(8.0, rel=1e-3)  # a second of 8 GPUs
    day = decayed_usage({}, [gpu_job], 86_400.0, 3600.0)["a"]
    assert day == pytest.approx(8 * 3600.0 / math.log(2), rel=1e-6)  # not 8 x 86,400
    # Two steps give what one step of the same length gives.
    halves = decayed_usage(decayed_usage({}, [gpu_job], 1800.0, 3600.0), [gpu_job], 1800.0,
                           3600.0)["a"]
    assert halves == pytest.approx(decayed_usage({}, [gpu_job], 3600.0, 3600.0)["a"])


def test_a_turn_costs_at_least_one_over_the_queues_weight() -> None:
    assert share({"a": 6.0}, "a", 2.0) == 3.0 and share({}, "b", 2.0) == 0.0
    small = job(1, cpus=0.5)
    assert after_turn(3.0, small, 2.0) == 3.5  # half a CPU costs as much as one
    assert after_turn(3.0, job(2, gpus=4), 2.0) == 5.0  # 4 GPUs over a weight of 2
