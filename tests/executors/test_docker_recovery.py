"""Restarts of the service (SIGKILL included) and outages of the engine while containers run."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.dockerenv import (
    TRAINER_IMAGE,
    Engine,
    SocketProxy,
    docker_server,
    engine,
    final,
    remove_containers,
    running,
    wait_state,
)
from tests.executors.test_docker import assert_removed
from tests.serverproc import ServerProcess
from trainyard.auth.policy import LOCAL
from trainyard.client import Client, TrainSpec
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.executors.docker import LABEL_INSTANCE, LABEL_JOB
from trainyard.store.runs import RunStore

__all__ = ["engine"]


def wait_status(client: Client, job_id: str, states: set[str], timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while (state := client.status(job_id).state) not in states:
        assert time.monotonic() < deadline, f"{job_id} stayed {state}"
        time.sleep(0.05)
    return state


def test_sigkill_of_the_service_loses_no_container(engine: Engine, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    server = ServerProcess(data_dir, extra_args=("--docker", "--docker-cpus", "4")).start()
    try:
        with Client(server.address, timeout=20) as client:
            ends = client.train(TrainSpec(name="ends", image=TRAINER_IMAGE,
                                          command="sleep 1.5; echo ends-done; exit 5")).job_id
            lasts = client.train(TrainSpec(name="lasts", image=TRAINER_IMAGE,
                                           command="echo early; sleep 3; echo later; "
                                                   "sleep 300")).job_id
            for job_id in (ends, lasts):
                wait_status(client, job_id, {"RUNNING"})
        server.kill()
        handle = f"trainyard-{ends}-1"
        deadline = time.monotonic() + 30
        while engine.client.api.inspect_container(handle)["State"]["Running"]:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        # A container labelled as this service's that belongs to no job.
        instance = (data_dir / "instance-id").read_text().strip()
        stray = engine.client.containers.run(
            TRAINER_IMAGE, ["sleep", "300"], detach=True, network_mode="none",
            name=f"trainyard-stray-{instance}",
            labels={LABEL_INSTANCE: instance, LABEL_JOB: "stray"})
        server.start()
        with Client(server.address, timeout=20) as client:
            status = client.status(ends)
            assert status.state == "FAILED" and status.exit_code == 5
            assert status.message == "exited with code 5 (while the service was down)"
            assert client.status(lasts).state == "RUNNING"
            assert_removed(engine, stray.name)
            assert "belongs to no active job" in server.log_path.read_text()
            time.sleep(3.5)  # "later" is printed after the restart
            client.cancel(lasts)
            assert wait_status(client, lasts, {"CANCELLED", "FAILED"}, 30) == "CANCELLED"
            assert b"ends-done" in b"".join(c for c in client.logs(ends))
            lasts_log = b"".join(c for c in client.logs(lasts)).decode()
            assert lasts_log == "early\nlater\n"  # copied across the restart, nothing twice
    finally:
        server.stop()
        remove_containers(data_dir)


def test_an_engine_restart_leaves_no_job_stuck(engine: Engine, tmp_path: Path) -> None:
    proxy = SocketProxy(tmp_path / "engine.sock").start()
    with running(docker_server(tmp_path, base_url=proxy.url)) as srv:
        once, _ = srv.service.train(LOCAL, JobSpec(name="victim", image=TRAINER_IMAGE,
                                                   command="sleep 300", max_attempts=1))
        again, _ = srv.service.train(LOCAL, JobSpec(name="retried", image=TRAINER_IMAGE,
                                                    command="sleep 300"))
        jobs = [wait_state(srv, job_id, {JobState.RUNNING}) for job_id in (once, again)]
        proxy.cut()
        # What an engine restart does to containers it does not keep alive.
        for job in jobs:
            engine.client.api.kill(job.handle, signal="SIGKILL")
        time.sleep(1.0)
        assert srv.jobs.get(once).state is JobState.RUNNING  # unknown is not failed
        proxy.start()
        job = final(srv, once, timeout=30)
        assert job.state is JobState.FAILED and job.exit_code == 137
        assert "the Docker engine stopped or restarted while it ran" in job.message
        assert job.message.endswith("; the job allows one attempt")
        assert_removed(engine, job.handle)
        # A job of the default attempts lost it through no fault of its own: it runs again.
        deadline = time.monotonic() + 60
        while (retried := srv.jobs.get(again)).attempt < 2 or \
                retried.state is not JobState.RUNNING:
            assert time.monotonic() < deadline, retried
            time.sleep(0.1)
        assert retried.retries == 1
        first = RunStore(srv.db).get(again, 1)
        assert first is not None and first.state is JobState.PREEMPTED
        assert "the Docker engine stopped or restarted while it ran" in first.message


def test_a_stopped_service_leaves_no_connection_to_the_engine_open(engine: Engine,
                                                                   tmp_path: Path) -> None:
    proxy = SocketProxy(tmp_path / "engine.sock").start()
    srv = docker_server(tmp_path, base_url=proxy.url)
    stopped = False
    try:
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="talker", image=TRAINER_IMAGE,
                                                     command="echo hello; sleep 300"))
        job = wait_state(srv, job_id, {JobState.RUNNING})
        log_path = srv.workspace.attempt(job_id, 1).log_path
        deadline = time.monotonic() + 20
        # The copy of the container's output has its stream open: it copied the first line.
        while not (log_path.exists() and b"hello" in log_path.read_bytes()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        follower = f"logs-{job.handle}"
        assert _alive(follower) and proxy.connections() >= 2  # it and the event stream
        srv.stop(grace=0)
        stopped = True
        assert not _alive(follower)
        deadline = time.monotonic() + 10
        while proxy.connections():
            assert time.monotonic() < deadline, f"{proxy.connections()} connections left open"
            time.sleep(0.05)
        assert engine.client.api.inspect_container(job.handle)["State"]["Running"]
    finally:
        if not stopped:
            srv.stop(grace=0)
        proxy.cut()
        remove_containers(srv.workspace.data_dir)


def test_without_an_address_the_engine_is_the_one_docker_host_names(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = SocketProxy(tmp_path / "engine.sock").start()
    monkeypatch.setenv("DOCKER_HOST", proxy.url)
    try:
        with running(docker_server(tmp_path)) as srv:  # no base_url
            deadline = time.monotonic() + 10
            while srv.executors["docker"].unavailable() is not None:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert proxy.connections() >= 1  # the event stream
            job_id, _ = srv.service.train(LOCAL, JobSpec(name="there", image=TRAINER_IMAGE,
                                                         command="echo ran"))
            assert final(srv, job_id).state is JobState.SUCCEEDED
    finally:
        proxy.cut()


def _alive(thread_name: str) -> bool:
    return any(thread.name == thread_name for thread in threading.enumerate())


def test_an_engine_gone_for_good_fails_its_jobs_with_the_reason(engine: Engine,
                                                               tmp_path: Path) -> None:
    proxy = SocketProxy(tmp_path / "engine.sock").start()
    with running(docker_server(tmp_path, base_url=proxy.url, engine_grace=2.0)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="stranded", image=TRAINER_IMAGE,
                                                     command="sleep 300", max_attempts=1))
        job = wait_state(srv, job_id, {JobState.RUNNING})
        proxy.cut()
        job = final(srv, job_id, timeout=30)
        assert job.state is JobState.FAILED
        assert "the Docker engine has been unreachable for" in job.message
        # Once the engine answers again, the container of the failed job goes.
        proxy.start()
        assert_removed(engine, job.handle, timeout=20)


def test_while_the_engine_is_away_jobs_wait_and_say_why(engine: Engine, tmp_path: Path) -> None:
    proxy = SocketProxy(tmp_path / "engine.sock").start()
    with running(docker_server(tmp_path, base_url=proxy.url)) as srv:
        proxy.cut()
        deadline = time.monotonic() + 10
        while srv.executors["docker"].unavailable() is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="patient", image=TRAINER_IMAGE,
                                                     command="echo ran"))
        while (job := srv.jobs.get(job_id)).pending_code != ReasonCode.POOL_UNAVAILABLE:
            assert time.monotonic() < deadline, job
            time.sleep(0.05)
        assert job.state is JobState.WAITING and "unreachable" in job.pending_message
        proxy.start()
        assert final(srv, job_id, timeout=30).state is JobState.SUCCEEDED


def test_a_cut_log_stream_loses_no_output(engine: Engine, tmp_path: Path) -> None:
    proxy = SocketProxy(tmp_path / "engine.sock").start()
    with running(docker_server(tmp_path, base_url=proxy.url)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(
            name="talker", image=TRAINER_IMAGE,
            command="echo before; sleep 2; echo during; sleep 2; echo after"))
        log_path = srv.workspace.attempt(job_id, 1).log_path
        deadline = time.monotonic() + 20
        while not (log_path.exists() and "before" in log_path.read_text()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proxy.cut()  # the stream breaks while the container runs on
        time.sleep(2.5)
        proxy.start()
        job = final(srv, job_id, timeout=30)
        assert job.state is JobState.SUCCEEDED, job.message
        assert log_path.read_text() == "before\nduring\nafter\n"


def test_a_server_without_docker_refuses_to_strand_running_containers(
        engine: Engine, tmp_path: Path) -> None:
    from trainyard.server.assembly import ServerConfig, TrainyardServer

    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="left", image=TRAINER_IMAGE,
                                                     command="sleep 300"))
        wait_state(srv, job_id, {JobState.RUNNING})
    # `running` removed the container; the store still says the job runs.
    plain = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", port=0))
    with pytest.raises(RuntimeError, match=r"1 on the docker executor .*--docker"):
        plain.start()


def test_a_launch_cut_short_while_the_engine_was_away_runs_once(engine: Engine,
                                                               tmp_path: Path) -> None:
    from trainyard.executors.docker import DockerConfig
    from trainyard.server.assembly import ServerConfig, TrainyardServer
    from trainyard.tracker import TrackerConfig

    proxy = SocketProxy(tmp_path / "engine.sock").start()
    config = ServerConfig(
        data_dir=tmp_path / "data", port=0,
        docker=DockerConfig(instance="", cpus=2, memory_mb=2048, base_url=proxy.url),
        tracker=TrackerConfig(active_interval=0.2))
    srv = TrainyardServer(config)
    job_id, _ = srv.service.train(LOCAL, JobSpec(name="once", image=TRAINER_IMAGE,
                                                 command="echo ran"))
    # The service recorded LAUNCHING and stopped before creating the container...
    srv.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                        attempt=1, executor="docker",
                        handle=srv.executors["docker"].handle_for(job_id, 1))
    proxy.cut()  # ...and starts again while the engine is away.
    srv.start()
    with running(srv):
        time.sleep(1.0)
        assert srv.jobs.get(job_id).state is JobState.LAUNCHING
        proxy.start()
        job = final(srv, job_id, timeout=30)
        assert job.state is JobState.SUCCEEDED, job.message
        assert srv.workspace.attempt(job_id, 1).log_path.read_text() == "ran\n"
        assert [e.to_state for e in srv.jobs.events(job_id)].count(JobState.LAUNCHING) == 1
