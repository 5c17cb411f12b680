"""Preemption with notice on the live service and the local executor: the demo trainer,
borrowing quota another team takes back, hears its queue's notice, saves a checkpoint, is
stopped at once rather than at its grace's end, and resumes to the same model as a run
never preempted."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.api.test_runs_models import write_digits
from tests.liveserver import live_server, wait_for, wait_until
from trainyard.auth.policy import LOCAL, Identity
from trainyard.cli.main import app
from trainyard.client import Client
from trainyard.domain.spec import DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.executors.local import INHERITED_ENV
from trainyard.server.assembly import TrainyardServer
from trainyard.store.runs import RunStore
from trainyard.tracker.launch_request import THREAD_VARIABLES

REPO = Path(__file__).resolve().parents[2]
TRAINER = REPO / "examples" / "trainer.py"
SRC = REPO / "src"  # this checkout's runtime, whatever the interpreter has installed
# Long enough to be preempted mid-training on a busy machine; small enough to be quick.
HYPERPARAMETERS = {"LR": "0.1", "EPOCHS": "2500", "SEED": "3", "HIDDEN": "32",
                   "BATCH_SIZE": "64"}
GRACE = "10m"  # far longer than the test: a stop before it is the notice at work

# Ann's team borrows the pool's CPU that Bob's team owns: a job of Bob's takes it back. The
# training queue's notice and grace are formatted in, the pool's name replaced.
RECLAIMED = """
[queues.training]
pools = ["{pool}"]
teams = ["vision"]
preempt_notice = "{notice}"
preempt_grace = "{grace}"

[queues.urgent]
pools = ["{pool}"]
priority = 10
teams = ["nlp"]

[teams.vision]
members = ["ann"]
[teams.vision.quota.{pool}]
cpus = 0
borrow_cpus = 1

[teams.nlp]
members = ["bob"]
[teams.nlp.quota.{pool}]
cpus = 1
"""

POLICY = """
max_running = 4
min_runtime = "0s"

[pools.cpu]
cpus = 1
max_jobs = 2
""" + RECLAIMED.replace("{pool}", "cpu")

ANN = Identity(user="ann")
BOB = Identity(user="bob")


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("digits")
    write_digits(directory)
    return directory


@pytest.fixture(scope="module")
def unpreempted(digits: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model of the same training run outside the service, never preempted."""
    out = tmp_path_factory.mktemp("unpreempted")
    # The environment a local job gets, no more: a host's OPENBLAS_CORETYPE, say, picks
    # other kernels, whose last bits differ.
    inherited = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
    env = {**inherited, **dict.fromkeys(THREAD_VARIABLES, "1"), **HYPERPARAMETERS,
           "PYTHONPATH": str(SRC),
           "TRAINING_DATA_PATH": str(digits),
           "MODEL_SAVE_PATH": str(out / "model"), "CHECKPOINT_PATH": str(out / "checkpoint"),
           "METRICS_PATH": str(out / "metrics.jsonl")}
    subprocess.run([sys.executable, str(TRAINER)], env=env, cwd=out, check=True,
                   capture_output=True, timeout=300)
    return out / "model"


