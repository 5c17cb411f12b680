"""The Docker executor against the real engine, through a real service."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import docker.errors
import pytest

from tests.dockerenv import TRAINER_IMAGE, Engine, docker_server, engine, final, running, wait_state
from trainyard.auth.policy import LOCAL
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.log_cap import cut_note
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import DatasetRef, JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.executors.base import Signaller
from trainyard.executors.docker import LABEL_ATTEMPT, LABEL_INSTANCE, LABEL_JOB

__all__ = ["engine"]  # the session fixture, imported so pytest finds it here

# Prints what the job sees of the contract and of its isolation, as one JSON line.
PROBE = r"""
import json, os, socket
seen = {k: os.environ.get(k) for k in ("JOB_ID", "TRAINING_DATA_PATH", "MODEL_SAVE_PATH",
        "METRICS_PATH", "CHECKPOINT_PATH", "HYPERPARAMETERS", "LR", "CUDA_VISIBLE_DEVICES",
        "HOME")}
seen["uid"] = os.getuid()
seen["data"] = sorted(os.listdir(os.environ["TRAINING_DATA_PATH"]))
try:
    open(os.path.join(os.environ["TRAINING_DATA_PATH"], "new"), "w")
    seen["data_writable"] = True
except OSError:
    seen["data_writable"] = False
seen["interfaces"] = sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])
try:
    socket.create_connection(("10.255.255.1", 80), timeout=2)
    seen["network"] = "reachable"
except OSError as exc:
    seen["network"] = type(exc).__name__
seen["docker_socket"] = os.path.exists("/var/run/docker.sock") or os.path.exists("/run/docker.sock")
open(os.path.join(os.environ["MODEL_SAVE_PATH"], "weights.txt"), "w").write("w=1\n")
open(os.path.join(os.environ["CHECKPOINT_PATH"], "ckpt"), "w").write("step 1\n")
with open(os.environ["METRICS_PATH"], "a") as m:
    m.write(json.dumps({"step": 1, "accuracy": 0.5}) + "\n")
print("PROBE " + json.dumps(seen), flush=True)
"""


def assert_removed(engine: Engine, name: str, timeout: float = 10) -> None:
    """Removal follows the final state (so a crash in between loses no outcome)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            engine.client.containers.get(name)
        except docker.errors.NotFound:
            return
        assert time.monotonic() < deadline, f"container {name} was not removed"
        time.sleep(0.05)


def probe_command() -> str:
    return "python3 - <<'EOF'\n" + PROBE + "\nEOF"


def test_contract_mounts_and_isolation_as_seen_inside(engine: Engine, tmp_path: Path) -> None:
    data = tmp_path / "digits"
    data.mkdir()
    (data / "train.csv").write_text("1,2,3\n")
    with running(docker_server(tmp_path)) as srv:
        version = srv.datasets.register(LOCAL, "digits", str(data))[0].version
        job_id, _ = srv.service.train(LOCAL, JobSpec(
            name="probe", image=TRAINER_IMAGE, command=probe_command(),
            dataset=DatasetRef("digits", version), hyperparameters={"LR": "0.1"}))
        job = final(srv, job_id)
        assert job.state is JobState.SUCCEEDED, job.message
        log = srv.workspace.attempt(job_id, 1).log_path.read_text()
        seen = json.loads(log.split("PROBE ", 1)[1])
        assert seen["JOB_ID"] == job_id
        assert seen["TRAINING_DATA_PATH"] == "/trainyard/data"
        assert "train.csv" in seen["data"]
        assert seen["data_writable"] is False
        assert json.loads(seen["HYPERPARAMETERS"]) == {"LR": "0.1"} and seen["LR"] == "0.1"
        assert seen["CUDA_VISIBLE_DEVICES"] == ""  # asked for no GPU, sees none
        assert seen["uid"] != 0
        assert seen["interfaces"] == ["lo"] and seen["network"] != "reachable"
        assert seen["docker_socket"] is False
        # What the job wrote through the read-write mounts reached the service.
        status = srv.service.status(LOCAL, job_id)
        assert status.model is not None and status.model.file_count == 1
        assert status.latest_metrics["accuracy"][0] == 0.5
        assert (srv.workspace.attempt(job_id, 1).checkpoint_dir / "ckpt").read_text() == "step 1\n"
        # Finished containers are removed; the log stays.
        assert_removed(engine, job.handle)


