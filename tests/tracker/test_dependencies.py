"""Jobs that wait for jobs (--after) on a real server running real processes: success,
failure and cancellation with their cascades, `:finished`, a chained pipeline, refusals that
store nothing, the gRPC and SDK path, and a restart that resolves what it missed."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from sqlalchemy import event

from tests.liveserver import live_server, wait_for, wait_until
from tests.tracker.passes import stepped_server
from trainyard.auth.policy import LOCAL
from trainyard.client import After, Client, TrainSpec, TrainyardError
from trainyard.domain.dependencies import Dependency, parse_dependency
from trainyard.domain.errors import FailedPrecondition, InvalidArgument, NotFound
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import FINAL_STATES, JobState
from trainyard.server.assembly import TrainyardServer
from trainyard.store.dependencies import DependencyStore
from trainyard.store.jobs import JobFilter
from trainyard.tracker.dependencies import Dependencies

FINAL = set(FINAL_STATES)


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    with live_server(tmp_path, database_url) as srv:
        yield srv


def submit(srv: TrainyardServer, command: str, *after: str, name: str = "job") -> str:
    deps: Sequence[Dependency] = [parse_dependency(text) for text in after]
    return srv.service.train(LOCAL, JobSpec(name=name, command=command), after=deps)[0]


def event_id(srv: TrainyardServer, job_id: str, state: JobState) -> int:
    """The id of the job's first event into `state` (ids are the order events were written)."""
    return next(e.id for e in srv.jobs.events(job_id) if e.to_state is state)


def job_count(srv: TrainyardServer) -> int:
    return len(srv.jobs.list(JobFilter(), page_size=1000)[0])


def test_a_job_starts_only_after_the_job_it_waits_for_succeeded(
        server: TrainyardServer, tmp_path: Path) -> None:
    gate, mark = tmp_path / "gate", tmp_path / "a-done"
    a = submit(server, f'while [ ! -e {gate} ]; do sleep 0.05; done; touch {mark}', name="a")
    b = submit(server, f"test -e {mark}", a, name="b")
    wait_for(server, a, {JobState.RUNNING})
    # A runs, B waits with its reason, out of the scheduler's queue (there is room for it).
    wait_until(lambda: "(RUNNING)" in server.jobs.get(b).pending_message, what="reason")
    waiting = server.service.status(LOCAL, b)
    assert waiting.job.state is JobState.WAITING
    assert waiting.job.pending_code == ReasonCode.DEPENDENCY
    assert waiting.pending_message == f"waits for job {a} (RUNNING) to succeed"
    assert [(n.job_id, n.state, n.met) for n in waiting.needs] == [(a, JobState.RUNNING, False)]
    gate.touch()
    wait_for(server, b, FINAL)
    assert server.jobs.get(a).state is JobState.SUCCEEDED
    assert server.jobs.get(b).state is JobState.SUCCEEDED, server.jobs.get(b).message
    assert event_id(server, b, JobState.LAUNCHING) > event_id(server, a, JobState.SUCCEEDED)
    assert server.service.status(LOCAL, b).needs[0].met


def test_a_failed_need_cancels_its_dependents_down_the_chain(server: TrainyardServer) -> None:
    a = submit(server, "sleep 0.3; exit 3", name="a")
    b = submit(server, "true", a, name="b")
    c = submit(server, "true", b, name="c")
    for job_id in (a, b, c):
        wait_for(server, job_id, FINAL)
    assert server.jobs.get(a).state is JobState.FAILED
    for job_id, needed, ended in ((b, a, "FAILED"), (c, b, "CANCELLED")):
        job = server.jobs.get(job_id)
        assert job.state is JobState.CANCELLED
        assert job.message == f"cancelled: job {needed} it waits for ended {ended}"
        assert job.attempt == 0  # never launched


def test_a_cancelled_need_cancels_its_dependent(server: TrainyardServer) -> None:
    a = submit(server, "sleep 30", name="a")
    b = submit(server, "true", a, name="b")
    wait_for(server, a, {JobState.RUNNING})
    server.service.cancel(LOCAL, a)
    wait_for(server, b, FINAL)
    assert server.jobs.get(a).state is JobState.CANCELLED
    assert server.jobs.get(b).message == f"cancelled: job {a} it waits for ended CANCELLED"


def test_a_finished_need_lets_the_job_run_whatever_the_end(server: TrainyardServer) -> None:
    a = submit(server, "sleep 0.2; exit 1", name="a")
    b = submit(server, "true", f"{a}:finished", name="b")
    wait_for(server, b, FINAL)
    assert server.jobs.get(a).state is JobState.FAILED
    assert server.jobs.get(b).state is JobState.SUCCEEDED
    assert event_id(server, b, JobState.LAUNCHING) > event_id(server, a, JobState.FAILED)


def test_three_chained_jobs_run_one_after_another(server: TrainyardServer,
                                                  tmp_path: Path) -> None:
    log = tmp_path / "order"
    first = submit(server, f"sleep 0.2; echo 1 >> {log}", name="extract")
    second = submit(server, f"echo 2 >> {log}", first, name="train")
    third = submit(server, f"echo 3 >> {log}", second, name="evaluate")
    wait_for(server, third, FINAL)
    assert [server.jobs.get(j).state for j in (first, second, third)] == \
        [JobState.SUCCEEDED] * 3
    assert log.read_text().split() == ["1", "2", "3"]


