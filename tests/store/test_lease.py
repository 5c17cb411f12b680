"""The leader lease on a real PostgreSQL: acquisition, renewal, expiry, the token's growth,
and fencing of an old term's writes inside their transaction."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import text

from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.store.db import Database
from trainyard.store.jobs import JobStore
from trainyard.store.lease import Fenced, FencedDatabase, Lease


def test_a_free_lease_is_taken_once_and_renewed_by_its_holder(pg: Database) -> None:
    a, b = Lease(pg, "a", ttl=30), Lease(pg, "b", ttl=30)
    term = a.acquire()
    assert term is not None and term.token == 1 and term.holder == "a"
    assert b.acquire() is None  # in force: nobody else takes it
    assert a.renew(term)
    state = a.read()
    assert state is not None and state.holder == "a" and 29 < state.left_s <= 30


def test_an_expired_lease_passes_on_with_the_next_token(pg: Database) -> None:
    a, b = Lease(pg, "a", ttl=0.3), Lease(pg, "b", ttl=30)
    first = a.acquire()
    assert first is not None
    time.sleep(0.5)
    second = b.acquire()
    assert second is not None and second.token == first.token + 1
    assert not a.renew(first)  # the old holder hears its term is over
    assert a.seconds_left(first) is None
    assert b.renew(second)


def test_a_lease_renewed_after_its_expiry_is_kept_if_nobody_took_it(pg: Database) -> None:
    a = Lease(pg, "a", ttl=0.2)
    term = a.acquire()
    assert term is not None
    time.sleep(0.4)
    assert a.renew(term)  # nothing was written under another token meanwhile
    left = a.seconds_left(term)
    assert left is not None and left > 0


def test_a_released_lease_is_free_at_once(pg: Database) -> None:
    a, b = Lease(pg, "a", ttl=30), Lease(pg, "b", ttl=30)
    first = a.acquire()
    assert first is not None
    a.release(first)
    second = b.acquire()
    assert second is not None and second.token == first.token + 1 and second.holder == "b"
    a.release(first)  # a release of a term that is over changes nothing
    state = b.read()
    assert state is not None and state.holder == "b"


def test_an_old_terms_writes_are_refused(pg: Database) -> None:
    old_lease, new_lease = Lease(pg, "old", ttl=0.3), Lease(pg, "new", ttl=30)
    old_term = old_lease.acquire()
    assert old_term is not None
    fenced_calls: list[bool] = []
    old_db = FencedDatabase(pg, old_lease, old_term, lambda: fenced_calls.append(True))
    jobs = JobStore(pg)
    job_id, _ = jobs.create(JobSpec(name="j", command="true"))
    JobStore(old_db).transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                                attempt=1)  # while it leads: written
    time.sleep(0.5)
    new_term = new_lease.acquire()
    assert new_term is not None
    with pytest.raises(Fenced):
        JobStore(old_db).transition(job_id, JobState.LAUNCHING, JobState.FAILED,
                                    reason="launch failed")
    assert fenced_calls == [True]
    assert jobs.get(job_id).state is JobState.LAUNCHING  # nothing of the refused write
    with pytest.raises(Fenced):
        old_db.confirm_lease()  # and it launches nothing
    new_db = FencedDatabase(pg, new_lease, new_term)
    new_db.confirm_lease()
    JobStore(new_db).mark_running(job_id, reason="process started", now=time.time())
    assert jobs.get(job_id).state is JobState.RUNNING


def test_a_standbys_fenced_database_writes_nothing(pg: Database) -> None:
    standby = FencedDatabase(pg, Lease(pg, "s", ttl=5), None)
    with pytest.raises(Fenced, match="standby"), standby.write() as conn:
        conn.execute(text("SELECT 1"))
    with pytest.raises(Fenced):
        standby.confirm_lease()


def test_a_launch_is_refused_once_the_lease_nears_its_end(pg: Database) -> None:
    lease = Lease(pg, "a", ttl=1.0)
    term = lease.acquire()
    assert term is not None
    db = FencedDatabase(pg, lease, term)
    db.confirm_lease()  # a whole second left, past the margin of half of it
    time.sleep(0.6)
    with pytest.raises(Fenced):
        db.confirm_lease()
    with db.write() as conn:  # a write is still safe: nobody else holds the token
        conn.execute(text("SELECT 1"))


def test_a_newer_acquisition_waits_for_the_old_terms_transaction(pg: Database) -> None:
    """Inside a transaction: the old term's write holds the lease row shared until it
    commits, so the takeover comes after it, never in the middle."""
    old_lease, new_lease = Lease(pg, "old", ttl=0.3), Lease(pg, "new", ttl=30)
    old_term = old_lease.acquire()
    assert old_term is not None
    old_db = FencedDatabase(pg, old_lease, old_term)
    order: list[str] = []
    checked = threading.Event()

    def take_over() -> None:
        checked.wait(5)
        time.sleep(0.5)  # past the old term's expiry
        term = new_lease.acquire()
        order.append(f"acquired {term.token if term else None}")

    thread = threading.Thread(target=take_over)
    thread.start()
    with old_db.write() as conn:
        conn.execute(text("SELECT 1"))  # the check has run: the row is held
        checked.set()
        time.sleep(1.2)
        order.append("old committed")
    thread.join(10)
    assert order == ["old committed", f"acquired {old_term.token + 1}"]
