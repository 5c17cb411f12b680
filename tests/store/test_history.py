"""The history a replay reads: which jobs count, their figures across attempts, the window,
and pages that follow one another without a gap or a repeat, on both dialects."""

from __future__ import annotations

import pytest

from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.store.db import Database
from trainyard.store.history import HistoryStore
from trainyard.store.jobs import JobStore


def launched(store: JobStore, job_id: str, at: float, started: float, attempt: int = 1) -> None:
    store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted", now=at,
                     executor="local", pool="local", attempt=attempt)
    store.mark_running(job_id, reason="started", now=started)


def finished(store: JobStore, name: str, submitted: float, started: float, ended: float,
             state: JobState = JobState.SUCCEEDED, **spec: object) -> str:
    job_id, _ = store.create(JobSpec(name=name, command="true", **spec),  # type: ignore[arg-type]
                             owner="ann", team="vision", now=submitted)
    launched(store, job_id, started - 0.5, started)
    store.transition(job_id, JobState.RUNNING, state, reason="ended", now=ended)
    return job_id


def test_only_jobs_that_ran_and_ended_count_with_their_figures(db: Database) -> None:
    store, history = JobStore(db), HistoryStore(db)
    done = finished(store, "done", 100.0, 110.0, 150.0, workers=2,
                    resources=Resources(cpus=2, memory_mb=512, gpus=1), queue="gpu",
                    priority=3)
    failed = finished(store, "failed", 101.0, 105.0, 107.0, JobState.FAILED)
    cancelled = finished(store, "cancelled", 102.0, 103.0, 104.0, JobState.CANCELLED)
    never, _ = store.create(JobSpec(name="never", command="true"), now=103.0)
    store.transition(never, JobState.WAITING, JobState.CANCELLED, reason="cancelled", now=120)
    store.create(JobSpec(name="waits", command="true"), now=104.0)
    running, _ = store.create(JobSpec(name="runs", command="true"), now=105.0)
    launched(store, running, 106.0, 106.5)
    # Preempted once: both attempts' running and launching count.
    twice, _ = store.create(JobSpec(name="twice", command="true"), now=106.0)
    launched(store, twice, 107.0, 108.0)
    store.requeue(twice, preempted="preempted", requeued="requeued", pending=("", ""),
                  now=118.0)
    launched(store, twice, 130.0, 130.25, attempt=2)
    store.transition(twice, JobState.RUNNING, JobState.SUCCEEDED, reason="ended", now=140.0)

    window = history.window(None)
    assert (window.jobs, window.first_submit) == (4, 100.0)
    page = history.page(None, 0, 100)
    assert [job.id for job in page] == [done, failed, cancelled, twice]
    first = page[0]
    assert (first.name, first.owner, first.team, first.queue, first.priority) == \
        ("done", "ann", "vision", "gpu", 3)
    assert first.resources == Resources(cpus=4, memory_mb=1024, gpus=2)  # the whole gang's
    assert (first.state, first.submitted_at, first.ended_at, first.ran_s) == \
        (JobState.SUCCEEDED, 100.0, 150.0, 40.0)
    assert first.launch_s == pytest.approx(0.5)
    assert [job.state for job in page[1:3]] == [JobState.FAILED, JobState.CANCELLED]
    last = page[3]
    assert (last.ran_s, last.attempts) == (pytest.approx(10.0 + 9.75), 2)
    assert last.launch_s == pytest.approx(1.25)


def test_the_window_and_the_pages(db: Database) -> None:
    store, history = JobStore(db), HistoryStore(db)
    ids = [finished(store, f"j{i}", 100.0 + i, 200.0 + i, 300.0 + i) for i in range(7)]
    assert history.window(104.0).jobs == 3
    assert history.window(104.0).first_submit == 104.0
    assert history.window(1000.0).jobs == 0 and history.window(1000.0).first_submit is None
    read, after = [], 0
    while page := history.page(None, after, 3):
        assert len(page) <= 3
        read += [job.id for job in page]
        after = page[-1].seq
    assert read == ids
    assert [job.id for job in history.page(104.0, 0, 10)] == ids[4:]
