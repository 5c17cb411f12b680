"""The leader lease: which of the servers sharing one PostgreSQL runs the tracker, and the
fencing token that each of the tracker's writes carries.

A lease is one row of `leader_lease`. It is acquired when free or expired, each acquisition
raising the token by one; the holder renews it well before it expires and frees it on a clean
stop. Every time is the database's own clock (`clock_timestamp()`), so servers whose clocks
disagree still agree on who holds it.

Fencing: a term's writes go through a FencedDatabase, whose every transaction first takes a
share lock on the lease row and checks that the row still holds the term's token. The lock
lasts until that transaction commits, so a newer leader's acquisition (an UPDATE of the row)
waits for it, and every write of the old term is either committed before the new term begins
(and seen by its recovery) or refused. A paused or partitioned old leader therefore never
overwrites what a newer one wrote.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlalchemy import Connection, text

from trainyard.store.db import Database
from trainyard.store.group_commit import GroupCommitter

TRACKER_LEASE = "tracker"
_NOW = "extract(epoch from clock_timestamp())"

_CREATE = text("INSERT INTO leader_lease (name, holder, token, acquired_at, expires_at) "
               "VALUES (:name, '', 0, 0, 0) ON CONFLICT (name) DO NOTHING")
# Free (released) or expired: taken, with the next token.
_ACQUIRE = text(
    f"UPDATE leader_lease SET holder = :holder, token = token + 1, acquired_at = {_NOW}, "
    f"expires_at = {_NOW} + :ttl WHERE name = :name AND (holder = '' OR expires_at <= {_NOW}) "
    "RETURNING token")
# Still ours (the token unchanged), even if it expired meanwhile: then nobody took it, and
# nothing was written under another token since.
_RENEW = text(f"UPDATE leader_lease SET expires_at = {_NOW} + :ttl "
              "WHERE name = :name AND holder = :holder AND token = :token")
_RELEASE = text(f"UPDATE leader_lease SET holder = '', expires_at = {_NOW} "
                "WHERE name = :name AND holder = :holder AND token = :token")
_HOLDS = text("SELECT 1 FROM leader_lease "
              "WHERE name = :name AND holder = :holder AND token = :token FOR SHARE")
_LEFT = text(f"SELECT expires_at - {_NOW} FROM leader_lease "
             "WHERE name = :name AND holder = :holder AND token = :token")
_READ = text(f"SELECT holder, token, expires_at - {_NOW} AS left_s FROM leader_lease "
             "WHERE name = :name")


class Fenced(Exception):
    """A newer leader holds the lease: this term's write or launch is refused."""


@dataclass(frozen=True)
class Term:
    """One holder's hold on the lease, from an acquisition to its loss or release."""

    holder: str
    token: int


@dataclass(frozen=True)
class LeaseState:
    holder: str  # empty while free
    token: int
    left_s: float  # until it expires, by the database's clock; negative once expired


class Lease:
    def __init__(self, db: Database, holder: str, ttl: float,
                 name: str = TRACKER_LEASE) -> None:
        if db.is_sqlite:
            raise ValueError("a lease needs PostgreSQL; SQLite servers hold a file lock")
        self.db = db
        self.holder = holder
        self.ttl = ttl
        self.name = name

    def acquire(self) -> Term | None:
        """Take the lease if it is free or expired: a new term with the next token. None
        while another holder's lease is in force."""
        with self.db.write() as conn:
            conn.execute(_CREATE, {"name": self.name})
            token = conn.execute(_ACQUIRE, {"name": self.name, "holder": self.holder,
                                            "ttl": self.ttl}).scalar()
        return None if token is None else Term(self.holder, int(token))

    def renew(self, term: Term) -> bool:
        """Extend the term by the TTL from now; False if the term is over (another holder
        took the lease)."""
        with self.db.write() as conn:
            result = conn.execute(_RENEW, self._params(term) | {"ttl": self.ttl})
        return result.rowcount == 1

    def release(self, term: Term) -> None:
        """Free the lease at once (a clean stop), if the term still holds it."""
        with self.db.write() as conn:
            conn.execute(_RELEASE, self._params(term))

    def read(self) -> LeaseState | None:
        with self.db.read() as conn:
            row = conn.execute(_READ, {"name": self.name}).first()
        return None if row is None else LeaseState(row.holder, int(row.token),
                                                   float(row.left_s))

    def check(self, conn: Connection, term: Term) -> None:
        """Inside the caller's transaction: raise Fenced unless the term still holds the
        lease, and keep a newer acquisition waiting until that transaction ends."""
        if conn.execute(_HOLDS, self._params(term)).first() is None:
            raise Fenced(f"lease token {term.token} is no longer {self.name}'s: another "
                         "server leads")

    def seconds_left(self, term: Term) -> float | None:
        """How long the term surely lasts (by the database's clock); None if it is over."""
        with self.db.read() as conn:
            left = conn.execute(_LEFT, self._params(term)).scalar()
        return None if left is None else float(left)

    def _params(self, term: Term) -> dict[str, object]:
        return {"name": self.name, "holder": term.holder, "token": term.token}


class FencedDatabase(Database):
    """The server's database as one term of the tracker writes to it: the same engine and
    change feed, each write transaction checked against the lease first. A term of None is
    fenced from the start (a standby's tracker, never started)."""

    def __init__(self, base: Database, lease: Lease, term: Term | None,
                 on_fenced: Callable[[], None] = lambda: None) -> None:
        # The base's engine and signals, not a second pool: nothing of its own to set up.
        self.engine = base.engine
        self.is_sqlite = base.is_sqlite
        self._write_lock = contextlib.nullcontext()
        self.feed = base.feed
        self.telemetry = base.telemetry
        self.group = GroupCommitter(self.write)
        self._lease = None
        self.lease = lease
        self.term = term
        self._on_fenced = on_fenced
        # A launch goes ahead only while the lease surely lasts this long: long enough to
        # create what it launches before a standby could take over.
        self.launch_margin = lease.ttl / 2

    @contextlib.contextmanager
    def write(self, *, synced: bool = True) -> Iterator[Connection]:
        with super().write(synced=synced) as conn:
            self._check(conn)
            yield conn

    def confirm_lease(self) -> None:
        """Before a side effect outside the store (a launch, a sweep): raise Fenced unless
        the term holds the lease for at least the launch margin yet."""
        left = None if self.term is None else self.lease.seconds_left(self.term)
        if left is None or left < self.launch_margin:
            self._on_fenced()
            raise Fenced("this server's lease is over or about to end: it launches nothing")

    def _check(self, conn: Connection) -> None:
        if self.term is None:
            raise Fenced("this server is a standby: the leader runs the tracker")
        try:
            self.lease.check(conn, self.term)
        except Fenced:
            self._on_fenced()
            raise

    def close(self) -> None:
        """The engine is the base's, which closes it."""
