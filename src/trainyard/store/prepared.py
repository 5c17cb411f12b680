"""Statements built once for each shape a hot write or read takes, their values passed as
parameters: a job's every move writes several rows, and a client that polls its jobs lists
them several times a second; building each statement anew (and the cache key SQLAlchemy
derives from it) cost more CPU than the database's own work.

A shape is the set of columns a write sets, or what a read filters by; the callers' shapes
are few and fixed in code, so each cache stays small. A value that is itself SQL
(`jobs.c.retries + 1`) has no parameter to travel in: such a write is built as before
(`is_plain`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Select,
    Table,
    Update,
    and_,
    bindparam,
    exists,
    select,
    union_all,
    update,
)

from trainyard.store.schema import job_labels, jobs, runs

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


# How a listing filters by state: one state, several (an IN list), or any.
ONE_STATE, STATES, ANY_STATE = "one", "many", "any"


@lru_cache(maxsize=SHAPES)
def job_listing(states: str, queue: bool, owners: bool, labels: int, after: bool,
                seq_only: bool, state_param: str = "b_state") -> Select[Any]:
    """The newest b_limit jobs, newest first, in the state b_state (ONE_STATE; the parameter
    `state_param`), one of b_states (STATES) or any, and, where asked, of the queue b_queue,
    of one of b_owners, with each label b_label_key_<i> = b_label_value_<i> (i < labels),
    and before the seq b_after; their seqs alone (seq_only) or every column."""
    query = select(jobs.c.seq if seq_only else jobs).order_by(jobs.c.seq.desc()).limit(
        bindparam("b_limit"))
    if states == ONE_STATE:
        query = query.where(jobs.c.state == bindparam(state_param))
    elif states == STATES:
        query = query.where(jobs.c.state.in_(bindparam("b_states", expanding=True)))
    if queue:
        query = query.where(jobs.c.queue == bindparam("b_queue"))
    if owners:
        query = query.where(jobs.c.owner.in_(bindparam("b_owners", expanding=True)))
    for i in range(labels):
        query = query.where(exists().where(and_(
            job_labels.c.job_id == jobs.c.id,
            job_labels.c.key == bindparam(f"b_label_key_{i}"),
            job_labels.c.value == bindparam(f"b_label_value_{i}"))))
    if after:
        query = query.where(jobs.c.seq < bindparam("b_after"))
    return query


@lru_cache(maxsize=SHAPES)
def newest_seqs_by_state(count: int, queue: bool, owners: bool, labels: int,
                         after: bool) -> CompoundSelect:
    """In one statement, for each of `count` states b_state_<i>, the seqs of its newest
    b_limit jobs that pass the rest of the filter (as job_listing): each state read along
    its own range of the (state, seq) index, so that no state's jobs are all sorted."""
    arms = [job_listing(ONE_STATE, queue, owners, labels, after, True, f"b_state_{i}")
            .subquery(f"state_{i}") for i in range(count)]
    return union_all(*(select(arm.c.seq) for arm in arms))


# Every column of the jobs of the seqs b_seqs still in one of the states b_states, newest
# first: a page of a listing by several states.
JOBS_BY_SEQ = select(jobs).where(jobs.c.seq.in_(bindparam("b_seqs", expanding=True)),
                                 jobs.c.state.in_(bindparam("b_states", expanding=True))
                                 ).order_by(jobs.c.seq.desc())
