"""The launcher: a LAUNCHING job's process is created beside the loop, once."""

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Connection, select

from tests.tracker.passes import run_to_end, step
from trainyard.auth.policy import LOCAL
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.executors.base import LaunchRequest
from trainyard.executors.docker import DockerExecutor
from trainyard.executors.kubernetes.executor import KubernetesExecutor
from trainyard.executors.local import LocalExecutor
from trainyard.executors.slurm.executor import SlurmExecutor
from trainyard.server.assembly import TrainyardServer
from trainyard.store.records import JobRecord
from trainyard.store.schema import jobs
from trainyard.tracker.launcher import Launcher


def launching(stack: TrainyardServer, spec: JobSpec, executor: str = "local") -> JobRecord:
    job_id, _ = stack.jobs.create(spec)
    stack.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                          attempt=1, executor=executor,
                          handle=stack.executors["local"].handle_for(job_id, 1))
    return stack.jobs.get(job_id)


def held_builds(launcher: Launcher, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Launches wait at their start until the event is set."""
    gate = threading.Event()
    build = launcher.requests.build

    def held(job: JobRecord, **options: bool) -> LaunchRequest:
        assert gate.wait(30)
        return build(job, **options)

    monkeypatch.setattr(launcher.requests, "build", held)
    return gate


def test_a_started_process_makes_the_job_running(stack: TrainyardServer) -> None:
    job = launching(stack, JobSpec(name="one", command="sleep 30"))
    assert stack.tracker.launcher.start(job)
    assert stack.jobs.get(job.id).state is JobState.RUNNING
    assert stack.jobs.events(job.id)[-1].reason == "process started"
    stack.service.cancel(LOCAL, job.id)
    assert run_to_end(stack, job.id) is JobState.CANCELLED


def test_a_job_no_executor_here_runs_fails_its_launch(stack: TrainyardServer) -> None:
    job = launching(stack, JobSpec(name="boxed", image="trainyard/demo"), executor="docker")
    assert not stack.tracker.launcher.start(job)
    failed = stack.jobs.get(job.id)
    assert failed.state is JobState.FAILED
    assert failed.message == "launch failed: this server runs no docker executor"


def test_a_launch_beside_the_loop_runs_once_and_is_waited_for(
        stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = stack.workspace.data_dir / "ran"
    job = launching(stack, JobSpec(name="once", command=f"echo x >> {marker}; sleep 30"))
    launcher = stack.tracker.launcher
    # Hold the launch at its start, so that it is surely still in flight when asked again.
    gate = held_builds(launcher, monkeypatch)
    launcher.launch_beside(job)
    assert launcher.in_flight(job.id) and not launcher.wait(timeout=0.05)
    launcher.launch_beside(job)  # already in flight: not a second launch
    gate.set()
    assert launcher.wait(timeout=30)
    assert not launcher.in_flight(job.id)
    assert stack.jobs.get(job.id).state is JobState.RUNNING
    assert [e.to_state for e in stack.jobs.events(job.id)].count(JobState.RUNNING) == 1
    deadline = time.monotonic() + 15
    while not marker.exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    stack.service.cancel(LOCAL, job.id)
    assert run_to_end(stack, job.id) is JobState.CANCELLED
    assert marker.read_text() == "x\n"



def test_a_local_launch_is_over_once_its_command_has_begun(
        stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # The pass that made room for it waits for that before it writes the ended job's end.
    job = launching(stack, JobSpec(name="begun", command="sleep 30"))
    launcher = stack.tracker.launcher
    local = stack.executors["local"]
    assert isinstance(local, LocalExecutor)
    asked: list[tuple[str, bool]] = []
    wait = local.wait_command_started

    def watched(handle: str, timeout: float) -> bool:
        if threading.current_thread().name.startswith("launch"):  # not the standby refill's
            asked.append((handle, launcher.in_flight(job.id)))  # still in flight meanwhile
        return wait(handle, timeout)

    monkeypatch.setattr(local, "wait_command_started", watched)
    launcher.launch_beside(job)
    assert launcher.wait(timeout=30, job_ids={job.id})
    assert asked == [(job.handle, True)]
    assert stack.jobs.get(job.id).state is JobState.RUNNING
    stack.service.cancel(LOCAL, job.id)
    assert run_to_end(stack, job.id) is JobState.CANCELLED


def test_the_jobs_first_in_line_have_their_directories_made_while_they_wait(
        stack: TrainyardServer) -> None:
    first, second, third = (stack.service.train(LOCAL, JobSpec(name=n, command="sleep 30"))[0]
                            for n in ("a", "b", "c"))
    step(stack)  # the one slot is the first's
    assert stack.jobs.get(first).state is JobState.RUNNING
    deadline = time.monotonic() + 10
    while not all(stack.workspace.attempt(j, 1).workdir.is_dir() for j in (second, third)):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert {stack.jobs.get(j).state for j in (second, third)} == {JobState.WAITING}
    stack.service.cancel(LOCAL, first)
    assert run_to_end(stack, first) is JobState.CANCELLED
    while stack.jobs.get(second).state is not JobState.RUNNING:
        assert time.monotonic() < deadline
        step(stack)
    for job_id in (second, third):
        stack.service.cancel(LOCAL, job_id)
        assert run_to_end(stack, job_id) is JobState.CANCELLED


def test_preparing_skips_jobs_gone_or_no_longer_waiting(stack: TrainyardServer) -> None:
    running = launching(stack, JobSpec(name="running", command="sleep 30"))
    waiting, _ = stack.service.train(LOCAL, JobSpec(name="waiting", command="true"))
    launcher = stack.tracker.launcher
    launcher._prepare(["no-such-job", running.id, waiting])  # the launcher thread's part
    assert stack.workspace.attempt(waiting, 1).workdir.is_dir()
    assert not stack.workspace.attempt(running.id, 2).root.exists()
    assert launcher.requests.is_prepared(waiting)
    assert not launcher.requests.is_prepared(running.id)


def counting_launcher(stack: TrainyardServer) -> tuple[Launcher, list[int]]:
    """A launcher over the stack's store and executors that counts the wake-ups it asks;
    counted once shutdown() has joined its launches (a wake-up follows their settling)."""
    wakes: list[int] = []
    launcher = Launcher(jobs=stack.jobs, executors_by_kind=stack.executors,
                        requests=stack.tracker.launcher.requests, clock=time.time, workers=2,
                        on_settled=lambda: wakes.append(1))
    return launcher, wakes


def test_a_job_its_launch_made_running_asks_no_pass_of_its_own(stack: TrainyardServer) -> None:
    # Its exit wakes the tracker, and the period follows it: a pass now would compete with
    # its start for the CPU, and find nothing to do.
    launcher, wakes = counting_launcher(stack)
    job = launching(stack, JobSpec(name="clean", command="sleep 30"))
    launcher.launch_beside(job)
    launcher.shutdown()
    assert stack.jobs.get(job.id).state is JobState.RUNNING and wakes == []
    stack.service.cancel(LOCAL, job.id)
    assert run_to_end(stack, job.id) is JobState.CANCELLED


def wakes_of_a_held_launch(stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch,
                           meanwhile: Callable[[Launcher, JobRecord], None],
                           hand_over: Callable[[Launcher, JobRecord], None] =
                           Launcher.launch_beside) -> list[int]:
    """A job handed over by `hand_over` to a launcher that counts its wake-ups, its launch
    held at its start while `meanwhile` happens: the wake-ups its settling asked. The job
    ran, and is cancelled on the way out."""
    launcher, wakes = counting_launcher(stack)
    job = launching(stack, JobSpec(name="held", command="sleep 30"))
    gate = held_builds(launcher, monkeypatch)
    hand_over(launcher, job)
    meanwhile(launcher, job)
    gate.set()
    launcher.shutdown()
    assert stack.jobs.get(job.id).state is JobState.RUNNING
    stack.service.cancel(LOCAL, job.id)
    assert run_to_end(stack, job.id) is JobState.CANCELLED
    return wakes


def ended_and_another(launcher: Launcher, job: JobRecord) -> None:
    launcher.exited(job.handle)  # its process ended before its launch settled
    launcher.exited("trainyard-another-1")  # another job's end is not this one's


@pytest.mark.parametrize("meanwhile", [
    ended_and_another,
    lambda launcher, job: launcher.exited(""),  # an executor lost its events: any may have
    lambda launcher, job: launcher.follow_all(),  # a cancel or a preemption, of some job
    None], ids=["exited", "any exited", "stop asked", "nothing"])
def test_a_launch_a_pass_read_in_flight_wakes_the_tracker_if_that_pass_left_work(
        stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch,
        meanwhile: Callable[[Launcher, JobRecord], None] | None) -> None:
    def read_in_flight(launcher: Launcher, job: JobRecord) -> None:
        # A pass (woken by an exit, a cancel) read the active jobs while it launched: it
        # skipped the job, or will reach it with the state it read.
        launcher.before_follow()
        if meanwhile is not None:
            meanwhile(launcher, job)

    wakes = wakes_of_a_held_launch(stack, monkeypatch, read_in_flight)
    assert wakes == ([] if meanwhile is None else [1])


def test_a_stop_asked_before_a_launch_was_handed_over_is_followed_once_it_settles(
        stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # A cancel between the job's LAUNCHING record and the hand-over to the launcher: no
    # launch was in flight for follow_all to note, so the count read before the record
    # tells it.
    def cancelled_before_the_hand_over(launcher: Launcher, job: JobRecord) -> None:
        before = launcher.stops_asked()
        launcher.follow_all()
        launcher.launch_beside(job, before)

    wakes = wakes_of_a_held_launch(stack, monkeypatch,
                                   lambda launcher, job: launcher.before_follow(),
                                   cancelled_before_the_hand_over)
    assert wakes == [1]


def test_an_end_or_a_stop_no_pass_read_in_flight_asks_no_pass_of_the_launch(
        stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # The end's own wake-up, or the cancel's, brings a pass that reads the job as settled.
    def ended_and_stop_asked(launcher: Launcher, job: JobRecord) -> None:
        launcher.exited(job.handle)
        launcher.follow_all()

    assert wakes_of_a_held_launch(stack, monkeypatch, ended_and_stop_asked) == []


def test_a_launch_that_failed_wakes_the_tracker(stack: TrainyardServer) -> None:
    launcher, wakes = counting_launcher(stack)
    boxed = launching(stack, JobSpec(name="boxed", image="trainyard/demo"), executor="docker")
    launcher.launch_beside(boxed)
    launcher.shutdown()
    assert stack.jobs.get(boxed.id).state is JobState.FAILED and wakes == [1]


def test_a_local_launch_on_sqlite_syncs_its_running_not_its_launching(
        stack: TrainyardServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # On SQLite a commit is lost only with this host, which ends a local job too: the slot's
    # turn does not wait for the disk, the launch's thread does once the process is made.
    # On PostgreSQL, whose server can lose its unflushed commits alone, LAUNCHING is synced.
    job_id, _ = stack.jobs.create(JobSpec(name="synced-start", command="sleep 30"))
    moves: list[tuple[JobState, bool]] = []  # each write that moved the job, as it did
    real_write = stack.db.write

    def state(conn: Connection) -> JobState:
        return JobState(conn.execute(select(jobs.c.state).where(jobs.c.id == job_id))
                        .scalar_one())

    @contextlib.contextmanager
    def recorded(*, synced: bool = True) -> Iterator[Connection]:
        with real_write(synced=synced) as conn:
            before = state(conn)
            yield conn
            if (after := state(conn)) is not before:
                moves.append((after, synced))

    monkeypatch.setattr(stack.db, "write", recorded)
    step(stack)
    monkeypatch.undo()
    local = stack.db.is_sqlite
    assert moves == [(JobState.LAUNCHING, not local), (JobState.RUNNING, local)]
    assert stack.tracker.launcher.launching_synced("local") is not local
    stack.service.cancel(LOCAL, job_id)
    assert run_to_end(stack, job_id) is JobState.CANCELLED


def test_only_a_local_jobs_launch_may_wait_to_be_synced() -> None:
    # The others' jobs outlive this host: a launch the store forgot would still run.
    assert LocalExecutor.ends_with_host
    assert not DockerExecutor.ends_with_host
    assert not SlurmExecutor.ends_with_host
    assert not KubernetesExecutor.ends_with_host