@pytest.fixture(params=["SIGUSR1", "TERM"])
def notice(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(notice: str, tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    with live_server(tmp_path, database_url, POLICY.format(notice=notice, grace=GRACE)) as srv:
        yield srv


def test_a_reclaimed_job_checkpoints_on_notice_and_resumes_to_the_same_model(
        server: TrainyardServer, notice: str, digits: Path, unpreempted: Path) -> None:
    version = server.datasets.register(LOCAL, "digits", str(digits))[0].version
    command = f"PYTHONPATH={shlex.quote(str(SRC))} {shlex.quote(sys.executable)} " \
        f"{shlex.quote(str(TRAINER))}"
    trainer, _ = server.service.train(ANN, JobSpec(
        name="mlp", command=command, queue="training", resources=Resources(cpus=1),
        dataset=DatasetRef("digits", version), hyperparameters=HYPERPARAMETERS))
    wait_for(server, trainer, {JobState.RUNNING})
    attempt_1 = server.workspace.attempt(trainer, 1)
    wait_until(lambda: attempt_1.metrics_path.read_text().count("\n") >= 2, timeout=60,
               what="the trainer's first epochs")  # it trains: the notice comes mid-run
    urgent, _ = server.service.train(BOB, JobSpec(name="fix", command="sleep 0.5",
                                                  queue="urgent", resources=Resources(cpus=1)))
    wait_for(server, urgent, {JobState.SUCCEEDED}, timeout=120)
    wait_for(server, trainer, {JobState.SUCCEEDED}, timeout=180)

    job = server.jobs.get(trainer)
    assert job.attempt == 2 and job.preemptions == 1
    # The notice file and the queue's signal reached the job, which saved its checkpoint.
    heard = {"SIGUSR1": "SIGUSR1", "TERM": "SIGTERM"}[notice]
    assert f"preemption notice ({heard}, notice file present): checkpoint saved" in \
        attempt_1.log_path.read_text()
    assert "resumed from the checkpoint" in \
        server.workspace.attempt(trainer, 2).log_path.read_text()

    first = RunStore(server.db).get(trainer, 1)
    assert first is not None
    assert first.state is JobState.PREEMPTED
    assert first.notice_at is not None and first.checkpoint_at is not None
    assert first.checkpoint_at > first.notice_at  # it saved one after the notice
    assert first.ended_at is not None and first.started_at is not None
    # Stopped by TERM once its checkpoint was saved, not KILLed at its grace's end.
    assert "SIGTERM" in first.message and "SIGKILL" not in first.message, first.message
    # What it lost: from the checkpoint to the stop, not its whole run.
    assert 0 <= first.work_lost_s <= first.ended_at - first.checkpoint_at
    assert first.work_lost_s < first.ended_at - first.started_at
    assert job.work_lost_s == pytest.approx(first.work_lost_s)

    model = server.workspace.attempt(trainer, 2).model_dir
    for name in ("weights.npz", "model.json"):
        assert (model / name).read_bytes() == (unpreempted / name).read_bytes(), name

    # What is recorded, as the SDK and the command line show it.
    with Client(f"127.0.0.1:{server.port}", timeout=20) as client:
        status = client.status(trainer)
        run = client.get_run(f"{trainer}-1")
    assert status.preemptions == 1 and status.work_lost_seconds == pytest.approx(
        first.work_lost_s)
    assert run["work_lost_seconds"] == pytest.approx(first.work_lost_s)
    assert run["notice_at"] is not None and run["checkpoint_at"] is not None
    address = ["--server", f"127.0.0.1:{server.port}"]
    shown = CliRunner().invoke(app, ["status", trainer, *address])
    assert shown.exit_code == 0, shown.output
    assert "preempted once;" in shown.output and "of work lost" in shown.output
    shown = CliRunner().invoke(app, ["runs", "show", f"{trainer}-1", *address])
    assert shown.exit_code == 0, shown.output
    assert "preemption notice" in shown.output and "checkpoint saved" in shown.output
    assert "work lost" in shown.output


def test_a_job_that_ignores_its_notice_is_stopped_at_its_graces_end(
        tmp_path: Path, database_url: str) -> None:
    policy = POLICY.format(notice="SIGUSR1", grace="1s")
    with live_server(tmp_path, database_url, policy) as server:
        sleeper, _ = server.service.train(ANN, JobSpec(name="sleeper", command="sleep 60",
                                                       queue="training",
                                                       resources=Resources(cpus=1)))
        wait_for(server, sleeper, {JobState.RUNNING})
        server.service.train(BOB, JobSpec(name="fix", command="sleep 60", queue="urgent",
                                          resources=Resources(cpus=1)))
        wait_until(lambda: server.jobs.get(sleeper).preemptions == 1, timeout=60,
                   what="the sleeper's preemption")
        first = RunStore(server.db).get(sleeper, 1)
        assert first is not None and first.state is JobState.PREEMPTED
        assert first.notice_at is not None and first.ended_at is not None
        assert first.started_at is not None and first.checkpoint_at is None
        assert first.ended_at >= first.notice_at + 1.0  # its whole grace, no sooner
        assert "killed by SIGTERM" in first.message, first.message  # not by its SIGUSR1
        # No checkpoint: it lost everything it ran.
        assert first.work_lost_s == pytest.approx(first.ended_at - first.started_at)
