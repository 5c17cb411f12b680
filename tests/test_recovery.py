"""SIGKILL the server while jobs wait and run; a restart loses nothing and runs nothing twice."""

import signal
from collections import Counter
from pathlib import Path

import pytest

from tests.liveserver import wait_until
from tests.serverproc import ServerProcess
from trainyard.auth.policy import LOCAL
from trainyard.client import Client, TrainSpec
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.executors.base import Phase
from trainyard.metadata.workspace import Workspace
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.store import faults
from trainyard.store.db import AlreadyRunning, open_database, sqlite_url
from trainyard.store.jobs import JobStore
from trainyard.tracker import TrackerConfig
from trainyard.tracker.follow import Ending


def test_crash_mid_run_loses_nothing_and_runs_nothing_twice(tmp_path: Path,
                                                            database_url: str) -> None:
    ran = tmp_path / "ran.log"
    url = "" if database_url.startswith("sqlite") else database_url
    server = ServerProcess(tmp_path / "data", url, max_concurrent=2).start()
    try:
        client = Client(server.address)

        def gate(name: str) -> str:
            return (f"i=0; while [ ! -e {tmp_path / name} ] && [ $i -lt 1200 ]; do "
                    "sleep 0.05; i=$((i+1)); done")

        def job(name: str, body: str) -> str:
            command = f'echo "$JOB_ID" >> {ran}; {body}'
            return client.train(TrainSpec(name=name, command=command)).job_id

        # Jobs wait on gate files, so the test decides when each ends, however slow the host.
        ends_while_down = job("ends-while-down", f"{gate('down')}; exit 3")
        outlives_crash = job("outlives-crash", gate("adopted"))
        waiting = [job(f"waiting-{i}", "true") for i in range(4)]
        wait_until(lambda: client.status(outlives_crash).state == "RUNNING"
                   and client.status(ends_while_down).state == "RUNNING", what="two running")
        assert all(client.status(j).state == "WAITING" for j in waiting)
        server.kill()
        client.close()

        (tmp_path / "down").touch()  # the first job ends while no service watches it
        exit_file = tmp_path / "data" / "executor" / f"trainyard-{ends_while_down}-1" / "exit"
        wait_until(lambda: exit_file.exists() and exit_file.read_text().strip() == "3",
                   what="the first job's exit status")
        server.start()
        client = Client(server.address)
        # The second job was re-adopted, not finished: it still runs until let go.
        assert client.status(outlives_crash).state == "RUNNING"
        (tmp_path / "adopted").touch()
        everything = [ends_while_down, outlives_crash, *waiting]
        wait_until(lambda: all(client.status(j).is_final for j in everything), timeout=60,
                   what="every job final")

        down = client.status(ends_while_down)
        assert down.state == "FAILED" and down.exit_code == 3
        assert "while the service was down" in down.message
        assert client.status(outlives_crash).state == "SUCCEEDED"
        assert [client.status(j).state for j in waiting] == ["SUCCEEDED"] * 4

        runs = Counter(ran.read_text().split())
        assert runs == Counter(everything), "a job ran twice or not at all"
        for job_id in everything:
            launches = [t for t in client.status(job_id).transitions if t.to_state == "LAUNCHING"]
            assert len(launches) == 1
        # Waiting jobs kept their submit order through the crash.
        started = [client.status(j).transitions[1].time for j in waiting]
        assert started == sorted(started)
        client.close()
    finally:
        server.stop()


def test_crash_between_launching_and_launch_starts_the_job_once(tmp_path: Path,
                                                                  database_url: str) -> None:
    config = ServerConfig(data_dir=tmp_path / "data", database_url=database_url)
    first = TrainyardServer(config)
    marker = tmp_path / "ran"
    job_id, _ = first.service.train(LOCAL, JobSpec(name="x", command=f"echo once >> {marker}"))
    # The tracker wrote LAUNCHING with its handle, then the service died before launching.
    first.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                          attempt=1, executor="local",
                          handle=first.executors["local"].handle_for(job_id, 1))
    first.db.close()
    second = TrainyardServer(config)
    try:
        second.tracker.recover()  # looks the handle up, finds nothing, launches it
        assert second.jobs.get(job_id).state is JobState.RUNNING
        second.tracker.recover()  # a second restart adopts it instead
        wait_until(lambda: (second.tracker.run_once() or True) and
                   second.jobs.get(job_id).state.is_final(), what="final")
        assert second.jobs.get(job_id).state is JobState.SUCCEEDED
        assert marker.read_text() == "once\n"
        assert [e.to_state for e in second.jobs.events(job_id)].count(JobState.LAUNCHING) == 1
    finally:
        second.db.close()


class Crash(BaseException):
    """The service dies here (no handler of the tracker's catches it)."""


