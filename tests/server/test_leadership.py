"""Leadership's terms on a real PostgreSQL: a leader that cannot renew for a whole TTL (its
database away) steps down, a fenced write makes it step down at once, and a later term
begins with a fresh tracker and the next token."""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqlalchemy.exc import OperationalError

from tests.liveserver import wait_until
from trainyard.server.leadership import Leadership
from trainyard.store.db import Database
from trainyard.store.lease import Lease, Term


class Recorder:
    """A term's tracker that records its life."""

    def __init__(self, term: Term, fenced: Callable[[], None]) -> None:
        self.term, self.fenced = term, fenced
        self.started = threading.Event()
        self.stopped = threading.Event()

    def start(self) -> None:
        self.started.set()

    def stop(self) -> None:
        self.stopped.set()


class FlakyLease(Lease):
    """The real lease, whose renewals can be made to fail as if the database were away."""

    away = False

    def _reach(self) -> None:
        if self.away:
            raise OperationalError("UPDATE leader_lease", {}, Exception("server closed"))

    def acquire(self) -> Term | None:
        self._reach()
        return super().acquire()

    def renew(self, term: Term) -> bool:
        self._reach()
        return super().renew(term)


def leadership(lease: Lease, trackers: list[Recorder],
               changes: list[bool] | None = None) -> Leadership:
    def begin(term: Term, fenced: Callable[[], None]) -> Recorder:
        trackers.append(Recorder(term, fenced))
        return trackers[-1]

    return Leadership(lease, renew_interval=0.1, begin=begin,
                      on_change=(changes if changes is not None else []).append)


def test_a_leader_without_its_database_for_a_ttl_steps_down_and_leads_again(
        pg: Database) -> None:
    lease = FlakyLease(pg, "a", ttl=0.6)
    trackers: list[Recorder] = []
    changes: list[bool] = []
    lead = leadership(lease, trackers, changes)
    lead.start()
    try:
        assert lead.leading and trackers[0].started.is_set()  # recovered before start returns
        lease.away = True
        wait_until(lambda: not lead.leading, timeout=3, what="stepping down")
        # A leader is a standby first, then stops its tracker: the stop follows at once.
        wait_until(trackers[0].stopped.is_set, timeout=3, what="the old tracker's stop")
        assert len(trackers) == 1
        lease.away = False  # the database is back: the expired lease is taken again
        wait_until(lambda: lead.leading, timeout=3, what="a new term")
        assert trackers[1].term.token == trackers[0].term.token + 1
        wait_until(trackers[1].started.is_set, timeout=3, what="the new tracker")
        assert changes == [True, False, True]
    finally:
        lead.stop()
    assert trackers[1].stopped.is_set()
    state = lease.read()
    assert state is not None and state.holder == ""  # freed on the clean stop


def test_a_fenced_write_makes_the_leader_step_down_at_once(pg: Database) -> None:
    trackers: list[Recorder] = []
    lead = leadership(Lease(pg, "a", ttl=30), trackers)
    lead.start()
    try:
        trackers[0].fenced()  # as its store calls it when a write was refused
        wait_until(lambda: not lead.leading, timeout=2, what="stepping down")
        wait_until(trackers[0].stopped.is_set, timeout=2, what="the tracker's stop")
    finally:
        lead.stop()


def test_a_standby_leads_once_the_leader_stops(pg: Database) -> None:
    first_trackers: list[Recorder] = []
    second_trackers: list[Recorder] = []
    first = leadership(Lease(pg, "a", ttl=30), first_trackers)
    second = leadership(Lease(pg, "b", ttl=30), second_trackers)
    first.start()
    second.start()
    try:
        assert first.leading and not second.leading and second.tracker is None
        first.stop()
        wait_until(lambda: second.leading, timeout=2, what="the standby to lead")
        wait_until(second_trackers[0].started.is_set, timeout=2, what="its tracker")
        assert second_trackers[0].term.token == first_trackers[0].term.token + 1
    finally:
        second.stop()
