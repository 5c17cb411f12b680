"""Following active jobs, one pass at a time, on both dialects: stops delivered, metrics
ingested, and ends written as settle() decides."""

import time
from pathlib import Path
from typing import Any

import pytest

from tests.tracker.passes import run_to_end, step, stepped_server
from trainyard.auth.policy import LOCAL
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer
from trainyard.tracker.follow import MAX_TRACKING_FAILURES, REQUEUED


def test_success_collects_metrics_and_the_model(stack: TrainyardServer) -> None:
    command = (
        'printf \'{"step": 1, "loss": 0.9}\\nnot json\\n{"step": 2, "loss": 0.4, "acc": 0.8}\\n\''
        ' >> "$METRICS_PATH"; echo "$LR" > "$MODEL_SAVE_PATH/weights.txt"'
    )
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="model-a", command=command,
                                                   hyperparameters={"LR": "0.3"}))
    assert run_to_end(stack, job_id) is JobState.SUCCEEDED
    status = stack.service.status(LOCAL, job_id)
    assert status.job.exit_code == 0 and status.job.malformed_metric_lines == 1
    assert status.latest_metrics == {"loss": (0.4, 2), "acc": (0.8, 2)}
    model = status.model
    assert model is not None and (model.model_name, model.version) == ("model-a", 1)
    stored = Path(model.uri.removeprefix("file://"))
    assert (stored / "weights.txt").read_text() == "0.3\n"
    assert [e.to_state for e in status.events] == [
        JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING, JobState.SUCCEEDED]
    assert status.job.message == "exited with code 0; model model-a version 1"
    # A second run of the same name is the model's next version.
    again, _ = stack.service.train(LOCAL, JobSpec(name="model-a", command=command,
                                                  hyperparameters={"LR": "0.5"}))
    run_to_end(stack, again)
    assert stack.service.status(LOCAL, again).model.version == 2  # type: ignore[union-attr]


def test_failure_records_the_exit_code(stack: TrainyardServer) -> None:
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="bad", command="echo boom >&2; exit 4"))
    assert run_to_end(stack, job_id) is JobState.FAILED
    job = stack.jobs.get(job_id)
    assert job.exit_code == 4 and job.message == "exited with code 4"
    logs = b"".join(d for _, d in stack.service.logs(LOCAL, job_id, follow=False, offset=0,
                                                             is_active=lambda: True))
    assert logs == b"boom\n"


def test_cancel_running_job_ends_cancelled(stack: TrainyardServer) -> None:
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="long", command="sleep 60"))
    step(stack)
    assert stack.jobs.get(job_id).state is JobState.RUNNING
    assert stack.service.cancel(LOCAL, job_id) is JobState.RUNNING
    assert run_to_end(stack, job_id) is JobState.CANCELLED
    assert stack.jobs.get(job_id).message.startswith("cancelled by request")


def test_a_preempted_job_waits_again_in_one_step_and_runs_again(
        stack: TrainyardServer) -> None:
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="victim", command="sleep 30"))
    step(stack)
    # What the admission pass writes for a victim; the next passes stop and requeue it.
    assert stack.jobs.update_fields(job_id, JobState.RUNNING, preempt_requested=True,
                                    message="for a test")
    deadline = time.monotonic() + 15
    while stack.jobs.get(job_id).attempt < 2:
        assert time.monotonic() < deadline, stack.jobs.get(job_id)
        step(stack)
    events = stack.jobs.events(job_id)
    states = [e.to_state for e in events]
    assert states[:6] == [JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING,
                          JobState.PREEMPTED, JobState.WAITING, JobState.LAUNCHING]
    stopped, requeued = events[3], events[4]
    assert stopped.reason.startswith("for a test (") and stopped.time == requeued.time
    assert requeued.reason == REQUEUED
    assert not stack.jobs.get(job_id).preempt_requested
    stack.service.cancel(LOCAL, job_id)
    assert run_to_end(stack, job_id) is JobState.CANCELLED


def test_a_job_that_cannot_be_followed_fails_after_some_tries(
        stack: TrainyardServer) -> None:
    # A container job on a server that runs no containers (as a store shared with one that
    # did might hold).
    job_id, _ = stack.jobs.create(JobSpec(name="boxed", image="trainyard/demo"))
    stack.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                          attempt=1, executor="docker", handle="trainyard-x-1")
    for _ in range(MAX_TRACKING_FAILURES - 1):
        stack.tracker.run_once()
        assert stack.jobs.get(job_id).state is JobState.LAUNCHING
    stack.tracker.run_once()
    job = stack.jobs.get(job_id)
    assert job.state is JobState.FAILED
    assert job.message == (f"tracking failed {MAX_TRACKING_FAILURES} times: this server runs "
                           "no docker executor")


