"""A predicted start as a sentence: the median as a rounded wait, the 90% bound as a time of
day, what the forecast's horizon left unknown, and why a job cannot start."""

from __future__ import annotations

import time

import pytest

from trainyard.domain.prediction import PredictedStart, describe

NOW = time.mktime((2026, 3, 4, 12, 0, 0, 0, 0, -1))  # local noon


def test_the_median_and_the_bound() -> None:
    p = PredictedStart(as_of=NOW - 40, p50=NOW + 35 * 60, p90=NOW + 4 * 3600 + 40 * 60)
    assert describe(p, NOW) == "expected to start in about 35 min; 9 in 10 chances by 16:40"


def test_a_bound_on_another_day_carries_its_date() -> None:
    p = PredictedStart(as_of=NOW, p50=NOW + 3 * 3600, p90=NOW + 30 * 3600)
    assert describe(p, NOW) == ("expected to start in about 3 h; 9 in 10 chances by "
                                "2026-03-05 18:00")


def test_a_start_due_now_or_overdue_is_soon() -> None:
    p = PredictedStart(as_of=NOW - 600, p50=NOW - 5, p90=NOW - 1)
    assert describe(p, NOW) == "expected to start soon; 9 in 10 chances by 12:00"


def test_past_the_horizon() -> None:
    never_seen = PredictedStart(as_of=NOW, horizon_s=86400)
    assert describe(never_seen, NOW) == "not expected to start within the next 24 h"
    assert describe(PredictedStart(as_of=NOW), NOW) == ("not expected to start within the "
                                                        "forecast's horizon")
    bound_unseen = PredictedStart(as_of=NOW, p50=NOW + 90 * 60 + 1, horizon_s=2 * 86400)
    assert describe(bound_unseen, NOW) == ("expected to start in about 1.5 h; 1 in 10 chances "
                                           "or more that it does not start within the next "
                                           "2 d")


def test_a_job_that_cannot_start_says_why() -> None:
    p = PredictedStart(as_of=NOW, cannot_start="it asks 16 GPUs; pool gpu has 8")
    assert describe(p, NOW) == "cannot start: it asks 16 GPUs; pool gpu has 8"


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_times_must_be_finite(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        PredictedStart(as_of=NOW, p50=bad)
