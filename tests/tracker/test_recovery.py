"""Recovery at start-up: jobs left PREEMPTED wait again, active jobs are adopted, and a
server missing an executor its active jobs need says so."""

import shutil
import time
from pathlib import Path

from tests.tracker.passes import run_to_end, stepped_server
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.executors.base import Phase
from trainyard.executors.local import LocalExecutor
from trainyard.server.assembly import TrainyardServer
from trainyard.store.db import sqlite_url
from trainyard.tracker.follow import REQUEUED, REQUEUED_PENDING


def launched(stack: TrainyardServer, spec: JobSpec, executor: str = "local") -> str:
    """A job recorded LAUNCHING, as the admission pass leaves it."""
    job_id, _ = stack.jobs.create(spec)
    stack.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                          attempt=1, executor=executor,
                          handle=stack.executors["local"].handle_for(job_id, 1))
    return job_id


def test_a_job_left_preempted_waits_again_and_runs(stack: TrainyardServer) -> None:
    job_id = launched(stack, JobSpec(name="stopped", command="true"))
    stack.jobs.mark_running(job_id, reason="process started", now=time.time())
    # An earlier version's first write of a requeue, the second lost to a crash.
    stack.jobs.transition(job_id, JobState.RUNNING, JobState.PREEMPTED, reason="preempted",
                          message="preempted", preempt_requested=False)
    stack.tracker.recover()
    job = stack.jobs.get(job_id)
    assert job.state is JobState.WAITING and job.pending_code == ReasonCode.PREEMPTED
    assert job.pending_message == REQUEUED_PENDING and job.message == "preempted"
    assert stack.jobs.events(job_id)[-1].reason == REQUEUED
    assert stack.jobs.in_states([JobState.PREEMPTED]) == []
    assert run_to_end(stack, job_id) is JobState.SUCCEEDED
    assert stack.jobs.get(job_id).attempt == 2


def test_a_job_that_ran_and_ended_while_the_service_was_down_is_finished(
        stack: TrainyardServer) -> None:
    job_id = launched(stack, JobSpec(name="quick", command="true"))
    job = stack.jobs.get(job_id)
    local = stack.executors["local"]
    # The service launched it and stopped before it heard the process start.
    local.launch(stack.tracker.launcher.requests.build(job))
    deadline = time.monotonic() + 15
    while local.poll(job.handle).phase is not Phase.EXITED:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    stack.tracker.recover()
    done = stack.jobs.get(job_id)
    assert done.state is JobState.SUCCEEDED
    assert done.message == "exited with code 0; no model files were saved (while the service " \
        "was down)"
    assert [e.reason for e in stack.jobs.events(job_id)][-2] == "process had started"


def test_active_jobs_on_an_executor_not_run_here_are_named(stack: TrainyardServer) -> None:
    assert stack.tracker.missing_executors() is None
    launched(stack, JobSpec(name="boxed", image="trainyard/demo"), executor="docker")
    assert stack.tracker.missing_executors() == (
        "active jobs run where this server does not look: 1 on the docker executor (start "
        "the server with --docker)")


def test_a_launch_a_power_cut_undid_on_sqlite_runs_again_under_the_same_attempt(
        tmp_path: Path) -> None:
    # On SQLite a local job's LAUNCHING is written unsynced (Launcher.launching_synced): a
    # power cut before its RUNNING's synced commit leaves the store as its last synced
    # commit had it, the job waiting, and the launch's files on disk, its process ended
    # with the host. (Here the store's files are copied at that point, and the job runs
    # on meanwhile.) After the host's restart the job runs again as the same attempt.
    data = tmp_path / "data"
    marker = tmp_path / "ran"
    with stepped_server(tmp_path, sqlite_url(data)) as srv:
        job_id, _ = srv.jobs.create(JobSpec(name="cut", command=f"echo ran >> {marker}"))
        disk = tmp_path / "disk"
        disk.mkdir()
        for name in ("trainyard.db", "trainyard.db-wal"):
            if (data / name).exists():
                shutil.copy2(data / name, disk / name)
        assert run_to_end(srv, job_id) is JobState.SUCCEEDED
    for name in ("trainyard.db", "trainyard.db-wal", "trainyard.db-shm"):
        (data / name).unlink(missing_ok=True)
        if (disk / name).exists():
            shutil.copy2(disk / name, data / name)
    with stepped_server(tmp_path, sqlite_url(data)) as srv:
        local = srv.executors["local"]
        assert isinstance(local, LocalExecutor)
        local._boot_file(local.handle_for(job_id, 1)).write_text("an-earlier-boot")
        assert srv.jobs.get(job_id).state is JobState.WAITING
        srv.tracker.recover()
        assert run_to_end(srv, job_id) is JobState.SUCCEEDED
        assert srv.jobs.get(job_id).attempt == 1
    assert marker.read_text() == "ran\nran\n"
