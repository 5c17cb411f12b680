"""Dependency rows (`--after`): which jobs each job waits for, written with the job itself
(store/jobs.py create), and the reads and writes the tracker resolves them with. A waiting
job with an unmet row is held out of the queue (`held_back`): the scheduler never sees it.

The tracker finds what to look at from the needed jobs' events (`dependents_moved`, through
ix_job_dependencies_needs), never by visiting every waiting job."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    bindparam,
    exists,
    func,
    insert,
    select,
    update,
)

from trainyard.domain.dependencies import Condition, Dependency, Need
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.states import FINAL_STATES, JobState
from trainyard.store import driver_reads
from trainyard.store.db import Database
from trainyard.store.schema import job_dependencies, job_events, jobs

_d = job_dependencies.c
INSERT = insert(job_dependencies)
_IN_CHUNK = 1000  # well under every dialect's limit on bound parameters
_WAITING = JobState.WAITING.value


def held_back() -> ColumnElement[bool]:
    """True for a job row (of the enclosing query on `jobs`) that still waits for a job."""
    return exists().where(_d.job_id == jobs.c.id, _d.met.is_(False))


def still_needed() -> ColumnElement[bool]:
    """True for a job row (of the enclosing query on `jobs`) that a waiting job still needs:
    its unmet rows by ix_job_dependencies_needs, each dependent's state by the primary key."""
    return exists().where(_d.needs_job_id == jobs.c.id, _d.met.is_(False),
                          _dependent.c.id == _d.job_id, _dependent.c.state == _WAITING)


def rows(job_id: str, needs: Iterable[Need]) -> list[dict[str, Any]]:
    """The rows of a new job's needs, for its create's one transaction."""
    return [{"job_id": job_id, "needs_job_id": n.job_id,
             "condition": n.dependency.condition.value, "met": n.met} for n in needs]


def _chunks(ids: Collection[str]) -> Iterable[list[str]]:
    wanted = sorted(set(ids))
    for start in range(0, len(wanted), _IN_CHUNK):
        yield wanted[start:start + _IN_CHUNK]


@dataclass(frozen=True)
class Met:
    """A waiting job's needs now met, and why it waits from now on."""

    job_id: str
    needs: Sequence[str]
    pending: tuple[str, str]


_SET_MET = update(job_dependencies).where(
    _d.job_id == bindparam("b_job"), _d.needs_job_id == bindparam("b_needs")).values(met=True)
_SET_PENDING = update(jobs).where(
    jobs.c.id == bindparam("b_job"), jobs.c.state == _WAITING,
    jobs.c.pending_code == ReasonCode.DEPENDENCY.value,
).values(pending_code=bindparam("b_code"), pending_message=bindparam("b_message"))
_needed = jobs.alias("needed")
_SELECT_NEEDS = (
    select(_d.job_id, _d.needs_job_id, _d.condition, _d.met, _needed.c.state)
    .join(_needed, _needed.c.id == _d.needs_job_id)
    .where(_d.job_id.in_(bindparam("b_ids", expanding=True)))
    .order_by(_d.job_id, _d.needs_job_id)
)
_dependent = jobs.alias("dependent")
# Waiting jobs with an unmet row, with why they wait as written: what resolution concerns.
_OPEN = select(_d.job_id, _dependent.c.pending_message).distinct().join(
    _dependent, _dependent.c.id == _d.job_id).where(
    _d.met.is_(False), _dependent.c.state == _WAITING)
# Read at every tracker pass, so built once.
_LAST_EVENT = select(func.max(job_events.c.id))
# The dependents with an unmet need on a job that moved in the events after b_after up to
# b_upto: those events by the primary key, then their rows by ix_job_dependencies_needs.
_UNMET_MOVED = select(_d.job_id).distinct().join(
    job_events, job_events.c.job_id == _d.needs_job_id).where(
    job_events.c.id > bindparam("b_after"), job_events.c.id <= bindparam("b_upto"),
    _d.met.is_(False))
_UNMET_OF = select(_d.job_id).where(_d.needs_job_id.in_(bindparam("b_ids", expanding=True)),
                                    _d.met.is_(False))
_STILL_WAITING = select(jobs.c.id, jobs.c.pending_message).where(
    jobs.c.id.in_(bindparam("b_ids", expanding=True)), jobs.c.state == _WAITING)


class DependencyStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- reads ----------------------------------------------------------------------------

    def needs_of(self, job_ids: Collection[str],
                 conn: Connection | None = None) -> dict[str, list[Need]]:
        """Each of these jobs' needs, with the needed job's state now; jobs that wait for
        none are left out."""
        out: dict[str, list[Need]] = {}
        if not job_ids:
            return out
        with self.db.read(conn) as c:
            for chunk in _chunks(job_ids):
                for r in driver_reads.rows(c, _SELECT_NEEDS, {"b_ids": chunk}):
                    out.setdefault(r.job_id, []).append(Need(
                        Dependency(r.needs_job_id, Condition(r.condition)), JobState(r.state),
                        bool(r.met)))
        return out

    def edges_from(self, job_ids: Iterable[str], limit: int = 10_000) -> dict[str, list[str]]:
        """What these jobs wait for, and what those wait for, and so on (at most `limit`
        jobs): the part of the graph a cycle through a new edge to them would run along."""
        edges: dict[str, list[str]] = {}
        frontier = set(job_ids)
        with self.db.read() as conn:
            while frontier and len(edges) < limit:
                found: set[str] = set()
                for chunk in _chunks(frontier):
                    for r in conn.execute(select(_d.job_id, _d.needs_job_id)
                                          .where(_d.job_id.in_(chunk))):
                        edges.setdefault(r.job_id, []).append(r.needs_job_id)
                        found.add(r.needs_job_id)
                for job_id in frontier:
                    edges.setdefault(job_id, [])
                frontier = found - edges.keys()
        return edges

    def last_event_id(self) -> int:
        with self.db.read() as conn:
            return int(conn.execute(_LAST_EVENT).scalar() or 0)

    def dependents_moved(self, after_id: int, upto_id: int) -> dict[str, str]:
        """The waiting jobs with an unmet need that changed state in the events after
        `after_id` up to `upto_id`, each with its pending message: only those events and the
        needed jobs' rows are read, in one statement (and the dependents' rows, if any)."""
        with self.db.read() as conn:
            unmet = conn.execute(_UNMET_MOVED, {"b_after": after_id, "b_upto": upto_id}
                                 ).scalars().all()
            return self._still_waiting(conn, unmet)

    def dependents_of(self, job_ids: Collection[str]) -> dict[str, str]:
        """The waiting jobs with an unmet need on one of these, each with its pending
        message."""
        with self.db.read() as conn:
            return self._dependents(conn, job_ids)

    @staticmethod
    def _dependents(conn: Connection, needed: Collection[str]) -> dict[str, str]:
        """In steps, each by an index, so that no plan visits every waiting job: the unmet
        rows of these needed jobs (ix_job_dependencies_needs), then those of their jobs that
        still wait (the primary key)."""
        waiting: set[str] = set()
        for chunk in _chunks(needed):
            waiting.update(conn.execute(_UNMET_OF, {"b_ids": chunk}).scalars())
        return DependencyStore._still_waiting(conn, waiting)

    @staticmethod
    def _still_waiting(conn: Connection, job_ids: Collection[str]) -> dict[str, str]:
        """Those of these jobs that still wait, each with its pending message (by the
        primary key)."""
        out: dict[str, str] = {}
        for chunk in _chunks(job_ids):
            out.update((r.id, r.pending_message)
                       for r in conn.execute(_STILL_WAITING, {"b_ids": chunk}))
        return out

    def waiting(self) -> dict[str, str]:
        """Every waiting job with an unmet need, with its pending message (at start: what
        happened while the service was down)."""
        with self.db.read() as conn:
            return {r.job_id: r.pending_message for r in conn.execute(_OPEN)}

    def settleable(self) -> dict[str, str]:
        """The waiting jobs with an unmet need whose job has ended, with their pending
        messages: what an event committed out of order, or a need that ended while its
        dependent was being submitted, would leave unsettled. Only rows are returned that
        call for a write."""
        query = _OPEN.join(_needed, _needed.c.id == _d.needs_job_id).where(
            _needed.c.state.in_([s.value for s in FINAL_STATES]))
        with self.db.read() as conn:
            return {r.job_id: r.pending_message for r in conn.execute(query)}

    # --- writes ---------------------------------------------------------------------------

    def mark_met(self, changes: Sequence[Met]) -> None:
        """For each job, these needs are met, for good, and while it still waits, why it
        waits is now its `pending` (("", "") once it waits for nothing: the scheduler says
        next): all in one transaction, each statement run once for every row."""
        met = [{"b_job": c.job_id, "b_needs": n} for c in changes for n in c.needs]
        pending = [{"b_job": c.job_id, "b_code": c.pending[0], "b_message": c.pending[1]}
                   for c in changes]
        if not pending:
            return
        with self.db.write() as conn:
            if met:
                conn.execute(_SET_MET, met)
            conn.execute(_SET_PENDING, pending)
        self.db.feed.notify()
