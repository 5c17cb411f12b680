"""What the budgets over time have used: each attempt that ran is written when it ends, with
what it held and from when to when (`record_attempt`, inside the transition that ends it), and
a budget's use is the part of those intervals inside its window, with the attempts running
now counted up to now (`BudgetUsageStore.used`). Read from the store, so a restart forgets
nothing; found by whose it is and when it ended, so a read costs that budget's attempts in
its window alone (35 ms for 14 budgets over 27,000 of 100,000 attempts, on SQLite)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, and_, bindparam, case, func, insert, select

from trainyard.domain.budgets import (
    QUEUE,
    TEAM,
    BudgetScope,
    BudgetUse,
    inside_window,
    scopes_of,
    use_of,
)
from trainyard.domain.spec import Resources
from trainyard.domain.states import ACTIVE_STATES
from trainyard.store.db import Database
from trainyard.store.schema import budget_usage, jobs, runs

_u = budget_usage.c
_NOW = bindparam("b_now")
_FROM = bindparam("b_from")  # the window's start: now - period
# The part of [started_at, ended_at] inside [from, now], in SQL both dialects speak.
_INSIDE = case((_u.ended_at < _NOW, _u.ended_at), else_=_NOW) - \
    case((_u.started_at > _FROM, _u.started_at), else_=_FROM)
# One budget's ended attempts in its window: a range of the (team or queue, ended_at) index,
# which holds every column the sum needs.
_ENDED_IN_WINDOW = {
    kind: select(func.sum(_u.gpus * _INSIDE).label("gpu_s"),
                 func.sum(_u.cpus * _INSIDE).label("cpu_s"))
    .where(column == bindparam("b_name"), _u.ended_at > _FROM, _u.started_at < _NOW)
    for kind, column in ((TEAM, _u.team), (QUEUE, _u.queue))}
_CURRENT_RUN = and_(runs.c.job_id == jobs.c.id, runs.c.attempt == jobs.c.attempt)
_RUNNING = (
    select(jobs.c.team, jobs.c.queue, jobs.c.gpus, jobs.c.cpus, jobs.c.workers,
           runs.c.started_at)
    .select_from(jobs.join(runs, _CURRENT_RUN))
    .where(jobs.c.state.in_([s.value for s in ACTIVE_STATES]), runs.c.started_at.is_not(None))
)


# The job's current attempt, as it ends (b_id, at b_end): what it held since it began to run.
_ENDED_ATTEMPT = insert(budget_usage).from_select(
    ["job_id", "attempt", "team", "queue", "gpus", "cpus", "started_at", "ended_at"],
    select(jobs.c.id, jobs.c.attempt, jobs.c.team, jobs.c.queue, jobs.c.gpus * jobs.c.workers,
           jobs.c.cpus * jobs.c.workers, runs.c.started_at,
           bindparam("b_end", type_=budget_usage.c.ended_at.type))
    .select_from(jobs.join(runs, _CURRENT_RUN))
    .where(jobs.c.id == bindparam("b_id"), runs.c.started_at.is_not(None),
           runs.c.started_at < bindparam("b_end", type_=budget_usage.c.ended_at.type)))


def record_attempt(conn: Connection, job_id: str, now: float) -> None:
    """The job's current attempt ends now: write what it held since it began to run, inside
    the transition's own transaction. An attempt that never ran uses nothing."""
    conn.execute(_ENDED_ATTEMPT, {"b_id": job_id, "b_end": now})


class BudgetUsageStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def used(self, periods: Mapping[BudgetScope, float], now: float
             ) -> dict[BudgetScope, BudgetUse]:
        """Each scope's use in its window [now - period, now]: the ended attempts' part
        inside it, and the running attempts' since they began (or since the window's start).
        One read per budget, of its own attempts in its window, and one of those running."""
        if not periods:
            return {}
        found: dict[BudgetScope, BudgetUse] = {}
        with self.db.read() as conn:
            for scope, period in periods.items():
                row = conn.execute(_ENDED_IN_WINDOW[scope.kind], {
                    "b_name": scope.name, "b_now": now, "b_from": now - period}).one()
                found[scope] = BudgetUse(row.gpu_s or 0.0, row.cpu_s or 0.0)
            running = conn.execute(_RUNNING).all()
        for r in running:
            for scope in scopes_of(r.team, r.queue):
                period = periods.get(scope)
                if period is not None and scope.name:
                    found[scope] = found[scope] + use_of(
                        _held(r), inside_window(r.started_at, now, now, period))
        return found


def _held(row: Any) -> Resources:
    return Resources(row.cpus * row.workers, 0, row.gpus * row.workers)
