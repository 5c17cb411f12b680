"""The tracker's loop: woken by submits and exits, and every part reading one clock."""

import time
from pathlib import Path
from typing import Any

import pytest

from tests.liveserver import live_server, wait_for
from tests.tracker.passes import run_to_end, step
from trainyard.auth.policy import LOCAL
from trainyard.domain.dependencies import parse_dependency
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import ACTIVE_STATES, JobState
from trainyard.executors.base import Phase
from trainyard.server.assembly import TrainyardServer
from trainyard.store.jobs import JobStore


def test_a_started_tracker_runs_a_submitted_job_to_its_end(tmp_path: Path,
                                                           database_url: str) -> None:
    with live_server(tmp_path, database_url) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="woken", command="true"))
        wait_for(srv, job_id, {JobState.SUCCEEDED})
        cancelled, _ = srv.service.train(LOCAL, JobSpec(name="stopped", command="sleep 30"))
        wait_for(srv, cancelled, {JobState.RUNNING})
        srv.service.cancel(LOCAL, cancelled)
        wait_for(srv, cancelled, {JobState.CANCELLED})


def test_every_part_reads_the_time_from_the_trackers_clock(stack: TrainyardServer) -> None:
    stack.tracker.clock = lambda: 12345.0  # swapped after the tracker was built
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="timed", command="sleep 30"))
    step(stack)
    job = stack.jobs.get(job_id)
    assert job.state is JobState.RUNNING and job.started_at == 12345.0
    assert [e.time for e in stack.jobs.events(job_id)][1:] == [12345.0, 12345.0]
    assert stack.tracker.fair_share.at == 12345.0
    stack.service.cancel(LOCAL, job_id)
    assert run_to_end(stack, job_id) is JobState.CANCELLED
    assert stack.jobs.events(job_id)[-1].time == 12345.0


