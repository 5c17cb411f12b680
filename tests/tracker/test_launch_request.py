"""What a launch asks of its executor: the contract's files and environment, and the dataset
version, which must still be there."""

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import delete

from tests.tracker.passes import run_to_end
from trainyard.auth.job_grants import JobGrants
from trainyard.auth.policy import LOCAL
from trainyard.domain.errors import Unauthenticated
from trainyard.domain.spec import AlgorithmRef, DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.executors.base import LaunchError
from trainyard.metadata.hashing import store_tree
from trainyard.metadata.workspace import AttemptPaths
from trainyard.server.assembly import TrainyardServer
from trainyard.store.job_tokens import JobTokenStore
from trainyard.store.records import JobRecord
from trainyard.store.schema import dataset_versions
from trainyard.tracker.launch_request import (
    ENGINE_LIMIT_SLACK_S,
    THREAD_VARIABLES,
    LaunchRequests,
)


def test_contract_environment(stack: TrainyardServer, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINYARD_SERVER", "127.0.0.1:1")
    monkeypatch.setenv("SOME_SECRET_TOKEN", "hunter2")
    data = tmp_path / "ds"
    data.mkdir()
    (data / "x.csv").write_text("1,2\n")
    record, _ = stack.datasets.register(LOCAL, "toy", str(data))
    command = ('cat "$TRAINING_DATA_PATH/x.csv" > "$MODEL_SAVE_PATH/seen"; env > '
               '"$MODEL_SAVE_PATH/env"')
    spec = JobSpec(name="env", command=command, hyperparameters={"LR": "0.1", "EPOCHS": "2"},
                   dataset=DatasetRef("toy", record.version))
    job_id, _ = stack.service.train(LOCAL, spec)
    assert run_to_end(stack, job_id) is JobState.SUCCEEDED
    stored = Path(stack.service.status(LOCAL, job_id).model.uri.removeprefix("file://"))  # type: ignore[union-attr]
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


def test_a_vanished_dataset_fails_the_launch_with_a_message(stack: TrainyardServer,
                                                           tmp_path: Path) -> None:
    data = tmp_path / "ds"
    data.mkdir()
    (data / "a").write_text("a")
    record, _ = stack.datasets.register(LOCAL, "gone", str(data))
    job_id, _ = stack.service.train(LOCAL, JobSpec(name="j", command="true",
                                                   dataset=DatasetRef("gone", record.version)))
    with stack.db.write() as conn:
        conn.execute(delete(dataset_versions))
    assert run_to_end(stack, job_id) is JobState.FAILED
    assert "launch failed: dataset gone:" in stack.jobs.get(job_id).message


def test_a_dataset_version_launched_once_is_not_read_again(
        stack: TrainyardServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A version a job names is never deleted, so its path cannot change under the launches.
    data = tmp_path / "kept"
    data.mkdir()
    (data / "a").write_text("a")
    record, _ = stack.datasets.register(LOCAL, "kept", str(data))
    requests = LaunchRequests(stack.workspace, stack.tracker.launcher.requests.datasets)
    reads: list[tuple[str, str]] = []
    get = requests.datasets.get

    def counted(name: str, version: str) -> object:
        reads.append((name, version))
        return get(name, version)

    monkeypatch.setattr(requests.datasets, "get", counted)
    spec = JobSpec(name="d", command="true", dataset=DatasetRef("kept", record.version))
    first, second = (requests.build(launching(stack, spec)) for _ in range(2))
    assert first.files.data == second.files.data == Path(record.path)
    assert reads == [("kept", record.version)]


def test_a_launch_of_a_prepared_attempt_makes_no_directory_again(
        stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch) -> None:
    requests = LaunchRequests(stack.workspace, stack.tracker.launcher.requests.datasets)
    made: list[Path] = []
    create = AttemptPaths.create

    def counted(paths: AttemptPaths) -> None:
        made.append(paths.root)
        create(paths)

    monkeypatch.setattr(AttemptPaths, "create", counted)
    job_id, _ = stack.jobs.create(JobSpec(name="p", command="true"))
    requests.prepare(stack.jobs.get(job_id))
    requests.prepare(stack.jobs.get(job_id))  # once is enough
    paths = stack.workspace.attempt(job_id, 1)
    assert made == [paths.root] and paths.workdir.is_dir() and paths.log_path.exists()
    stack.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                          attempt=1, executor="local", handle=f"trainyard-{job_id}-1")
    request = requests.build(stack.jobs.get(job_id))
    assert made == [paths.root] and request.files.workdir == paths.workdir
    # Prepared, then removed before its launch (by hand): the launch makes them after all.
    other = launching(stack, JobSpec(name="q", command="true"))
    requests.prepare(replace(other, attempt=0))
    shutil.rmtree(stack.workspace.attempt(other.id, 1).root)
    assert requests.build(other).files.workdir.is_dir()
    assert len(made) == 3


def launching(stack: TrainyardServer, spec: JobSpec) -> JobRecord:
    job_id, _ = stack.jobs.create(spec)
    stack.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                          attempt=1, executor="local", handle=f"trainyard-{job_id}-1",
                          gpu_ids="0,1")
    return stack.jobs.get(job_id)