def test_the_container_is_named_labelled_limited_and_cancellable(engine: Engine,
                                                                 tmp_path: Path) -> None:
    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(
            name="sleeper", image=TRAINER_IMAGE, command="echo started; sleep 300",
            resources=Resources(cpus=1.5, memory_mb=256)))
        job = wait_state(srv, job_id, {JobState.RUNNING})
        assert job.handle == f"trainyard-{job_id}-1"
        attrs = engine.client.api.inspect_container(job.handle)
        labels = attrs["Config"]["Labels"]
        assert labels[LABEL_JOB] == job_id and labels[LABEL_ATTEMPT] == "1"
        instance = (srv.workspace.data_dir / "instance-id").read_text().strip()
        assert labels[LABEL_INSTANCE] == instance
        host = attrs["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["Privileged"] is False and host["CapDrop"] == ["ALL"]
        assert host["NanoCpus"] == 1_500_000_000
        assert host["Memory"] == 256 * 1024 * 1024 == host["MemorySwap"]
        assert host["PidsLimit"] and host["PidsLimit"] > 0
        assert attrs["Config"]["User"] not in ("", "0", "root", "0:0")
        mounts = {m["Destination"]: m for m in attrs["Mounts"]}
        assert mounts["/trainyard/data"]["RW"] is False
        assert all(mounts[d]["RW"] for d in ("/trainyard/model", "/trainyard/checkpoint",
                                             "/trainyard/metrics.jsonl"))
        assert not any("docker.sock" in m["Source"] for m in attrs["Mounts"])

        srv.service.cancel(LOCAL, job_id)
        job = final(srv, job_id, timeout=30)
        assert job.state is JobState.CANCELLED
        assert "started" in srv.workspace.attempt(job_id, 1).log_path.read_text()
        assert_removed(engine, job.handle)


def test_exit_codes_and_logs_outlive_the_container(engine: Engine, tmp_path: Path) -> None:
    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(
            name="fails", image=TRAINER_IMAGE,
            command="for i in 1 2 3; do echo line $i; done; echo oops >&2; exit 7"))
        job = final(srv, job_id)
        assert job.state is JobState.FAILED and job.exit_code == 7
        assert job.message == "exited with code 7"
        lines = srv.workspace.attempt(job_id, 1).log_path.read_text().splitlines()
        # stdout and stderr are separate pipes: each keeps its order, not their interleaving.
        assert [line for line in lines if line.startswith("line")] == ["line 1", "line 2",
                                                                       "line 3"]
        assert sorted(lines) == ["line 1", "line 2", "line 3", "oops"]


def test_the_image_command_runs_when_none_is_given(engine: Engine, tmp_path: Path) -> None:
    """The demo trainer image trains on its own; with no dataset it reports the problem."""
    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="own-cmd", image=TRAINER_IMAGE))
        job = final(srv, job_id)
        log = srv.workspace.attempt(job_id, 1).log_path.read_text()
        assert job.state is JobState.FAILED and "train.csv" in log


def test_a_job_over_its_memory_is_reported_out_of_memory(engine: Engine,
                                                         tmp_path: Path) -> None:
    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(
            name="hog", image=TRAINER_IMAGE, resources=Resources(memory_mb=64),
            command="python3 -c 'x = bytearray(512 * 1024 * 1024); print(len(x))'"))
        job = final(srv, job_id)
        assert job.state is JobState.FAILED
        assert job.message.startswith("killed: out of memory (limit 64 MiB)"), job.message


def test_a_missing_image_fails_the_job_with_a_clear_message(engine: Engine,
                                                           tmp_path: Path) -> None:
    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="ghost",
                                                     image="trainyard/no-such-image:1"))
        job = final(srv, job_id, timeout=20)
        assert job.state is JobState.FAILED
        assert "'trainyard/no-such-image:1' is not in the local Docker engine" in job.message
        assert "trainyard images build" in job.message


