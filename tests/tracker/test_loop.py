"""The tracker's loop: woken by submits and exits, and every part reading one clock."""

from pathlib import Path

from tests.liveserver import live_server, wait_for
from tests.tracker.passes import run_to_end, step
from trainyard.auth.policy import LOCAL
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer


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