def test_a_crash_after_the_next_launch_before_the_ended_jobs_end_loses_nothing(
        tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    config = ServerConfig(data_dir=tmp_path / "data", database_url=database_url,
                          tracker=TrackerConfig(max_concurrent=1))
    marker = tmp_path / "ran"
    first = TrainyardServer(config)
    ended, _ = first.service.train(LOCAL, JobSpec(name="a", command=f"echo a >> {marker}"))
    nxt, _ = first.service.train(LOCAL, JobSpec(name="b", command=f"echo b >> {marker}"))
    first.tracker.run_once()
    assert first.tracker.wait_for_launches()
    handle = first.jobs.get(ended).handle
    wait_until(lambda: first.executors["local"].poll(handle).phase is Phase.EXITED,
               what="the first job's end")

    def crash(_ending: Ending) -> None:
        raise Crash

    # The pass hands the ended job's slot on, then dies before writing its end.
    monkeypatch.setattr(first.tracker.follower, "finish", crash)
    with pytest.raises(Crash):
        first.tracker.run_once()
    assert first.tracker.wait_for_launches()
    assert first.jobs.get(ended).state is JobState.RUNNING
    assert first.jobs.get(nxt).state in (JobState.LAUNCHING, JobState.RUNNING)
    first.tracker.launcher.shutdown()
    first.db.close()

    second = TrainyardServer(config)
    try:
        second.tracker.recover()  # the ended job is finished; the next one adopted
        done = second.jobs.get(ended)
        assert done.state is JobState.SUCCEEDED
        assert done.message.endswith("(while the service was down)")
        wait_until(lambda: (second.tracker.run_once() or True) and
                   second.jobs.get(nxt).state.is_final(), what="the next job final")
        assert second.jobs.get(nxt).state is JobState.SUCCEEDED
        assert sorted(marker.read_text().split()) == ["a", "b"]  # each ran once
        for job_id in (ended, nxt):
            states = [e.to_state for e in second.jobs.events(job_id)]
            assert states.count(JobState.LAUNCHING) == 1 and states[-1] is JobState.SUCCEEDED
    finally:
        second.tracker.launcher.shutdown()
        second.db.close()


RESUMES = ('if [ -f "$CHECKPOINT_PATH/step" ]; then echo "resumed from $(cat '
           '"$CHECKPOINT_PATH/step")"; exit 0; fi; echo 1 > "$CHECKPOINT_PATH/step"; sleep 60')


def test_a_crash_between_an_old_requeues_two_writes_leaves_a_job_that_runs_again(
        tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    url = "" if database_url.startswith("sqlite") else database_url
    # The server requeues as earlier versions did, in two writes, and dies after the first.
    monkeypatch.setenv(faults.FAULT_ENV, faults.REQUEUE_IN_TWO_WRITES)
    server = ServerProcess(data, url, max_concurrent=1).start()
    store = open_database(url or sqlite_url(data))
    try:
        jobs = JobStore(store)
        with Client(server.address) as client:
            job_id = client.train(TrainSpec(name="victim", command=RESUMES)).job_id
            wait_until(lambda: client.status(job_id).state == "RUNNING", what="running")
        checkpoint = Workspace(data).attempt(job_id, 1).checkpoint_dir / "step"
        wait_until(checkpoint.exists, what="its checkpoint")
        # What the admission pass writes for a victim; the server stops it, then requeues it.
        assert jobs.update_fields(job_id, JobState.RUNNING, preempt_requested=True,
                                  message="preempted for a test")
        assert server.proc is not None
        assert server.proc.wait(timeout=60) == -signal.SIGKILL
        left = jobs.get(job_id)
        assert left.state is JobState.PREEMPTED  # what an earlier version's crash left
        assert "fault point requeue-in-two-writes" in server.log_path.read_text()

        monkeypatch.delenv(faults.FAULT_ENV)
        server.start()
        wait_until(lambda: jobs.get(job_id).state.is_final(), timeout=60, what="its end")
        job = jobs.get(job_id)
        assert job.state is JobState.SUCCEEDED
        assert job.attempt == 2
        assert [e.to_state for e in jobs.events(job_id)] == [
            JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING, JobState.PREEMPTED,
            JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING, JobState.SUCCEEDED]
        assert "resumed from 1" in Workspace(data).attempt(job_id, 2).log_path.read_text()
    finally:
        server.stop()
        store.close()


def test_graceful_stop_leaves_jobs_running_for_the_next_start(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", max_concurrent=1).start()
    try:
        with Client(server.address) as client:
            job_id = client.train(TrainSpec(name="long", command="sleep 1.5")).job_id
            wait_until(lambda: client.status(job_id).state == "RUNNING", what="running")
        server.stop()
        server.start()
        with Client(server.address) as client:
            assert client.wait(job_id).state == "SUCCEEDED"
    finally:
        server.stop()


def test_a_second_server_on_the_same_sqlite_store_is_refused(tmp_path: Path) -> None:
    """On SQLite (one machine) the claim is exclusive; servers over one PostgreSQL elect a
    leader instead (tests/server/test_standby.py)."""
    database_url = sqlite_url(tmp_path)
    first = TrainyardServer(ServerConfig(data_dir=tmp_path / "a", database_url=database_url,
                                         port=0))
    first.start()
    try:
        # Another data directory, the same database: two trackers would fight over jobs.
        second = TrainyardServer(ServerConfig(data_dir=tmp_path / "b",
                                              database_url=database_url, port=0))
        with pytest.raises(AlreadyRunning, match="already"):
            second.start()
        second.db.close()
    finally:
        first.stop(grace=0)
    third = TrainyardServer(ServerConfig(data_dir=tmp_path / "c", database_url=database_url,
                                         port=0))
    third.start()  # the claim ends with the server that held it
    third.stop(grace=0)
