"""The tracker, one pass at a time (no background thread), on both dialects."""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import delete

from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import DatasetRef, JobSpec
from trainyard.domain.states import JobState
from trainyard.scheduler import Decisions, FifoPolicy, Snapshot
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.store.schema import dataset_versions
from trainyard.tracker import TrackerConfig


@pytest.fixture
def stack(tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", database_url=database_url,
                                       tracker=TrackerConfig(max_concurrent=1)))
    yield srv
    srv.tracker.stop()
    srv.db.close()



def step(srv: TrainyardServer) -> None:
    """One pass, and the launches it started."""
    srv.tracker.run_once()
    assert srv.tracker.wait_for_launches()


def settle(srv: TrainyardServer, job_id: str, timeout: float = 15) -> JobState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        step(srv)
        state = srv.jobs.get(job_id).state
        if state.is_final():
            return state
        time.sleep(0.02)
    raise AssertionError(f"{job_id} still {state}")


def test_one_slot_admits_the_oldest_and_explains_the_rest(stack: TrainyardServer) -> None:
    ids = [stack.service.train(JobSpec(name=f"j{i}", command="sleep 5"))[0] for i in range(3)]
    step(stack)
    states = [stack.jobs.get(i).state for i in ids]
    assert states == [JobState.RUNNING, JobState.WAITING, JobState.WAITING]
    second = stack.service.status(ids[1])
    assert second.queue_position == 1
    assert second.job.pending_code == ReasonCode.GLOBAL_CONCURRENCY_LIMIT
    assert "the only job slot is in use" in second.job.pending_message
    assert stack.service.status(ids[2]).queue_position == 2
    for job_id in ids:
        stack.service.cancel(job_id)
    assert settle(stack, ids[0]) is JobState.CANCELLED


def test_success_collects_metrics_and_the_model(stack: TrainyardServer) -> None:
    command = (
        'printf \'{"step": 1, "loss": 0.9}\\nnot json\\n{"step": 2, "loss": 0.4, "acc": 0.8}\\n\''
        ' >> "$METRICS_PATH"; echo "$LR" > "$MODEL_SAVE_PATH/weights.txt"'
    )
    job_id, _ = stack.service.train(JobSpec(name="model-a", command=command,
                                            hyperparameters={"LR": "0.3"}))
    assert settle(stack, job_id) is JobState.SUCCEEDED
    status = stack.service.status(job_id)
    assert status.job.exit_code == 0 and status.job.malformed_metric_lines == 1
    assert status.latest_metrics == {"loss": (0.4, 2), "acc": (0.8, 2)}
    model = status.model
    assert model is not None and (model.model_name, model.version) == ("model-a", 1)
    stored = Path(model.uri.removeprefix("file://"))
    assert (stored / "weights.txt").read_text() == "0.3\n"
    assert [e.to_state for e in status.events] == [
        JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING, JobState.SUCCEEDED]
    # A second run of the same name is the model's next version.
    again, _ = stack.service.train(JobSpec(name="model-a", command=command,
                                           hyperparameters={"LR": "0.5"}))
    settle(stack, again)
    assert stack.service.status(again).model.version == 2  # type: ignore[union-attr]


def test_failure_records_the_exit_code(stack: TrainyardServer) -> None:
    job_id, _ = stack.service.train(JobSpec(name="bad", command="echo boom >&2; exit 4"))
    assert settle(stack, job_id) is JobState.FAILED
    job = stack.jobs.get(job_id)
    assert job.exit_code == 4 and job.message == "exited with code 4"
    logs = b"".join(d for _, d in stack.service.logs(job_id, follow=False, offset=0,
                                                      is_active=lambda: True))
    assert logs == b"boom\n"