def test_the_last_metric_lines_are_ingested_even_without_a_newline(
    stack: TrainyardServer,
) -> None:
    # After the tracker has read step 1, the job writes a complete line and an unterminated
    # one and exits: one pass must ingest both, the first as a running job's, the second as
    # the final read.
    command = ('printf \'{"step": 1, "loss": 0.9}\\n\' >> "$METRICS_PATH"; sleep 0.3; '
               'printf \'{"step": 2, "loss": 0.4}\\n{"step": 3, "loss": 0.2}\' '
               '>> "$METRICS_PATH"')
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="tail", command=command))
    step(stack)
    time.sleep(0.1)
    stack.tracker.run_once()  # ingests step 1 while the job still runs
    time.sleep(0.5)  # the job writes the rest and exits
    assert run_to_end(stack, job_id) is JobState.SUCCEEDED
    assert stack.tracker.metrics.series(job_id, "loss") == [(1, 0.9), (2, 0.4), (3, 0.2)]


@pytest.mark.parametrize("sabotage", ["mkdir", "mkfifo"])
def test_a_job_that_breaks_its_metrics_file_cannot_stall_the_tracker(
    stack: TrainyardServer, sabotage: str,
) -> None:
    command = f'rm "$METRICS_PATH"; {sabotage} "$METRICS_PATH"; sleep 0.3'
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="saboteur", command=command))
    other, _ = stack.service.train(LOCAL, JobSpec(name="other", command="true"))
    assert run_to_end(stack, job_id) is JobState.SUCCEEDED
    assert run_to_end(stack, other) is JobState.SUCCEEDED


def test_a_log_swapped_for_a_link_is_not_followed(stack: TrainyardServer) -> None:
    command = ('log="$(dirname "$METRICS_PATH")/output.log"; rm "$log"; '
               'ln -s /etc/passwd "$log"')
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="sneaky", command=command))
    assert run_to_end(stack, job_id) is JobState.SUCCEEDED
    logs = b"".join(d for _, d in stack.service.logs(LOCAL, job_id, follow=False, offset=0,
                                                             is_active=lambda: True))
    assert b"root:" not in logs


def test_a_pass_between_the_metrics_periods_ingests_only_what_ended(
    tmp_path: Path, database_url: str,
) -> None:
    # A pass woken by an exit (ingest=False) follows every job, but reads metrics only of
    # the job that ended, in full; the running one's wait for the next periodic pass.
    point = 'printf \'{"step": 1, "loss": 0.9}\\n\' >> "$METRICS_PATH"'
    with stepped_server(tmp_path, database_url, max_concurrent=2) as srv:
        running, _ = srv.service.train(LOCAL, JobSpec(name="r", command=f"{point}; sleep 30"))
        ending, _ = srv.service.train(LOCAL, JobSpec(name="e", command=f"{point}; sleep 0.3"))
        step(srv)
        assert {srv.jobs.get(j).state for j in (running, ending)} == {JobState.RUNNING}
        deadline = time.monotonic() + 15
        while not srv.jobs.get(ending).state.is_final():
            assert time.monotonic() < deadline
            time.sleep(0.05)
            srv.tracker.run_once(ingest=False)
        assert srv.jobs.get(ending).state is JobState.SUCCEEDED
        assert srv.tracker.metrics.series(ending, "loss") == [(1, 0.9)]
        assert srv.tracker.metrics.series(running, "loss") == []
        srv.tracker.run_once()  # the period's pass
        assert srv.tracker.metrics.series(running, "loss") == [(1, 0.9)]
        srv.service.cancel(LOCAL, running)
        assert run_to_end(srv, running) is JobState.CANCELLED


def test_a_jobs_end_leaves_no_unsynced_write_behind(
    stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The metrics and the model version are written unsynced: the final state's synced
    # commit, last of all, carries them to disk (a power cut undoes all three together, and
    # the job is finished again from its files).
    command = ('printf \'{"step": 1, "loss": 0.9}\\n\' >> "$METRICS_PATH"; '
               'echo w > "$MODEL_SAVE_PATH/weights.txt"')
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="synced-end", command=command))
    step(stack)
    time.sleep(0.3)  # it has written both and exited
    writes: list[bool] = []
    real_write = stack.db.write

    def recorded(*, synced: bool = True) -> Any:
        writes.append(synced)
        return real_write(synced=synced)

    monkeypatch.setattr(stack.db, "write", recorded)
    assert run_to_end(stack, job_id) is JobState.SUCCEEDED
    monkeypatch.undo()
    status = stack.service.status(LOCAL, job_id)
    assert status.model is not None and status.latest_metrics == {"loss": (0.9, 1)}
    # The end's pass: the running job's last ingest, its model version, its final state.
    assert writes == [False, False, True]