def test_unknown_ids_bad_conditions_and_ended_needs_are_refused_storing_nothing(
        server: TrainyardServer) -> None:
    failed = submit(server, "exit 1", name="failed")
    wait_for(server, failed, FINAL)
    before = job_count(server)
    with pytest.raises(NotFound, match="after: job 'ffffffff' not found"):
        submit(server, "true", "ffffffff")
    with pytest.raises(InvalidArgument) as caught:
        submit(server, "true", f"{failed}:whenever")
    assert caught.value.field == "after" and "'whenever' is not a condition" in str(caught.value)
    with pytest.raises(FailedPrecondition, match=f"after: job {failed} already ended FAILED"):
        submit(server, "true", failed)
    assert job_count(server) == before
    with server.db.read() as conn:
        assert not DependencyStore(server.db).needs_of([failed], conn)


def test_a_retried_request_naming_its_own_job_is_a_cycle(server: TrainyardServer) -> None:
    spec = JobSpec(name="again", command="sleep 30")
    blocker = submit(server, "sleep 30", name="blocker")
    job_id, _ = server.service.train(LOCAL, spec, client_request_id="req-dep",
                                     after=[parse_dependency(blocker)])
    # Only a retry can name its own job: its id came back from the first try.
    with pytest.raises(InvalidArgument, match="would wait for itself"):
        server.service.train(LOCAL, spec, client_request_id="req-dep",
                             after=[parse_dependency(job_id)])
    with pytest.raises(InvalidArgument, match="client_request_id: .* different after"):
        server.service.train(LOCAL, spec, client_request_id="req-dep")
    again, existing = server.service.train(LOCAL, spec, client_request_id="req-dep",
                                           after=[parse_dependency(blocker)])
    assert (again, existing) == (job_id, True)


def test_the_sdk_sends_after_and_the_status_shows_it(server: TrainyardServer,
                                                     tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with Client(f"127.0.0.1:{server.port}", timeout=20) as client:
        a = client.train(TrainSpec(name="a", command=f"while [ ! -e {gate} ]; do sleep 0.05;"
                                                     " done")).job_id
        b = client.train(TrainSpec(name="b", command="true", after=[a])).job_id
        c = client.train(TrainSpec(name="c", command="true",
                                   after=[After(a, "finished"), f"{b}:succeeded"])).job_id
        wait_for(server, a, {JobState.RUNNING})
        status = client.status(c)
        assert [(d.job_id, d.condition, d.met) for d in status.after] == sorted(
            [(a, "finished", False), (b, "succeeded", False)])
        assert status.pending_reason is not None
        assert status.pending_reason["code"] == "DEPENDENCY"
        listed = {j.job_id: j for j in client.list_jobs()[0]}
        assert [str(d) for d in listed[b].after] == [f"{a}:succeeded"]
        for bad, code in (("ffffffff", "NOT_FOUND"), (f"{a}:often", "INVALID_ARGUMENT")):
            with pytest.raises(TrainyardError) as caught:
                client.train(TrainSpec(name="x", command="true", after=[bad]))
            assert caught.value.code == code and "after" in caught.value.message
        # A sweep's trials cannot wait for jobs: its template's `after` is refused, not lost.
        before = job_count(server)
        with pytest.raises(TrainyardError) as caught:
            client.sweep(TrainSpec(name="s", command="true", after=[a]), grid={"LR": ["1"]})
        assert caught.value.code == "INVALID_ARGUMENT"
        assert caught.value.message.startswith("template.after: ")
        assert job_count(server) == before
        gate.touch()
        wait_for(server, c, FINAL)
        assert client.status(c).state == "SUCCEEDED"
        assert all(d.met for d in client.status(c).after)


def test_a_restart_resolves_what_ended_while_no_tracker_ran(tmp_path: Path,
                                                            database_url: str) -> None:
    with stepped_server(tmp_path, database_url) as srv:
        a = submit(srv, "true", name="a")
        b = submit(srv, "true", a, name="b")
        c = submit(srv, "true", f"{a}:finished", name="c")
        # While no tracker runs, A is cancelled.
        srv.service.cancel(LOCAL, a)
        assert srv.jobs.get(b).state is JobState.WAITING
    with stepped_server(tmp_path, database_url) as srv:
        srv.tracker.run_once()  # its first pass looks at every waiting dependent
        assert srv.tracker.wait_for_launches()
        assert srv.jobs.get(b).state is JobState.CANCELLED
        # C was released before admission, so that same pass launched it.
        assert srv.jobs.get(c).attempt == 1


class Statements:
    """Counts the SQL statements run on an engine (SQLAlchemy's own event hook)."""

    def __init__(self, srv: TrainyardServer) -> None:
        self.count = 0
        event.listen(srv.db.engine, "before_cursor_execute", self._seen)

    def _seen(self, *args: object) -> None:
        self.count += 1


def test_a_pass_reads_only_the_new_events_and_settles_what_they_concern(
        tmp_path: Path, database_url: str) -> None:
    with stepped_server(tmp_path, database_url) as srv:
        a = submit(srv, "true", name="a")
        other = submit(srv, "true", name="other")
        dependents = [submit(srv, "true", a, name=f"d{i}") for i in range(20)]
        clock = [0.0]
        resolver = Dependencies(jobs=srv.jobs, waiting=srv.tracker.waiting, clock=srv.tracker.now,
                                full_every=60.0, monotonic=lambda: clock[0])
        assert resolver.resolve() == 0  # the first looks at all: nothing to settle yet
        statements = Statements(srv)
        assert resolver.resolve() == 0
        assert statements.count == 1  # no event since: the newest event's id alone
        srv.service.cancel(LOCAL, other)  # a job nobody waits for
        statements.count = 0
        assert resolver.resolve() == 0
        assert statements.count == 2  # and the unmet rows on the new events' jobs: none
        srv.service.cancel(LOCAL, a)
        assert resolver.resolve() == 20
        assert {srv.jobs.get(d).state for d in dependents} == {JobState.CANCELLED}
