"""Statements built once for each shape a hot write takes, their values passed as
parameters: a job's every move writes several rows, and building each statement anew (and
the cache key SQLAlchemy derives from it) cost more CPU than the database's own work.

A shape is the set of columns a write sets; the callers' shapes are few and fixed in code,
so each cache stays small. A value that is itself SQL (`jobs.c.retries + 1`) has no
parameter to travel in: such a write is built as before (`is_plain`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, Table, Update, bindparam, select, update

from trainyard.store.schema import jobs, runs

SHAPES = 64  # per cache: far more than the shapes the code writes


def is_plain(fields: Mapping[str, Any]) -> bool:
    """Whether every value is data (not SQL), so the write may use a prepared statement."""
    return not any(isinstance(value, ColumnElement) for value in fields.values())


def values_of(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters that carry `fields` into a statement of their shape."""
    return {f"v_{name}": value for name, value in fields.items()}


def _set(table: Table, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: bindparam(f"v_{name}", type_=table.c[name].type) for name in names}


@lru_cache(maxsize=SHAPES)
def job_move(names: tuple[str, ...], unless_cancelled: bool) -> Update:
    """A job's compare-and-set to a new state (b_id, b_expected, b_target, b_now), setting
    the columns `names` as well (values_of)."""
    moved = update(jobs).where(jobs.c.id == bindparam("b_id"),
                               jobs.c.state == bindparam("b_expected"))
    if unless_cancelled:
        moved = moved.where(jobs.c.cancel_requested.is_(False))
    return moved.values(state=bindparam("b_target"), updated_at=bindparam("b_now"),
                        **_set(jobs, names))


@lru_cache(maxsize=SHAPES)
def current_run_update(names: tuple[str, ...]) -> Update:
    """The columns `names` of the job's (b_id) current attempt's run."""
    current = select(jobs.c.attempt).where(jobs.c.id == bindparam("b_id")).scalar_subquery()
    return update(runs).where(runs.c.job_id == bindparam("b_id"),
                              runs.c.attempt == current).values(**_set(runs, names))