def test_capacity_holds_a_job_until_the_pool_has_room(engine: Engine, tmp_path: Path) -> None:
    with running(docker_server(tmp_path, cpus=2.0, memory_mb=1024)) as srv:
        first, _ = srv.service.train(LOCAL, JobSpec(name="big", image=TRAINER_IMAGE,
                                                    command="sleep 2",
                                                    resources=Resources(cpus=1.5)))
        wait_state(srv, first, {JobState.RUNNING})
        second, _ = srv.service.train(LOCAL, JobSpec(name="next", image=TRAINER_IMAGE,
                                                     command="true",
                                                     resources=Resources(cpus=1.0)))
        waiting = wait_state(srv, second, {JobState.WAITING})
        deadline = time.monotonic() + 10
        while not waiting.pending_code and time.monotonic() < deadline:
            time.sleep(0.05)
            waiting = srv.jobs.get(second)
        assert waiting.state is JobState.WAITING
        assert waiting.pending_code == ReasonCode.POOL_CAPACITY
        assert "0.5 of 2 CPUs free" in waiting.pending_message
        assert final(srv, second).state is JobState.SUCCEEDED
        assert srv.jobs.get(first).state is JobState.SUCCEEDED
        # A job larger than the whole pool is refused at submit, naming the field.
        with pytest.raises(InvalidArgument) as refused:
            srv.service.train(LOCAL, JobSpec(name="huge", image=TRAINER_IMAGE,
                                             resources=Resources(memory_mb=2048)))
        assert refused.value.field == "resources.memory_mb"


def test_concurrent_jobs_never_share_a_gpu(engine: Engine, tmp_path: Path) -> None:
    if not engine.gpus:
        from tests.conftest import missing

        missing("GPU device requests (real GPUs, or tests/fixtures/gpu-stand-in on dockerd's "
                "PATH)")
    gpu_ids = ("g0", "g1", "g2", "g3", "g4")
    with running(docker_server(tmp_path, gpu_ids=gpu_ids, cpus=8, memory_mb=8192)) as srv:
        ids = [srv.service.train(LOCAL, JobSpec(
            name=f"gpu{i}", image=TRAINER_IMAGE, resources=Resources(cpus=0.5, gpus=2),
            command="echo VISIBLE=$NVIDIA_VISIBLE_DEVICES; sleep 1.5"))[0] for i in range(5)]
        jobs = [final(srv, job_id, timeout=90) for job_id in ids]
        assert all(j.state is JobState.SUCCEEDED for j in jobs), [j.message for j in jobs]
        intervals = {}
        for job in jobs:
            assert len(job.gpu_ids) == 2 and set(job.gpu_ids) <= set(gpu_ids)
            log = srv.workspace.attempt(job.id, 1).log_path.read_text()
            # The engine gave the container exactly the allocated devices.
            assert f"VISIBLE={','.join(job.gpu_ids)}" in log
            events = srv.jobs.events(job.id)
            start = next(e.time for e in events if e.to_state is JobState.RUNNING)
            end = next(e.time for e in events if e.to_state is JobState.SUCCEEDED)
            intervals[job.id] = (start, end, set(job.gpu_ids))
        overlapping = 0
        for a, (s1, e1, g1) in intervals.items():
            for b, (s2, e2, g2) in intervals.items():
                if a < b and s1 < e2 and s2 < e1:
                    overlapping += 1
                    assert not g1 & g2, f"{a} and {b} ran at once on {g1 & g2}"
        assert overlapping >= 1  # two jobs of two GPUs each fit the five at once


