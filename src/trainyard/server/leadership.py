"""Which of the servers sharing one PostgreSQL runs the tracker: the one holding the lease.

Every server serves the APIs. The leader renews its lease each `renew_interval` and runs a
tracker whose writes are fenced by its term's token; a standby tries to take the lease as
often, and when it does (the leader stopped, was killed, or lost the database for longer
than the TTL) it begins a term of its own: a fresh tracker that recovers exactly as a
restarted server does, adopting what runs, before it admits anything.

A leader that loses its lease (its renewal finds another holder, a write of its tracker is
fenced, or it could not renew for a whole TTL) steps down: its tracker stops, launching
nothing more, and the server stays up as a standby that may lead again in a later term.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import Protocol

from trainyard.store.lease import Fenced, Lease, Term

log = logging.getLogger(__name__)


def holder_name() -> str:
    """This process among the servers: its host, its pid, and a nonce for a reused pid."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class TermTracker(Protocol):
    """What a term runs: started once (recovery first), stopped once."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Leadership:
    def __init__(self, lease: Lease, *, renew_interval: float,
                 begin: Callable[[Term, Callable[[], None]], TermTracker],
                 on_change: Callable[[bool], None] = lambda leading: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.lease = lease
        self.renew_interval = renew_interval
        # Builds the term's tracker over a database fenced by the term; the callable it is
        # given is for the tracker's store to call when a write was fenced.
        self._begin = begin
        self._on_change = on_change
        self._clock = clock
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._term: Term | None = None
        self._tracker: TermTracker | None = None
        self._renewed_at = 0.0
        self._fenced = False
        self._db_away_logged = False
        self.terms_begun = 0

    @property
    def leading(self) -> bool:
        return self._term is not None

    @property
    def tracker(self) -> TermTracker | None:
        """The tracker of the term in force; None on a standby."""
        return self._tracker

    def start(self) -> None:
        """Try for the lease once now, so a leader has recovered before the server serves;
        then keep renewing or trying beside."""
        tracker = self._try_to_lead(beside=False)
        self._thread = threading.Thread(target=self._run, name="leadership", daemon=True)
        self._thread.start()  # renewing while the first term's recovery runs here
        if tracker is not None:
            self._start_tracker(tracker)

    def stop(self) -> None:
        """Stop the tracker and free the lease, so a standby takes over at its next try."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        term = self._term
        self._step_down("this server stops")
        if term is not None:
            try:
                self.lease.release(term)
            except Exception as exc:  # then it expires by itself within the TTL
                log.warning("could not free the leader lease: %s", exc)

    def fenced(self) -> None:
        """A write or launch of the tracker was refused: step down at once (on the
        leadership thread, never on the tracker's own)."""
        self._fenced = True
        self._wake.set()

    # --- the loop ------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.renew_interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                if self._term is None:
                    self._try_to_lead(beside=True)
                else:
                    self._keep_leading()
            except Exception:  # the loop must outlive any one bad turn
                log.exception("leadership turn failed")

    def _try_to_lead(self, *, beside: bool) -> TermTracker | None:
        """Take the lease if it is free or expired and begin a term: its tracker starts on a
        thread of its own (beside), or is returned for the caller to start."""
        try:
            term = self.lease.acquire()
        except Exception as exc:  # the database is away: a standby simply tries again
            if not self._db_away_logged:
                log.warning("cannot reach the database for the leader lease: %s", exc)
                self._db_away_logged = True
            return None
        self._db_away_logged = False
        if term is None:
            return None
        self._renewed_at = self._clock()
        self._fenced = False
        log.info("leader (lease token %d): running the tracker", term.token)
        tracker = self._begin(term, self.fenced)
        with self._lock:
            self._term, self._tracker = term, tracker
        self.terms_begun += 1
        self._on_change(True)
        if not beside:
            return tracker
        # Recovery runs beside the renewals, however long it takes.
        threading.Thread(target=self._start_tracker, args=(tracker,), name="term-start",
                         daemon=True).start()
        return None

    def _start_tracker(self, tracker: TermTracker) -> None:
        try:
            tracker.start()
        except Fenced:
            self.fenced()
        except Exception:
            log.exception("the tracker did not start; stepping down")
            self.fenced()

    def _keep_leading(self) -> None:
        term = self._term
        assert term is not None
        if self._fenced:
            self._step_down("a write of its tracker was fenced: another server leads")
            return
        try:
            held = self.lease.renew(term)
        except Exception as exc:
            if self._clock() - self._renewed_at >= self.lease.ttl:
                self._step_down(f"it could not renew its lease for {self.lease.ttl:g} s "
                                f"({exc})")
            return
        if not held:
            self._step_down("another server holds the lease")
            return
        self._renewed_at = self._clock()

    def _step_down(self, why: str) -> None:
        with self._lock:
            term, tracker = self._term, self._tracker
            self._term = self._tracker = None
        if term is None:
            return
        if not self._stop.is_set():
            log.warning("standby now (lease token %d ended): %s", term.token, why)
        self._on_change(False)
        if tracker is not None:
            try:
                tracker.stop()
            except Exception as exc:  # its last writes are fenced: nothing more to save
                log.info("the tracker of lease token %d stopped: %s", term.token, exc)