def test_ends_and_cancels_are_followed_without_the_periodic_passes(
        tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # With the period an hour away, only the wake-ups end these jobs: an exit heard while
    # its job was still launching must not wait for the period, nor must a cancel. The
    # limit below is the test's bound, far beyond any wake-up's, far short of the period.
    with live_server(tmp_path, database_url, active_interval=3600.0,
                     idle_interval=3600.0) as srv:
        for i in range(3):
            job_id, _ = srv.service.train(LOCAL, JobSpec(name=f"short-{i}", command="true"))
            wait_for(srv, job_id, {JobState.SUCCEEDED}, timeout=20)
        # The launch records RUNNING only once `true` has surely ended: the pass its exit
        # woke finds it still launching.
        tracked = srv.tracker.launcher.jobs  # the tracker's own store (fenced by its lease)
        record_running = tracked.mark_running

        def late(job_id: str, **how: Any) -> None:
            time.sleep(0.5)
            record_running(job_id, **how)

        monkeypatch.setattr(tracked, "mark_running", late)
        for i in range(2):
            job_id, _ = srv.service.train(LOCAL, JobSpec(name=f"late-{i}", command="true"))
            wait_for(srv, job_id, {JobState.SUCCEEDED}, timeout=20)
        # The pass its exit woke reads it LAUNCHING, and reaches it only once its launch
        # has recorded RUNNING (as behind other jobs to follow first): that pass finds the
        # end but cannot write it from a stale state; the launch's end must wake another.
        follow = srv.tracker.follower.track

        def behind(job: Any, **how: Any) -> Any:
            time.sleep(0.05)
            return follow(job, **how)

        def soon(job_id: str, **how: Any) -> None:
            # Once its process has ended and the pass its exit woke has read the jobs.
            handle, deadline = tracked.get(job_id).handle, time.monotonic() + 10
            while srv.executors["local"].poll(handle).phase is not Phase.EXITED:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            time.sleep(0.02)
            record_running(job_id, **how)

        monkeypatch.setattr(tracked, "mark_running", soon)
        monkeypatch.setattr(srv.tracker.follower, "track", behind)
        for i in range(2):
            job_id, _ = srv.service.train(LOCAL, JobSpec(name=f"read-{i}", command="true"))
            wait_for(srv, job_id, {JobState.SUCCEEDED}, timeout=20)
        monkeypatch.undo()
        long, _ = srv.service.train(LOCAL, JobSpec(name="long", command="sleep 30"))
        wait_for(srv, long, {JobState.RUNNING}, timeout=20)
        srv.service.cancel(LOCAL, long)
        wait_for(srv, long, {JobState.CANCELLED}, timeout=20)


def exited(srv: TrainyardServer, job_id: str) -> None:
    """Wait until the job's process has ended (its executor says), its end not yet read."""
    handle, deadline = srv.jobs.get(job_id).handle, time.monotonic() + 15
    while srv.executors["local"].poll(handle).phase is not Phase.EXITED:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def first_event(srv: TrainyardServer, job_id: str, state: JobState) -> int:
    return next(e.id for e in srv.jobs.events(job_id) if e.to_state is state)


def test_an_ended_jobs_slot_goes_to_the_next_job_before_its_end_is_written(
        stack: TrainyardServer) -> None:
    first, _ = stack.service.train(LOCAL, JobSpec(name="first", command="true"))
    second, _ = stack.service.train(LOCAL, JobSpec(name="second", command="true"))
    step(stack)
    exited(stack, first)
    step(stack)  # one pass: the second starts, then the first is finished
    assert stack.jobs.get(first).state is JobState.SUCCEEDED
    assert stack.jobs.get(second).state in (JobState.RUNNING, JobState.SUCCEEDED)
    assert first_event(stack, second, JobState.LAUNCHING) < \
        first_event(stack, first, JobState.SUCCEEDED)
    # Written after, yet timed when it was seen to end: the records show one job at a time.
    times = {(e.job_id, e.to_state): e.time for job_id in (first, second)
             for e in stack.jobs.events(job_id)}
    assert times[first, JobState.SUCCEEDED] <= times[second, JobState.LAUNCHING]
    assert run_to_end(stack, second) is JobState.SUCCEEDED


def reads_of_the_active_jobs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many active jobs each read of them found, from now on."""
    reads: list[int] = []
    in_states, active = JobStore.in_states, JobStore.active

    def counted(store: JobStore, states: Any) -> Any:
        found = in_states(store, states)
        if set(states) == set(ACTIVE_STATES):
            reads.append(len(found))
        return found

    def counted_active(store: JobStore) -> Any:
        found = active(store)
        reads.append(len(found[0]))
        return found

    # On the class: the tracker reads through a store of its own (fenced by its lease).
    monkeypatch.setattr(JobStore, "in_states", counted)
    monkeypatch.setattr(JobStore, "active", counted_active)
    return reads


def test_a_pass_reads_the_active_jobs_once_for_following_and_admitting_them(
        stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = stack.service.train(LOCAL, JobSpec(name="first", command="true"))
    second, _ = stack.service.train(LOCAL, JobSpec(name="second", command="sleep 30"))
    step(stack)
    exited(stack, first)
    reads = reads_of_the_active_jobs(monkeypatch)
    step(stack)  # the first's end read, the second admitted to its slot
    assert reads == [1]
    assert stack.jobs.get(second).state is JobState.RUNNING
    stack.service.cancel(LOCAL, second)
    assert run_to_end(stack, second) is JobState.CANCELLED


def test_a_pass_whose_step_failed_reads_the_active_jobs_again_to_admit(
        stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # A step that failed may have moved its job (given it up, say): admission reads anew.
    running, _ = stack.service.train(LOCAL, JobSpec(name="running", command="sleep 30"))
    step(stack)
    track = stack.tracker.follower.track

    def failing(job: Any, **how: Any) -> Any:
        raise RuntimeError("a poll that fails")

    monkeypatch.setattr(stack.tracker.follower, "track", failing)
    reads = reads_of_the_active_jobs(monkeypatch)
    stack.tracker.run_once()
    assert reads == [1, 1]
    monkeypatch.setattr(stack.tracker.follower, "track", track)
    stack.service.cancel(LOCAL, running)
    assert run_to_end(stack, running) is JobState.CANCELLED


def test_a_job_released_by_an_end_starts_in_the_pass_that_wrote_the_end(
        stack: TrainyardServer) -> None:
    # With one slot: the end is written after admission, so the dependent it releases needs
    # the second admission of the same pass.
    first, _ = stack.service.train(LOCAL, JobSpec(name="first", command="true"))
    second, _ = stack.service.train(LOCAL, JobSpec(name="second", command="true"),
                                    after=[parse_dependency(first)])
    step(stack)
    exited(stack, first)
    step(stack)
    assert stack.jobs.get(first).state is JobState.SUCCEEDED
    assert stack.jobs.get(second).state in (JobState.RUNNING, JobState.SUCCEEDED)
    assert run_to_end(stack, second) is JobState.SUCCEEDED


def test_an_admission_that_fails_does_not_keep_an_ended_job_from_its_end(
        stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch) -> None:
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="ends", command="true"))
    step(stack)
    exited(stack, job_id)

    def broken(**_how: Any) -> int:
        raise RuntimeError("a policy that fails")

    monkeypatch.setattr(stack.tracker.admission, "run", broken)
    with pytest.raises(RuntimeError, match="a policy that fails"):
        stack.tracker.run_once()
    assert stack.jobs.get(job_id).state is JobState.SUCCEEDED


def test_a_dependent_takes_the_slot_its_need_frees_before_a_later_job(
        stack: TrainyardServer) -> None:
    # One slot, FIFO: the dependent was submitted before the other job, so the slot its
    # need frees is its own, though the need's end is written in that same pass.
    first, _ = stack.service.train(LOCAL, JobSpec(name="first", command="true"))
    dependent, _ = stack.service.train(LOCAL, JobSpec(name="dependent", command="true"),
                                       after=[parse_dependency(first)])
    later, _ = stack.service.train(LOCAL, JobSpec(name="later", command="true"))
    step(stack)
    exited(stack, first)
    step(stack)
    assert stack.jobs.get(first).state is JobState.SUCCEEDED
    assert stack.jobs.get(dependent).state in (JobState.RUNNING, JobState.SUCCEEDED)
    assert stack.jobs.get(later).state is JobState.WAITING
