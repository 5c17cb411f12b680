"""Job token rows and runtime stream positions, on both dialects: a token row per attempt,
gone when its attempt ends; a stream's offset and sequence numbers moved together."""

from __future__ import annotations

from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.store.db import Database
from trainyard.store.job_tokens import JobTokenStore
from trainyard.store.jobs import JobStore
from trainyard.store.runtime_streams import RuntimeStreamStore, StreamPosition


def _running(jobs: JobStore, attempt: int = 1) -> str:
    job_id, _ = jobs.create(JobSpec(name="j", command="true"))
    jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="t", executor="slurm",
                    pool="p", attempt=attempt)
    jobs.mark_running(job_id, reason="t", now=1.0)
    return job_id


def test_a_token_row_is_replaced_for_its_attempt_and_read_beside_its_job(db: Database) -> None:
    jobs, tokens = JobStore(db), JobTokenStore(db)
    job_id = _running(jobs)
    tokens.put(job_id, 1, "a" * 64, now=1.0)
    tokens.put(job_id, 1, "b" * 64, now=2.0)  # a relaunch of the same attempt
    view = tokens.lookup(job_id, 1)
    assert view.secret_hash == "b" * 64
    assert view.job is not None and view.job.id == job_id and view.job.attempt == 1
    assert view.job.state is JobState.RUNNING
    other = tokens.lookup(job_id, 2)
    assert other.secret_hash is None and other.job is not None
    assert tokens.lookup("nosuchjob", 1) == tokens.lookup("nosuchjob", 1)
    assert tokens.lookup("nosuchjob", 1).job is None
    assert tokens.attempts(job_id) == [1]


def test_the_rows_go_when_the_attempt_ends(db: Database) -> None:
    jobs, tokens = JobStore(db), JobTokenStore(db)
    ended, preempted, running = _running(jobs), _running(jobs), _running(jobs)
    for job_id in (ended, preempted, running):
        tokens.put(job_id, 1, "c" * 64, now=1.0)
    jobs.transition(ended, JobState.RUNNING, JobState.SUCCEEDED, reason="t")
    jobs.requeue(preempted, preempted="p", requeued="r", pending=("PREEMPTED", "p"))
    assert tokens.attempts(ended) == [] and tokens.attempts(preempted) == []
    assert tokens.attempts(running) == [1]


def test_a_stream_position_moves_offset_and_seqs_together(db: Database) -> None:
    jobs, streams = JobStore(db), RuntimeStreamStore(db)
    job_id = _running(jobs)
    first = streams.position(job_id, 1, "metrics")
    assert first == StreamPosition() and first.next_seq(0) == 0
    streams.commit(job_id, 1, "metrics", first, StreamPosition(120, {0: 10}, stored=True))
    second = streams.position(job_id, 1, "metrics")
    assert second == StreamPosition(120, {0: 10}, stored=True)
    streams.commit(job_id, 1, "metrics", second, StreamPosition(200, {0: 10, 1: 4},
                                                                stored=True))
    assert streams.position(job_id, 1, "metrics").next_seqs == {0: 10, 1: 4}
    assert streams.position(job_id, 1, "log") == StreamPosition()
    assert streams.position(job_id, 2, "metrics") == StreamPosition()