def test_a_container_that_ends_between_releases_look_and_its_kill_is_removed(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Release looks at the container, sees it run, and KILLs it; one that ended in between
    makes the engine answer 409 ("is not running"), and must be removed all the same."""
    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="brief", image=TRAINER_IMAGE,
                                                     command="sleep 600"))
        handle = wait_state(srv, job_id, {JobState.RUNNING}).handle
        executor = srv.executors["docker"]
        api = executor._api  # type: ignore[attr-defined]
        inspect, seen_running = api.inspect_container, api.inspect_container(handle)
        assert seen_running["State"]["Running"]
        release = executor.release

        def release_as_if_still_running(name: str) -> None:
            # Its look is the one taken while it ran; the kill and removal are the engine's.
            monkeypatch.setattr(api, "inspect_container", lambda which: (
                seen_running if which == name else inspect(which)))
            try:
                release(name)
            finally:
                monkeypatch.setattr(api, "inspect_container", inspect)

        monkeypatch.setattr(executor, "release", release_as_if_still_running)
        engine.client.api.kill(handle, signal="SIGKILL")  # it ends by itself, as it were
        assert final(srv, job_id).state is JobState.FAILED
        assert_removed(engine, handle)


def test_a_container_that_ignores_term_is_killed_after_the_grace(engine: Engine,
                                                                tmp_path: Path) -> None:
    with running(docker_server(tmp_path)) as srv:  # cancel grace: 2 s
        job_id, _ = srv.service.train(LOCAL, JobSpec(
            name="stubborn", image=TRAINER_IMAGE,
            command="trap 'echo ignoring TERM' TERM; echo ready; "
                    "while true; do sleep 0.1; done"))
        wait_state(srv, job_id, {JobState.RUNNING})
        log_path = srv.workspace.attempt(job_id, 1).log_path
        deadline = time.monotonic() + 10
        while "ready" not in log_path.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        asked = time.monotonic()
        srv.service.cancel(LOCAL, job_id)
        job = final(srv, job_id, timeout=30)
        assert job.state is JobState.CANCELLED
        assert time.monotonic() - asked >= 1.5  # it outlived the TERM until the KILL
        assert "ignoring TERM" in log_path.read_text()
        # What happened, not the plain exit status's hint of running out of memory.
        assert job.message == ("cancelled by request; it did not stop on TERM and was killed "
                               "by SIGKILL after the 2 s grace period, exit code 137")


def test_metrics_and_logs_arrive_while_the_container_runs(engine: Engine,
                                                         tmp_path: Path) -> None:
    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(
            name="chatty", image=TRAINER_IMAGE,
            command='echo \'{"step": 1, "loss": 0.25}\' >> "$METRICS_PATH"; echo epoch 1; '
                    "sleep 300"))
        deadline = time.monotonic() + 30
        while True:
            status = srv.service.status(LOCAL, job_id)
            log_path = srv.workspace.attempt(job_id, 1).log_path
            log = log_path.read_text() if log_path.exists() else ""
            if "loss" in status.latest_metrics and "epoch 1" in log:
                break
            assert time.monotonic() < deadline, (status.latest_metrics, log)
            time.sleep(0.05)
        assert status.job.state is JobState.RUNNING
        assert status.latest_metrics["loss"] == (0.25, 1)
        srv.service.cancel(LOCAL, job_id)
        assert final(srv, job_id).state is JobState.CANCELLED


def test_a_containers_log_past_its_cap_is_cut_with_a_note(engine: Engine,
                                                          tmp_path: Path) -> None:
    with running(docker_server(tmp_path, max_log_bytes=1000)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(
            name="chatty", image=TRAINER_IMAGE,
            command="head -c 50000 /dev/zero | tr '\\0' x; sleep 1; echo late"))
        job = final(srv, job_id)
        assert job.state is JobState.SUCCEEDED, job.message
        log = srv.workspace.attempt(job_id, 1).log_path.read_bytes()
        assert log == b"x" * 1000 + cut_note(1000)


def test_a_notice_reaches_the_program_that_listens_and_not_the_shell(engine: Engine,
                                                                     tmp_path: Path) -> None:
    """SIGUSR1 through the container's init: the job's shell ignores it, a program with a
    handler hears it, and the job's own exit status is its outcome. Its notice file's path
    is under the working directory's mount."""
    listener = ("import signal, sys, time, pathlib; "
                "signal.signal(signal.SIGUSR1, lambda *_: sys.exit(7)); "
                "pathlib.Path('/trainyard/work/ready').touch(); time.sleep(120)")
    command = (f'python3 -c "{listener}"; echo "after $?"; '
               'echo "notice at $TRAINYARD_PREEMPT_NOTICE"')
    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="listener", image=TRAINER_IMAGE,
                                                     command=command))
        job = wait_state(srv, job_id, {JobState.RUNNING})
        ready = srv.workspace.attempt(job_id, 1).workdir / "ready"
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert time.monotonic() < deadline, "the listener never started"
            time.sleep(0.05)
        executor = srv.executors["docker"]
        assert isinstance(executor, Signaller)
        assert executor.send_signal(job.handle, signal.SIGUSR1)
        job = final(srv, job_id)
        assert job.state is JobState.SUCCEEDED, job.message
        log = srv.workspace.attempt(job_id, 1).log_path.read_text()
        assert "after 7" in log
        assert "notice at /trainyard/work/.trainyard-preempt-notice" in log