def test_a_request_keeps_numeric_libraries_within_the_cpus_asked(
        stack: TrainyardServer) -> None:
    requests = LaunchRequests(stack.workspace, stack.tracker.launcher.requests.datasets)
    job = launching(stack, JobSpec(name="n", command="true", workers=2,
                                   resources=Resources(cpus=2.5, gpus=1)))
    request = requests.build(job)
    assert {var: request.env[var] for var in THREAD_VARIABLES} == dict.fromkeys(
        THREAD_VARIABLES, "3")
    assert request.env["PYTHONUNBUFFERED"] == "1"
    assert (request.handle, request.attempt, request.workers) == (job.handle, 1, 2)
    assert request.gpu_ids == ("0", "1") and request.resources == Resources(cpus=2.5, gpus=1)
    paths = stack.workspace.attempt(job.id, 1)
    assert request.files.model == paths.model_dir and paths.model_dir.is_dir()
    # No dataset: an empty directory nobody can write to.
    assert request.files.data == stack.workspace.empty_dataset_dir
    assert request.files.data.stat().st_mode & 0o777 == 0o555
    assert list(request.files.data.iterdir()) == []


def test_a_dataset_version_no_longer_registered_is_a_launch_error(
        stack: TrainyardServer) -> None:
    requests = stack.tracker.launcher.requests
    job = launching(stack, JobSpec(name="d", command="true",
                                   dataset=DatasetRef("nowhere", "0" * 64)))
    with pytest.raises(LaunchError, match=f"dataset nowhere:{'0' * 64} is no longer"):
        requests.build(job)


def test_a_remote_launch_carries_a_fresh_job_token_stored_before_it(
        stack: TrainyardServer) -> None:
    requests = stack.tracker.launcher.requests
    job = launching(stack, JobSpec(name="r", command="true"))
    stack.jobs.update_fields(job.id, JobState.LAUNCHING, pool="cluster")
    job = stack.jobs.get(job.id)
    local = requests.build(job)
    assert local.job_token == "" and local.pool == "cluster"
    assert JobTokenStore(stack.db).attempts(job.id) == []
    remote = requests.build(job, remote=True)
    assert remote.pool == "cluster" and remote.job_token not in repr(remote)
    grant = JobGrants(JobTokenStore(stack.db)).verify(remote.job_token)
    assert (grant.job_id, grant.attempt) == (job.id, 1)
    again = requests.build(job, remote=True)  # relaunched: the first token is replaced
    assert again.job_token != remote.job_token
    with pytest.raises(Unauthenticated):
        JobGrants(JobTokenStore(stack.db)).verify(remote.job_token)
    assert JobGrants(JobTokenStore(stack.db)).verify(again.job_token).job_id == job.id


def test_an_engine_with_a_limit_of_its_own_gets_the_jobs_later_than_the_tracker(
        stack: TrainyardServer) -> None:
    requests = LaunchRequests(stack.workspace, stack.tracker.launcher.requests.datasets)
    limited = requests.build(launching(stack, JobSpec(name="l", command="true",
                                                      time_limit_s=7200)))
    assert limited.time_limit_s == 7200 + ENGINE_LIMIT_SLACK_S
    unlimited = requests.build(launching(stack, JobSpec(name="u", command="true")))
    assert unlimited.time_limit_s is None


def test_a_code_job_carries_its_stored_code_directory(
        stack: TrainyardServer, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text("print(1)\n")
    digest, stored = store_tree(src, stack.workspace.code_dir, "code")
    requests = stack.tracker.launcher.requests
    code_spec = JobSpec(name="c", command="python3 train.py", algorithm=AlgorithmRef("a", 1),
                        code_hash=digest.digest)
    request = requests.build(launching(stack, code_spec))
    assert request.files.code == stored == stack.workspace.code_of(digest.digest)
    assert request.contract(data="d", model="m", metrics="x", checkpoint="c",
                            code="/code")["CODE_PATH"] == "/code"
    # A remote job's runtime stages it and sets CODE_PATH there; shared staging uses ours.
    assert "CODE_PATH" not in request.remote_contract(shared=False)
    assert request.remote_contract(shared=True)["CODE_PATH"] == str(stored)
    plain = requests.build(launching(stack, JobSpec(name="p", command="true")))
    assert plain.files.code is None
    assert "CODE_PATH" not in plain.remote_contract(shared=True)
    gone = replace(code_spec, code_hash="e" * 64)
    with pytest.raises(LaunchError, match="the code directory eeeeeeeeeeee of algorithm "):
        requests.build(launching(stack, gone))
