"""Retries, time limits and pending timeouts on a real server running real processes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.liveserver import live_server, make_server, wait_for, wait_until
from trainyard.auth.policy import LOCAL
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.retry import Backoff
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import FINAL_STATES, JobState
from trainyard.server.assembly import TrainyardServer
from trainyard.store.records import RunRecord
from trainyard.store.runs import RunFilter, RunStore

BACKOFF = Backoff(base_s=0.4, cap_s=1.0)
# Each attempt appends its number to a file in CHECKPOINT_PATH, which every attempt of a job
# shares: the file counts executions, and lets an attempt behave by its number.
COUNT = 'echo ran >> "$CHECKPOINT_PATH/ran"; n=$(wc -l < "$CHECKPOINT_PATH/ran"); '


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    with live_server(tmp_path, database_url, retry_backoff=BACKOFF) as srv:
        yield srv


def submit(srv: TrainyardServer, command: str, **spec: object) -> str:
    return srv.service.train(LOCAL, JobSpec(name="retry", command=COUNT + command,
                                            **spec))[0]  # type: ignore[arg-type]


def executions(srv: TrainyardServer, job_id: str) -> int:
    path = srv.workspace.attempt(job_id, 1).checkpoint_dir / "ran"
    return len(path.read_text().splitlines()) if path.exists() else 0


def runs(srv: TrainyardServer, job_id: str) -> list[RunRecord]:
    found, _ = RunStore(srv.db).page(RunFilter(job_id=job_id), limit=100)
    return sorted(found, key=lambda run: run.attempt)


def runs_of(srv: TrainyardServer, job_id: str) -> list[tuple[int, JobState, int | None]]:
    return [(run.attempt, run.state, run.exit_code) for run in runs(srv, job_id)]


def finish(srv: TrainyardServer, job_id: str) -> None:
    wait_for(srv, job_id, set(FINAL_STATES), timeout=60)


def test_a_failed_attempt_is_retried_when_the_job_asks_and_each_attempt_is_a_run(
        server: TrainyardServer) -> None:
    job_id = submit(server, '[ "$n" -ge 3 ]', max_attempts=3, retry_on_failure=True)
    seen_backoff = []
    deadline = time.monotonic() + 60
    while (job := server.jobs.get(job_id)).state not in FINAL_STATES:
        assert time.monotonic() < deadline
        if job.pending_code == "BACKOFF":
            seen_backoff.append(job.pending_message)
        time.sleep(0.02)
    assert job.state is JobState.SUCCEEDED, job.message
    assert job.retries == 2 and job.attempt == 3
    assert executions(server, job_id) == 3
    assert runs_of(server, job_id) == [(1, JobState.FAILED, 1), (2, JobState.FAILED, 1),
                                       (3, JobState.SUCCEEDED, 0)]
    assert seen_backoff, "it never waited with its back-off as the reason"
    assert any(m.startswith("attempt 2 of 3 starts after a ") and
               m.endswith("back-off; attempt 1 failed: exited with code 1")
               for m in seen_backoff), seen_backoff
    moves = [(e.from_state, e.to_state) for e in server.jobs.events(job_id)]
    assert moves.count((JobState.FAILED, JobState.WAITING)) == 2


def test_a_failure_is_final_unless_the_job_asks(server: TrainyardServer) -> None:
    job_id = submit(server, "exit 3", max_attempts=3)
    finish(server, job_id)
    job = server.jobs.get(job_id)
    assert (job.state, job.message, job.retries) == (JobState.FAILED, "exited with code 3", 0)
    assert executions(server, job_id) == 1


def test_only_listed_exit_codes_are_retried(server: TrainyardServer) -> None:
    listed = submit(server, '[ "$n" -ge 2 ] || exit 75', max_attempts=2,
                    retry_exit_codes=(75,))
    unlisted = submit(server, "exit 4", max_attempts=2, retry_exit_codes=(75,))
    finish(server, listed)
    finish(server, unlisted)
    assert server.jobs.get(listed).state is JobState.SUCCEEDED
    assert executions(server, listed) == 2
    assert server.jobs.get(unlisted).state is JobState.FAILED
    assert executions(server, unlisted) == 1


def test_a_job_that_uses_its_attempts_fails_saying_so(server: TrainyardServer) -> None:
    job_id = submit(server, "exit 1", max_attempts=2, retry_on_failure=True)
    finish(server, job_id)
    job = server.jobs.get(job_id)
    assert job.state is JobState.FAILED
    assert job.message == "exited with code 1; 2 attempts lost or failed, the most it allows"
    assert executions(server, job_id) == 2


def test_the_next_attempt_waits_out_its_back_off(server: TrainyardServer) -> None:
    job_id = submit(server, '[ "$n" -ge 2 ]', max_attempts=2, retry_on_failure=True)
    finish(server, job_id)
    first, second = runs(server, job_id)
    assert first.ended_at is not None and second.launched_at is not None
    # The first retry waits between half the base and all of it.
    assert second.launched_at - first.ended_at >= BACKOFF.base_s / 2


def test_a_cancel_during_the_back_off_ends_the_job(server: TrainyardServer) -> None:
    slow = Backoff(base_s=30, cap_s=30)
    server.tracker.follower.retries.backoff = slow
    job_id = submit(server, "exit 1", max_attempts=3, retry_on_failure=True)
    wait_until(lambda: server.jobs.get(job_id).pending_code == "BACKOFF", what="back-off")
    assert server.jobs.get(job_id).retry_after is not None
    assert server.service.cancel(LOCAL, job_id) is JobState.CANCELLED
    time.sleep(0.5)
    assert server.jobs.get(job_id).state is JobState.CANCELLED
    assert executions(server, job_id) == 1


def test_watch_follows_a_job_through_its_retries_to_its_end(server: TrainyardServer) -> None:
    job_id = submit(server, '[ "$n" -ge 2 ]', max_attempts=2, retry_on_failure=True)
    events = list(server.service.watch(LOCAL, job_id, is_active=lambda: True,
                                       poll_seconds=0.05))
    states = [e.to_state for e, _ in events]
    assert states[-1] is JobState.SUCCEEDED
    # Only the job's end is marked final, not the retried attempt's FAILED.
    assert [final for _, final in events] == [False] * (len(events) - 1) + [True]
    assert JobState.FAILED in states and states.count(JobState.RUNNING) == 2


def test_an_attempt_past_its_time_limit_is_stopped_and_fails(server: TrainyardServer) -> None:
    began = time.monotonic()
    job_id = submit(server, "sleep 60", time_limit_s=1, max_attempts=3,
                    retry_on_failure=True)
    finish(server, job_id)
    job = server.jobs.get(job_id)
    assert job.state is JobState.FAILED
    assert job.message.startswith("time limit of 1 s reached; "), job.message
    assert time.monotonic() - began < 30
    assert executions(server, job_id) == 1  # a time limit is not retried


def test_a_job_still_waiting_after_its_pending_timeout_is_cancelled(
        tmp_path: Path, database_url: str) -> None:
    with live_server(tmp_path, database_url, max_concurrent=1) as srv:
        blocker = srv.service.train(LOCAL, JobSpec(name="blocker", command="sleep 30"))[0]
        wait_for(srv, blocker, {JobState.RUNNING})
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="patient", command="true",
                                                     pending_timeout_s=1))
        wait_for(srv, job_id, {JobState.CANCELLED}, timeout=15)
        job = srv.jobs.get(job_id)
        assert job.message == "still waiting after 1 s, its pending timeout; cancelled"
        assert job.attempt == 0
        assert srv.jobs.get(blocker).state is JobState.RUNNING


POLICY = """
[pools.cpu]
cpus = 8
max_jobs = 4
[queues.batch]
pools = ["cpu"]
max_attempts = 5
time_limit = "1h"
max_time_limit = "2h"
[queues.open]
pools = ["cpu"]
"""


def test_a_queue_gives_its_defaults_and_holds_its_longest_time_limit(
        tmp_path: Path, database_url: str) -> None:
    with live_server(tmp_path, database_url, policy=POLICY) as srv:
        plain = srv.service.train(LOCAL, JobSpec(name="a", command="sleep 30",
                                                 queue="batch"))[0]
        spec = srv.jobs.get(plain).spec
        assert (spec.max_attempts, spec.time_limit_s) == (5, 3600)
        own = srv.service.train(LOCAL, JobSpec(name="b", command="true", queue="batch",
                                               max_attempts=1, time_limit_s=7200))[0]
        spec = srv.jobs.get(own).spec
        assert (spec.max_attempts, spec.time_limit_s) == (1, 7200)
        before = len(srv.jobs.in_states([JobState.WAITING, JobState.LAUNCHING,
                                         JobState.RUNNING, JobState.SUCCEEDED]))
        with pytest.raises(InvalidArgument) as refused:
            srv.service.train(LOCAL, JobSpec(name="c", command="true", queue="batch",
                                             time_limit_s=3 * 3600))
        assert refused.value.field == "time_limit"
        assert "3 h is longer than queue 'batch' allows (at most 2 h)" in str(refused.value)
        after = len(srv.jobs.in_states([JobState.WAITING, JobState.LAUNCHING,
                                        JobState.RUNNING, JobState.SUCCEEDED]))
        assert after == before
        other = srv.service.train(LOCAL, JobSpec(name="d", command="true", queue="open"))[0]
        spec = srv.jobs.get(other).spec
        assert (spec.max_attempts, spec.time_limit_s) == (3, 0)


def test_a_back_off_outlives_a_restart_and_the_retry_runs_once(tmp_path: Path,
                                                               database_url: str) -> None:
    slow = Backoff(base_s=4, cap_s=4)
    first = make_server(tmp_path, database_url, retry_backoff=slow)
    first.start()
    try:
        job_id = submit(first, '[ "$n" -ge 2 ]', max_attempts=2, retry_on_failure=True)
        wait_until(lambda: first.jobs.get(job_id).pending_code == "BACKOFF", what="back-off")
        retry_after = first.jobs.get(job_id).retry_after
    finally:
        first.stop(grace=0)  # it stops while the job waits out its back-off
    assert retry_after is not None
    with live_server(tmp_path, database_url, retry_backoff=slow) as second:
        finish(second, job_id)
        job = second.jobs.get(job_id)
        assert job.state is JobState.SUCCEEDED and job.attempt == 2
        assert executions(second, job_id) == 2
        _, retried = runs(second, job_id)
        assert retried.launched_at >= retry_after
