"""Run-time estimates: the most alike finished jobs, capped by the time limit, and what is
left of a running job given how long it has run."""

from __future__ import annotations

import random

from trainyard.sim.estimates import (
    DEFAULT_RUN_S,
    MIN_SAMPLES,
    FinishedJob,
    JobTraits,
    RunTimeEstimator,
    RunTimes,
)


def finished(run_s: float, at: float = 0.0, **traits: str) -> FinishedJob:
    return FinishedJob(JobTraits(**traits), run_s, at)  # type: ignore[arg-type]


def test_the_most_alike_group_with_enough_jobs_answers() -> None:
    history = [finished(100, user="ann", algorithm="mlp", program="img", queue="q")] * 3 + \
              [finished(900, user="bob", algorithm="cnn", program="img", queue="q")] * 3 + \
              [finished(5000, user="cy", algorithm="x", program="other", queue="q")] * 3
    estimator = RunTimeEstimator(history)
    ann = estimator.run_times(JobTraits("ann", "mlp", "img", "q"))
    assert ann.source == "user and algorithm" and set(ann.samples) == {100}
    # Her new algorithm has no history: the same image's jobs answer.
    new = estimator.run_times(JobTraits("ann", "new", "img", "q"))
    assert new.source == "program" and set(new.samples) == {100, 900}
    assert estimator.run_times(JobTraits("dee", "y", "none", "q")).source == "queue"
    assert estimator.run_times(JobTraits(queue="elsewhere")).source == "all"


def test_too_few_alike_jobs_fall_back_and_none_at_all_use_the_default() -> None:
    few = [finished(100, user="ann", algorithm="mlp")] * (MIN_SAMPLES - 1)
    times = RunTimeEstimator(few).run_times(JobTraits("ann", "mlp"))
    assert times.source == "default" and times.samples == (DEFAULT_RUN_S,)


def test_only_the_newest_are_kept() -> None:
    history = [finished(float(i + 1), at=float(i), user="u", algorithm="a") for i in range(50)]
    times = RunTimeEstimator(history, max_samples=10).run_times(JobTraits("u", "a"))
    assert times.samples == tuple(float(i) for i in range(41, 51))


def test_the_time_limit_caps_every_draw() -> None:
    times = RunTimes((100.0, 10_000.0), "g", cap=500.0)
    rng = random.Random(1)
    draws = [times.draw(rng) for _ in range(200)]
    assert max(draws) == 500.0 and min(draws) < 200
    assert all(times.draw_remaining(rng, 450.0) <= 50.0 for _ in range(50))


def test_remaining_time_is_drawn_from_longer_runs() -> None:
    times = RunTimes((100.0, 200.0, 1000.0), "g", jitter=0.0)
    rng = random.Random(2)
    left = {times.draw_remaining(rng, 150.0) for _ in range(100)}
    assert left == {50.0, 850.0}  # the 100 s run is past: it was not one of those


def test_a_job_past_every_sample_gets_more_time_as_it_runs() -> None:
    times = RunTimes((100.0,), "g")
    rng = random.Random(3)
    early = sorted(times.draw_remaining(rng, 200.0) for _ in range(101))[50]
    late = sorted(times.draw_remaining(rng, 2000.0) for _ in range(101))[50]
    assert 0 < early < late
