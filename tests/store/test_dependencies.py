"""Dependency rows on both dialects: stored with their job, held out of the queue while
unmet, found from the needed jobs' events, met for good, and kept across a reopen."""

from __future__ import annotations

from trainyard.domain.dependencies import Dependency, Need, parse_dependency
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.store.db import Database, open_database
from trainyard.store.dependencies import DependencyStore, Met
from trainyard.store.jobs import JobStore

SPEC = JobSpec(name="job", command="true")


def needs(*items: tuple[str, JobState]) -> list[Need]:
    return [Need(parse_dependency(text), state) for text, state in items]


def test_a_dependent_job_is_stored_with_its_needs_and_held_out_of_the_queue(
        db: Database) -> None:
    store, deps = JobStore(db), DependencyStore(db)
    a, _ = store.create(SPEC)
    b, _ = store.create(SPEC, needs=needs((a, JobState.WAITING)))
    job = store.get(b)
    assert job.state is JobState.WAITING
    assert (job.pending_code, job.pending_message) == (
        ReasonCode.DEPENDENCY, f"waits for job {a} (WAITING) to succeed")
    assert [q.id for q in store.queued()] == [a]  # the scheduler never sees b
    assert deps.needs_of([a, b]) == {b: [Need(Dependency(a), JobState.WAITING)]}
    assert deps.waiting() == {b: job.pending_message}
    # Not in the queue, so never ahead of a job submitted after it.
    c, _ = store.create(SPEC)
    assert store.queue_position(store.get(c)) == 2


def test_a_need_already_met_at_submit_holds_nothing(db: Database) -> None:
    store = JobStore(db)
    a, _ = store.create(SPEC)
    b, _ = store.create(SPEC, needs=[Need(parse_dependency(a), JobState.SUCCEEDED, met=True)])
    assert store.get(b).pending_code == ""
    assert [q.id for q in store.queued()] == [a, b]


def test_the_needed_jobs_events_find_their_waiting_dependents(db: Database) -> None:
    store, deps = JobStore(db), DependencyStore(db)
    a, _ = store.create(SPEC)
    other, _ = store.create(SPEC)
    b, _ = store.create(SPEC, needs=needs((a, JobState.WAITING)))
    before = deps.last_event_id()
    store.transition(other, JobState.WAITING, JobState.CANCELLED, reason="x")
    assert deps.dependents_moved(before, deps.last_event_id()) == {}
    mark = deps.last_event_id()
    store.transition(a, JobState.WAITING, JobState.LAUNCHING, reason="x", attempt=1)
    moved = deps.dependents_moved(mark, deps.last_event_id())
    assert list(moved) == [b]
    assert deps.dependents_of([a]).keys() == {b}
    assert deps.dependents_of([other]) == {}


def test_the_active_jobs_a_waiting_job_still_needs_are_told_apart(db: Database) -> None:
    store = JobStore(db)
    needed, left, alone, waits = (store.create(SPEC)[0] for _ in range(4))
    store.create(SPEC, needs=needs((needed, JobState.WAITING)))
    store.create(SPEC, needs=needs((waits, JobState.WAITING)))
    gone, _ = store.create(SPEC, needs=needs((left, JobState.WAITING)))
    store.transition(gone, JobState.WAITING, JobState.CANCELLED, reason="x")
    assert store.active() == ([], set())
    for job_id in (needed, left, alone):
        store.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="x", attempt=1)
    # The dependent of `left` waits no more; `alone` has none; `waits` is needed but not
    # active.
    active, still_needed = store.active()
    assert [j.id for j in active] == [needed, left, alone]
    assert still_needed == {needed}


def test_needs_met_for_good_release_the_job_and_clear_its_reason(db: Database) -> None:
    store, deps = JobStore(db), DependencyStore(db)
    a, _ = store.create(SPEC)
    c, _ = store.create(SPEC)
    b, _ = store.create(SPEC, needs=needs((a, JobState.WAITING), (c + ":finished",
                                                                  JobState.WAITING)))
    deps.mark_met([Met(b, [c], (ReasonCode.DEPENDENCY, "still a"))])
    assert store.get(b).pending_message == "still a"
    assert {n.job_id: n.met for n in deps.needs_of([b])[b]} == {a: False, c: True}
    assert b not in {q.id for q in store.queued()}
    assert deps.settleable() == {}  # c is met, and a has not ended
    store.transition(a, JobState.WAITING, JobState.CANCELLED, reason="x")
    assert deps.settleable() == {b: "still a"}
    deps.mark_met([Met(b, [a], ("", ""))])
    assert store.get(b).pending_code == "" and b in {q.id for q in store.queued()}
    assert deps.waiting() == {} and deps.settleable() == {}


def test_the_graph_is_read_along_the_needs(db: Database) -> None:
    store, deps = JobStore(db), DependencyStore(db)
    a, _ = store.create(SPEC)
    b, _ = store.create(SPEC, needs=needs((a, JobState.WAITING)))
    c, _ = store.create(SPEC, needs=needs((b, JobState.WAITING), (a, JobState.WAITING)))
    edges = deps.edges_from([c])
    assert sorted(edges[c]) == sorted([a, b]) and edges[b] == [a] and edges[a] == []


def test_dependencies_are_kept_across_a_reopen(db: Database) -> None:
    store = JobStore(db)
    a, _ = store.create(SPEC)
    b, _ = store.create(SPEC, needs=needs((a, JobState.WAITING)))
    again = open_database(str(db.engine.url.render_as_string(hide_password=False)))
    try:
        assert DependencyStore(again).needs_of([b])[b][0].job_id == a
        assert b not in {q.id for q in JobStore(again).queued()}
    finally:
        again.close()


def test_waiting_jobs_are_cancelled_together_and_a_moved_one_is_left(db: Database) -> None:
    store = JobStore(db)
    a, _ = store.create(SPEC)
    b, _ = store.create(SPEC)
    moved, _ = store.create(SPEC)
    store.transition(moved, JobState.WAITING, JobState.CANCELLED, reason="by request",
                     message="by request")
    done = store.cancel_waiting({a: "why a", moved: "why moved", b: "why b"}, now=5.0)
    assert done == [a, b]
    assert [(store.get(j).state, store.get(j).message) for j in (a, b, moved)] == [
        (JobState.CANCELLED, "why a"), (JobState.CANCELLED, "why b"),
        (JobState.CANCELLED, "by request")]
    assert store.events(a)[-1].reason == "why a" and len(store.events(moved)) == 2