def test_contract_environment(stack: TrainyardServer, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINYARD_SERVER", "127.0.0.1:1")
    monkeypatch.setenv("SOME_SECRET_TOKEN", "hunter2")
    data = tmp_path / "ds"
    data.mkdir()
    (data / "x.csv").write_text("1,2\n")
    record, _ = stack.service.register_dataset("toy", str(data))
    command = ('cat "$TRAINING_DATA_PATH/x.csv" > "$MODEL_SAVE_PATH/seen"; env > '
               '"$MODEL_SAVE_PATH/env"')
    spec = JobSpec(name="env", command=command, hyperparameters={"LR": "0.1", "EPOCHS": "2"},
                   dataset=DatasetRef("toy", record.version))
    job_id, _ = stack.service.train(spec)
    assert settle(stack, job_id) is JobState.SUCCEEDED
    stored = Path(stack.service.status(job_id).model.uri.removeprefix("file://"))  # type: ignore[union-attr]
    env = dict(line.split("=", 1) for line in (stored / "env").read_text().splitlines()
               if "=" in line)
    paths = stack.workspace.attempt(job_id, 1)
    assert env["JOB_ID"] == job_id
    assert env["TRAINING_DATA_PATH"] == record.path
    assert env["MODEL_SAVE_PATH"] == str(paths.model_dir)
    assert env["METRICS_PATH"] == str(paths.metrics_path)
    assert env["CHECKPOINT_PATH"] == str(paths.checkpoint_dir)
    assert env["HYPERPARAMETERS"] == '{"EPOCHS": "2", "LR": "0.1"}'
    assert env["LR"] == "0.1" and env["EPOCHS"] == "2"
    assert (stored / "seen").read_text() == "1,2\n"
    # The dataset is read-only by file mode (a job running as root could still write).
    assert Path(record.path).stat().st_mode & 0o777 == 0o555
    assert (Path(record.path) / "x.csv").stat().st_mode & 0o777 == 0o444
    # Nothing of the service's own environment reaches the job beyond the allowed names.
    assert "TRAINYARD_SERVER" not in env and "SOME_SECRET_TOKEN" not in env
    assert env["CUDA_VISIBLE_DEVICES"] == ""  # no GPUs asked for, none visible


def test_cancel_running_job_ends_cancelled(stack: TrainyardServer) -> None:
    job_id, _ = stack.service.train(JobSpec(name="long", command="sleep 60"))
    step(stack)
    assert stack.jobs.get(job_id).state is JobState.RUNNING
    assert stack.service.cancel(job_id) is JobState.RUNNING
    assert settle(stack, job_id) is JobState.CANCELLED
    assert stack.jobs.get(job_id).message.startswith("cancelled by request")


def test_a_vanished_dataset_fails_the_launch_with_a_message(stack: TrainyardServer,
                                                           tmp_path: Path) -> None:
    data = tmp_path / "ds"
    data.mkdir()
    (data / "a").write_text("a")
    record, _ = stack.service.register_dataset("gone", str(data))
    job_id, _ = stack.service.train(JobSpec(name="j", command="true",
                                            dataset=DatasetRef("gone", record.version)))
    with stack.db.write() as conn:
        conn.execute(delete(dataset_versions))
    assert settle(stack, job_id) is JobState.FAILED
    assert "launch failed: dataset gone:" in stack.jobs.get(job_id).message


class CountingPolicy(FifoPolicy):
    def __init__(self, max_running: int) -> None:
        super().__init__(max_running)
        self.passes = 0

    def schedule(self, snapshot: Snapshot) -> Decisions:
        self.passes += 1
        return super().schedule(snapshot)


def test_submits_to_a_saturated_queue_are_explained_without_a_full_pass(
    stack: TrainyardServer,
) -> None:
    policy = CountingPolicy(stack.tracker.config.max_concurrent)
    stack.tracker.policy = policy
    first, _ = stack.service.train(JobSpec(name="first", command="sleep 30"))
    step(stack)
    assert policy.passes == 1 and stack.jobs.get(first).state is JobState.RUNNING
    later = [stack.service.train(JobSpec(name=f"later{i}", command="true"))[0]
             for i in range(3)]
    stack.tracker.run_once(reconcile=False)  # what a submit-only wake-up runs
    assert policy.passes == 1
    for job_id in later:
        job = stack.jobs.get(job_id)
        assert job.state is JobState.WAITING
        assert job.pending_code == ReasonCode.GLOBAL_CONCURRENCY_LIMIT
    stack.service.cancel(first)
    assert settle(stack, first) is JobState.CANCELLED
    assert policy.passes > 1
    assert settle(stack, later[0]) is JobState.SUCCEEDED


def test_the_last_metric_lines_are_ingested_even_without_a_newline(
    stack: TrainyardServer,
) -> None:
    # After the tracker has read step 1, the job writes a complete line and an unterminated
    # one and exits: one pass must ingest both, the first as a running job's, the second as
    # the final read.
    command = ('printf \'{"step": 1, "loss": 0.9}\\n\' >> "$METRICS_PATH"; sleep 0.3; '
               'printf \'{"step": 2, "loss": 0.4}\\n{"step": 3, "loss": 0.2}\' '
               '>> "$METRICS_PATH"')
    job_id, _ = stack.service.train(JobSpec(name="tail", command=command))
    step(stack)
    time.sleep(0.1)
    stack.tracker.run_once()  # ingests step 1 while the job still runs
    time.sleep(0.5)  # the job writes the rest and exits
    assert settle(stack, job_id) is JobState.SUCCEEDED
    assert stack.tracker.metrics.series(job_id, "loss") == [(1, 0.9), (2, 0.4), (3, 0.2)]


@pytest.mark.parametrize("sabotage", ["mkdir", "mkfifo"])
def test_a_job_that_breaks_its_metrics_file_cannot_stall_the_tracker(
    stack: TrainyardServer, sabotage: str,
) -> None:
    command = f'rm "$METRICS_PATH"; {sabotage} "$METRICS_PATH"; sleep 0.3'
    job_id, _ = stack.service.train(JobSpec(name="saboteur", command=command))
    other, _ = stack.service.train(JobSpec(name="other", command="true"))
    assert settle(stack, job_id) is JobState.SUCCEEDED
    assert settle(stack, other) is JobState.SUCCEEDED


def test_a_log_swapped_for_a_link_is_not_followed(stack: TrainyardServer) -> None:
    command = ('log="$(dirname "$METRICS_PATH")/output.log"; rm "$log"; '
               'ln -s /etc/passwd "$log"')
    job_id, _ = stack.service.train(JobSpec(name="sneaky", command=command))
    assert settle(stack, job_id) is JobState.SUCCEEDED
    logs = b"".join(d for _, d in stack.service.logs(job_id, follow=False, offset=0,
                                                      is_active=lambda: True))
    assert b"root:" not in logs
