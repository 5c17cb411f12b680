"""bench/scale.py's pure parts, and its bulk load (bench/scale_fill.py) read back through the
store itself on both dialects: the rows it writes are the rows the store would have left."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import scale
import scale_fill
from sqlalchemy import select

from trainyard.domain.states import JobState
from trainyard.store.db import open_database
from trainyard.store.jobs import JobFilter, JobStore
from trainyard.store.runs import RunFilter, RunStore
from trainyard.store.schema import metrics

JOBS = 240


def test_a_loaded_store_reads_back_as_finished_jobs_with_their_runs(database_url: str
                                                                    ) -> None:
    scale_fill.fill(database_url, JOBS, seed=5)
    db = open_database(database_url)
    try:
        assert scale_fill.counts(db) == {
            "jobs": JOBS, "runs": JOBS, "job_events": 4 * JOBS,
            "metrics": scale_fill.counts(db, (metrics,))["metrics"]}
        store, found = JobStore(db), RunStore(db)
        listed, after = store.list(JobFilter(), page_size=JOBS + 1)
        assert after is None and len(listed) == JOBS
        assert {job.state for job in listed} == {JobState.SUCCEEDED, JobState.FAILED,
                                                 JobState.CANCELLED}
        assert [job.seq for job in listed] == sorted((job.seq for job in listed), reverse=True)
        job = listed[0]
        assert [(e.from_state, e.to_state) for e in store.events(job.id)] == [
            (None, JobState.WAITING), (JobState.WAITING, JobState.LAUNCHING),
            (JobState.LAUNCHING, JobState.RUNNING), (JobState.RUNNING, job.state)]
        ended, _ = store.list(JobFilter(states=[JobState.SUCCEEDED, JobState.FAILED]),
                              page_size=JOBS)
        assert ended and all(j.state in (JobState.SUCCEEDED, JobState.FAILED) for j in ended)
        # Sorted by the metric half of the runs report: theirs first, in its order; and each
        # run's kept final value is its last point's.
        page, _ = found.page(RunFilter(), limit=JOBS, sort_metric=scale_fill.SORT_METRIC,
                             descending=True)
        assert len(page) == JOBS
        finals = found.final_metrics([(r.job.id, r.attempt) for r in page])
        values = [finals[(r.job.id, r.attempt)].get(scale_fill.SORT_METRIC) for r in page]
        reported = [v[0] for v in values if v is not None]
        assert len(reported) == JOBS // 2 and reported == sorted(reported, reverse=True)
        assert all(v is None for v in values[len(reported):])
        with db.read() as conn:
            points = conn.execute(select(metrics.c.job_id, metrics.c.key, metrics.c.value)
                                  .order_by(metrics.c.id)).all()
        last: dict[tuple[str, str], float] = {}
        for job_id, key, value in points:
            last[(job_id, key)] = value
        for r in page:
            for key, (value, _) in finals[(r.job.id, r.attempt)].items():
                assert last[(r.job.id, key)] == value
    finally:
        db.close()


def sides(empty_rounds: list[float], full_rounds: list[float], key: str = "submit_per_s"
          ) -> tuple[dict[str, Any], dict[str, Any]]:
    def side(rounds: list[float]) -> dict[str, Any]:
        return {key: sum(rounds) / len(rounds), "rss_mib": 100.0, "rounds": {key: rounds}}
    return side(empty_rounds), side(full_rounds)


def test_a_figure_in_rounds_is_the_median_of_the_rounds_ratios() -> None:
    rate = next(f for f in scale.FIGURES if f.key == "submit_per_s")
    empty, full = sides([100.0, 100.0, 100.0], [50.0, 100.0, 110.0])
    # 2.0, 1.0 and 0.91: one slow round does not make the store look slower.
    assert scale.ratio(rate, empty, full) == 1.0
    p99 = next(f for f in scale.FIGURES if f.key == "status_p99_ms")
    empty, full = sides([10.0, 10.0, 10.0], [30.0, 13.0, 12.0], key=p99.key)
    assert scale.ratio(p99, empty, full) == 1.3  # lower is better: full over empty
    memory = next(f for f in scale.FIGURES if f.key == "rss_mib")
    empty, full = sides([1.0], [1.0])
    full["rss_mib"] = 130.0
    assert scale.ratio(memory, empty, full) == 1.3  # no rounds: the figures themselves


def test_every_read_figure_is_kept_round_by_round() -> None:
    read_keys = {figure for figures in scale.READ_FIGURES.values() for figure, _ in figures}
    shown = {f.key for f in scale.FIGURES}
    assert read_keys <= shown
    assert {"status_p50_ms", "status_p99_ms", "list_first_page_ms", "list_filtered_page_ms",
            "runs_by_metric_ms"} == read_keys


def test_a_reads_rounds_are_kept_apart_and_its_shown_figure_pools_them() -> None:
    sides = [scale.Side(name, Path("/nonexistent"), "", 16) for name in ("empty", "full")]
    for side in sides:
        side.add(side.rounds, "tracker_passes", [3.0])  # as a submit round leaves it
        side.starts.append(1.0)
        for read in ("list_first_page", "list_filtered_page", "runs_by_metric"):
            scale.keep_round(side, read, [10.0])
    for empty_ms, full_ms in (([1.0] * 95 + [5.0] * 5, [1.0] * 95 + [50.0] * 5),  # a burst
                              ([1.0] * 100, [1.0] * 100), ([2.0] * 100, [2.0] * 100)):
        scale.keep_round(sides[0], "status", empty_ms)
        scale.keep_round(sides[1], "status", full_ms)
    assert sides[1].rounds["status_p99_ms"] == [50.0, 1.0, 2.0]
    empty, full = (scale.figures_of(side, 100.0) | {"rounds": side.rounds} for side in sides)
    assert len(sides[1].calls["status"]) == 300 and full["status_p50_ms"] == 1.0
    p99 = next(f for f in scale.FIGURES if f.key == "status_p99_ms")
    # The burst weighs on one round's ratio (10x), not on the result.
    assert scale.ratio(p99, empty, full) == 1.0
