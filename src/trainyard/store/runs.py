"""Runs: one row per attempt of a job, kept in step with the job by its transitions, and the
queries that find, filter and sort them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Float,
    Select,
    and_,
    bindparam,
    case,
    exists,
    func,
    insert,
    not_,
    or_,
    select,
    update,
)

from trainyard.domain.runs import ALGORITHM_LABEL, MetricThreshold, Op
from trainyard.domain.states import ACTIVE_STATES, JobState
from trainyard.store import driver_writes, prepared
from trainyard.store.budget_usage import record_attempt
from trainyard.store.db import Database
from trainyard.store.records import JobRecord, RunRecord
from trainyard.store.schema import job_labels, jobs, metrics, run_final_metrics, runs

# An attempt ends when its process does: PREEMPTED ends it too (the job waits again).
ENDS_ATTEMPT = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED,
                          JobState.PREEMPTED})
MAX_SERIES_POINTS = 100_000

_RUN_COLUMNS = (
    runs.c.id.label("run_seq"), runs.c.attempt.label("run_attempt"),
    runs.c.state.label("run_state"), runs.c.executor.label("run_executor"),
    runs.c.pool.label("run_pool"), runs.c.handle.label("run_handle"),
    runs.c.gpu_ids.label("run_gpu_ids"), runs.c.image_id.label("run_image_id"),
    runs.c.exit_code.label("run_exit_code"), runs.c.message.label("run_message"),
    runs.c.launched_at.label("run_launched_at"), runs.c.started_at.label("run_started_at"),
    runs.c.ended_at.label("run_ended_at"),
    runs.c.dropped_metric_points.label("run_dropped_metric_points"),
    runs.c.notice_at.label("run_notice_at"), runs.c.checkpoint_at.label("run_checkpoint_at"),
    runs.c.work_lost_s.label("run_work_lost_s"),
)
_SELECT_RUNS = select(jobs, *_RUN_COLUMNS).select_from(
    runs.join(jobs, jobs.c.id == runs.c.job_id))
_f = run_final_metrics.c


# What a move writes on its job's current run, built once (store/prepared.py).
_NEW_RUN_FIELDS = ("attempt", "executor", "pool", "handle", "gpu_ids")
_NEW_RUN_OF = select(*(jobs.c[name] for name in _NEW_RUN_FIELDS)).where(
    jobs.c.id == bindparam("b_id"))
_INSERT_RUN = insert(runs)
_CURRENT_ATTEMPT = select(jobs.c.attempt).where(jobs.c.id == bindparam("b_id")) \
    .scalar_subquery()
_RAN = func.coalesce(bindparam("b_now", type_=Float) - select(runs.c.started_at).where(
    runs.c.job_id == bindparam("b_id"), runs.c.attempt == _CURRENT_ATTEMPT).scalar_subquery(),
    0.0)
# The attempt's time running counts towards the service the job has attained.
_ADD_HELD = update(jobs).where(jobs.c.id == bindparam("b_id")).values(
    held_s=jobs.c.held_s + case((_RAN > 0.0, _RAN), else_=0.0))


def record_run(conn: Connection, job_id: str, expected: JobState, target: JobState,
               now: float, fields: Mapping[str, Any]) -> None:
    """Keep the job's current run in step with a transition, in the transition's own
    transaction: LAUNCHING starts a run; each later move of the attempt updates it."""
    if target is JobState.LAUNCHING:
        # The move just wrote them; read back only where it did not write them all.
        launched = {name: fields[name] for name in _NEW_RUN_FIELDS if name in fields}
        if len(launched) < len(_NEW_RUN_FIELDS) or not prepared.is_plain(launched):
            launched = conn.execute(_NEW_RUN_OF, {"b_id": job_id}).one()._asdict()
        driver_writes.execute(conn, _INSERT_RUN, {
            "job_id": job_id, "state": target.value, **launched, "image_id": "",
            "exit_code": None, "message": "", "launched_at": now, "started_at": None,
            "ended_at": None})
        return
    if expected not in ACTIVE_STATES:
        return  # a waiting or preempted job's move: its last run ended already
    values: dict[str, Any] = {"state": target.value}
    if target is JobState.RUNNING:
        values["started_at"] = fields.get("started_at", now)
    if target in ENDS_ATTEMPT:
        values["ended_at"] = now
    for column in ("exit_code", "message"):
        if column in fields:
            values[column] = fields[column]
    if target in ENDS_ATTEMPT:
        driver_writes.execute(conn, _ADD_HELD, {"b_id": job_id, "b_now": now})
        record_attempt(conn, job_id, now)  # and towards the budgets over time
    driver_writes.execute(conn, prepared.current_run_update(tuple(values)),
                          {"b_id": job_id, **prepared.values_of(values)})


@dataclass(frozen=True)
class RunFilter:
    job_id: str = ""
    dataset_name: str = ""
    dataset_version: str = ""  # a prefix of the hash
    algorithm: str = ""
    image: str = ""  # the reference submitted, or the image id (or a prefix of its hash)
    labels: Mapping[str, str] | None = None
    states: Sequence[JobState] = ()
    thresholds: Sequence[MetricThreshold] = ()
    owners: frozenset[str] | None = None  # None: anyone's runs


def _final_of_run(key: str, finals: Any = run_final_metrics) -> ColumnElement[bool]:
    f = finals.c
    return and_(f.job_id == runs.c.job_id, f.attempt == runs.c.attempt, f.key == key)


def final_value(key: str) -> Any:
    """The run's last value of a metric, as a correlated scalar subquery (of its own alias,
    so that a query on the finals themselves may hold it)."""
    own = run_final_metrics.alias()
    return select(own.c.value).where(_final_of_run(key, own)).scalar_subquery()


def _compare(left: Any, op: Op, value: float) -> ColumnElement[bool]:
    compared: ColumnElement[bool] = {
        Op.GE: left >= value, Op.LE: left <= value, Op.GT: left > value,
        Op.LT: left < value, Op.EQ: left == value, Op.NE: left != value}[op]
    return compared


def _label(key: str, value: str | None = None) -> Any:
    cond = [job_labels.c.job_id == jobs.c.id, job_labels.c.key == key]
    if value is not None:
        cond.append(job_labels.c.value == value)
    return exists().where(and_(*cond))


def _starts_with(column: Any, prefix: str) -> ColumnElement[bool]:
    # substr, not LIKE: names may hold '_', which LIKE reads as a wildcard.
    return func.substr(column, 1, len(prefix)) == prefix


def _filtered(query: Select[Any], flt: RunFilter) -> Select[Any]:
    c = jobs.c
    if flt.job_id:
        query = query.where(runs.c.job_id == flt.job_id)
    if flt.owners is not None:
        query = query.where(c.owner.in_(sorted(flt.owners)))
    if flt.states:
        query = query.where(runs.c.state.in_([s.value for s in flt.states]))
    if flt.dataset_name:
        query = query.where(c.dataset_name == flt.dataset_name)
    if flt.dataset_version:
        query = query.where(_starts_with(c.dataset_version, flt.dataset_version))
    if flt.algorithm:
        # A run's algorithm (domain.runs.algorithm_of): the registered one its job is pinned
        # to, exactly; only a job pinned to none is matched by its label, else its name.
        name = flt.algorithm
        query = query.where(or_(
            c.algorithm_name == name,
            and_(c.algorithm_name.is_(None), or_(
                _label(ALGORITHM_LABEL, name),
                and_(not_(_label(ALGORITHM_LABEL)),
                     or_(c.name == name, _starts_with(c.name, f"{name}-")))))))
    if flt.image:
        image = flt.image
        choices = [c.image == image, runs.c.image_id == image,
                   runs.c.image_id == f"sha256:{image}"]
        if len(image) >= 12 and all(ch in "0123456789abcdef" for ch in image):
            choices.append(_starts_with(runs.c.image_id, f"sha256:{image}"))
        query = query.where(or_(*choices))
    for key, value in (flt.labels or {}).items():
        query = query.where(_label(key, value))
    for t in flt.thresholds:
        query = query.where(_compare(final_value(t.key), t.op, t.value))
    return query


def _by_metric(conn: Connection, flt: RunFilter, key: str, descending: bool, limit: int,
               offset: int) -> list[Any]:
    """`limit` runs from `offset` in the order of their final value of `key`, ties newest
    first, then those without it, newest first. The runs with it are read in the order of the
    (key, value) index, so a page costs its offset and size, not every run's points; only a
    page past all of them counts them, to know where those without it begin."""
    value = _f.value.desc() if descending else _f.value.asc()
    ranked = _filtered(select(jobs, *_RUN_COLUMNS).select_from(
        run_final_metrics.join(runs, _final_of_run(key)).join(jobs, jobs.c.id == runs.c.job_id)),
        flt).where(_f.key == key)
    rows = list(conn.execute(ranked.order_by(value, runs.c.id.desc()).limit(limit)
                             .offset(offset)).all())
    if len(rows) == limit:
        return rows
    ranked_count = offset + len(rows) if rows or not offset else conn.execute(
        select(func.count()).select_from(ranked.subquery())).scalar_one()
    rest = _filtered(_SELECT_RUNS, flt).where(~exists().where(_final_of_run(key)))
    return rows + list(conn.execute(rest.order_by(runs.c.id.desc())
                                    .limit(limit - len(rows))
                                    .offset(max(0, offset - ranked_count))).all())


class RunStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, job_id: str, attempt: int | None = None,
            conn: Connection | None = None) -> RunRecord | None:
        """One run; attempt None: the job's latest."""
        query = _SELECT_RUNS.where(runs.c.job_id == job_id)
        query = query.where(runs.c.attempt == attempt) if attempt is not None else \
            query.order_by(runs.c.attempt.desc()).limit(1)
        with self.db.read(conn) as c:
            row = c.execute(query).first()
        return RunRecord.from_row(JobRecord.from_row(row), row) if row else None

    def many(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], RunRecord]:
        wanted = set(keys)
        if not wanted:
            return {}
        query = _SELECT_RUNS.where(runs.c.job_id.in_(sorted({j for j, _ in wanted})))
        with self.db.read() as conn:
            rows = conn.execute(query).all()
        found = (RunRecord.from_row(JobRecord.from_row(r), r) for r in rows)
        return {(r.job.id, r.attempt): r for r in found if (r.job.id, r.attempt) in wanted}

    def page(self, flt: RunFilter, *, limit: int, offset: int = 0, sort_metric: str = "",
             descending: bool = False) -> tuple[list[RunRecord], bool]:
        """A page of runs, newest first or by a metric's final value (runs without it
        last, newest first); returns it and whether more follow."""
        with self.db.read() as conn:
            if sort_metric:
                rows = _by_metric(conn, flt, sort_metric, descending, limit + 1, offset)
            else:
                rows = conn.execute(_filtered(_SELECT_RUNS, flt).order_by(runs.c.id.desc())
                                    .limit(limit + 1).offset(offset)).all()
        records = [RunRecord.from_row(JobRecord.from_row(r), r) for r in rows[:limit]]
        return records, len(rows) > limit

    def final_metrics(self, keys: Iterable[tuple[str, int]]
                      ) -> dict[tuple[str, int], dict[str, tuple[float, int | None]]]:
        """Each run's last value of every metric, with its step."""
        wanted = set(keys)
        out: dict[tuple[str, int], dict[str, tuple[float, int | None]]] = {k: {} for k in wanted}
        if not wanted:
            return out
        with self.db.read() as conn:
            rows = conn.execute(select(_f.job_id, _f.attempt, _f.key, _f.value, _f.step)
                                .where(_f.job_id.in_(sorted({j for j, _ in wanted})))).all()
        for r in rows:
            if (r.job_id, r.attempt) in out:
                out[(r.job_id, r.attempt)][r.key] = (r.value, r.step)
        return out

    def series(self, job_id: str, attempt: int, limit: int = MAX_SERIES_POINTS
               ) -> tuple[dict[str, list[tuple[int | None, float, float]]], bool]:
        """Every point of every metric of one run, in the order written: key -> [(step,
        value, time)]; and whether the limit cut it short."""
        m = metrics.c
        with self.db.read() as conn:
            rows = conn.execute(select(m.key, m.step, m.value, m.time)
                                .where(m.job_id == job_id, m.attempt == attempt)
                                .order_by(m.id).limit(limit + 1)).all()
        out: dict[str, list[tuple[int | None, float, float]]] = {}
        for r in rows[:limit]:
            out.setdefault(r.key, []).append((r.step, r.value, r.time))
        return out, len(rows) > limit

    def reproductions(self, run_id: str) -> list[str]:
        """The jobs submitted to reproduce this run, oldest first."""
        with self.db.read() as conn:
            rows = conn.execute(select(jobs.c.id).where(jobs.c.reproduced_from == run_id)
                                .order_by(jobs.c.seq)).all()
        return [r.id for r in rows]

    def using_dataset(self, name: str, version: str,
                      owners: frozenset[str] | None = None) -> list[tuple[str, int]]:
        """(job id, attempt) of every job that names this dataset version, oldest first;
        attempt 0 for a job with no run yet."""
        c = jobs.c
        query = (select(c.id, func.coalesce(runs.c.attempt, 0).label("attempt"))
                 .select_from(jobs.outerjoin(runs, runs.c.job_id == c.id))
                 .where(c.dataset_name == name, c.dataset_version == version)
                 .order_by(c.seq, runs.c.attempt))
        if owners is not None:
            query = query.where(c.owner.in_(sorted(owners)))
        with self.db.read() as conn:
            return [(r.id, r.attempt) for r in conn.execute(query).all()]

    def dataset_usage(self, owners: frozenset[str] | None = None, name: str = ""
                      ) -> dict[tuple[str, str], list[str]]:
        """(dataset name, version) -> the ids of the runs that used it, oldest first."""
        c = jobs.c
        query = (select(c.dataset_name, c.dataset_version, runs.c.job_id, runs.c.attempt)
                 .select_from(runs.join(jobs, c.id == runs.c.job_id))
                 .where(c.dataset_name.is_not(None)).order_by(runs.c.id))
        if name:
            query = query.where(c.dataset_name == name)
        if owners is not None:
            query = query.where(c.owner.in_(sorted(owners)))
        out: dict[tuple[str, str], list[str]] = {}
        with self.db.read() as conn:
            for r in conn.execute(query).all():
                out.setdefault((r.dataset_name, r.dataset_version), []).append(
                    f"{r.job_id}-{r.attempt}")
        return out
