"""Sweeps as one unit: their rows (settings and status), their trials, what the trials used
and their objective's curves. Pipelines share the table (kind); they have no rule here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, insert, or_, select, update

from trainyard.domain.early_stopping import (
    EarlyStop,
    Objective,
    check_early_stop,
)
from trainyard.domain.pipeline import SWEEP, group_title
from trainyard.domain.states import JobState
from trainyard.domain.sweep_control import SweepBudget, SweepStatus, SweepUse
from trainyard.store.db import Database
from trainyard.store.records import JobRecord
from trainyard.store.schema import jobs, metrics, runs, sweeps


@dataclass(frozen=True)
class SweepRecord:
    id: str
    name: str
    owner: str
    max_parallel: int
    created_at: float
    objective: Objective | None = None
    early_stop: EarlyStop | None = None
    budget: SweepBudget = SweepBudget()
    status: SweepStatus = SweepStatus.OPEN
    status_message: str = ""

    @property
    def title(self) -> str:
        return group_title(SWEEP, self.name)

    @classmethod
    def from_row(cls, row: Any) -> SweepRecord:
        m = row._mapping
        objective = Objective(m["objective"], m["direction"]) if m["objective"] else None
        rule = None
        if m["early_stop"] and objective is not None:
            rule = check_early_stop(m["early_stop"], objective, m["min_steps"], m["reduction"])
        try:
            status = SweepStatus(m["status"])
        except ValueError:
            status = SweepStatus.OPEN  # lenient: a status this version does not know
        return cls(m["id"], m["name"], m["owner"], m["max_parallel"], m["created_at"],
                   objective, rule, SweepBudget(m["max_trials"], m["max_gpu_hours"],
                                                m["max_cpu_hours"]),
                   status, m["status_message"])


def sweep_columns(objective: Objective | None, rule: EarlyStop | None,
                  budget: SweepBudget) -> dict[str, Any]:
    """A new sweep's settings as its row's columns."""
    return {
        "objective": objective.metric if objective else "",
        "direction": objective.direction if objective else "",
        "early_stop": rule.rule if rule else "",
        "min_steps": rule.min_steps if rule else 0,
        "reduction": rule.reduction if rule and rule.rule == "asha" else 0,
        "max_trials": budget.max_trials, "max_gpu_hours": budget.max_gpu_hours,
        "max_cpu_hours": budget.max_cpu_hours,
    }


class SweepStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add(self, sweep_id: str, name: str, owner: str, max_parallel: int, now: float,
            settings: Mapping[str, Any]) -> None:
        with self.db.write() as conn:
            conn.execute(insert(sweeps).values(id=sweep_id, name=name, owner=owner,
                                               max_parallel=max_parallel, created_at=now,
                                               kind=SWEEP, **settings))

    def get(self, sweep_id: str) -> SweepRecord | None:
        if len(sweep_id) > 32 or "\x00" in sweep_id:
            return None  # could never have been issued
        with self.db.read() as conn:
            row = conn.execute(select(sweeps).where(sweeps.c.id == sweep_id,
                                                    sweeps.c.kind == SWEEP)).first()
        return SweepRecord.from_row(row) if row else None

    def of(self, sweep_ids: Iterable[str]) -> dict[str, SweepRecord]:
        """Of these groups, the sweeps (pipelines are left out)."""
        wanted = sorted({s for s in sweep_ids if s})
        if not wanted:
            return {}
        with self.db.read() as conn:
            rows = conn.execute(select(sweeps).where(sweeps.c.id.in_(wanted),
                                                     sweeps.c.kind == SWEEP)).all()
        return {r.id: SweepRecord.from_row(r) for r in rows}

    def newest(self, owners: frozenset[str] | None, *, limit: int,
             before: tuple[float, str] | None = None) -> list[SweepRecord]:
        """Newest first; `owners` None: anyone's; `before`: only those after this (created_at,
        id) in that order, so that sweeps made in the same instant are neither lost nor
        repeated across pages."""
        query = select(sweeps).where(sweeps.c.kind == SWEEP).order_by(
            sweeps.c.created_at.desc(), sweeps.c.id.desc()).limit(limit)
        if owners is not None:
            query = query.where(sweeps.c.owner.in_(sorted(owners)))
        if before is not None:
            at, sweep_id = before
            query = query.where(or_(sweeps.c.created_at < at, and_(
                sweeps.c.created_at == at, sweeps.c.id < sweep_id)))
        with self.db.read() as conn:
            rows = conn.execute(query).all()
        return [SweepRecord.from_row(r) for r in rows]

    def set_status(self, sweep_id: str, status: SweepStatus, message: str, *,
                   unless: Iterable[SweepStatus] = ()) -> bool:
        """False, writing nothing, when the sweep is in one of `unless`."""
        query = update(sweeps).where(sweeps.c.id == sweep_id)
        skip = [s.value for s in unless]
        if skip:
            query = query.where(sweeps.c.status.not_in(skip))
        with self.db.write() as conn:
            result = conn.execute(query.values(status=status.value, status_message=message))
        return bool(result.rowcount)

    def trials(self, sweep_id: str) -> list[JobRecord]:
        with self.db.read() as conn:
            rows = conn.execute(select(jobs).where(jobs.c.sweep_id == sweep_id)
                                .order_by(jobs.c.seq)).all()
        return [JobRecord.from_row(r) for r in rows]

    def state_counts(self, sweep_ids: Iterable[str]) -> dict[str, dict[str, int]]:
        """sweep id -> state -> trials, with "STOPPED_EARLY" counted apart as well."""
        wanted = sorted(set(sweep_ids))
        out: dict[str, dict[str, int]] = {s: {} for s in wanted}
        if not wanted:
            return out
        c = jobs.c
        with self.db.read() as conn:
            rows = conn.execute(select(c.sweep_id, c.state, c.end_reason, func.count())
                                .where(c.sweep_id.in_(wanted))
                                .group_by(c.sweep_id, c.state, c.end_reason)).all()
        for sweep_id, state, end_reason, count in rows:
            counts = out[sweep_id]
            counts[state] = counts.get(state, 0) + count
            if end_reason:
                counts[end_reason] = counts.get(end_reason, 0) + count
        return out

    def use(self, sweep_ids: Iterable[str], now: float) -> dict[str, SweepUse]:
        """What each sweep's trials used so far: trials started, and GPU- and CPU-seconds
        of every attempt that ran (a running one until `now`)."""
        wanted = sorted(set(sweep_ids))
        if not wanted:
            return {}
        c = jobs.c
        ran = func.coalesce(runs.c.ended_at, now) - runs.c.started_at
        with self.db.read() as conn:
            launched: dict[str, int] = dict(conn.execute(
                select(c.sweep_id, func.count()).where(c.sweep_id.in_(wanted), c.attempt > 0)
                .group_by(c.sweep_id)).all())
            held = {r.sweep_id: (r.gpu_s or 0.0, r.cpu_s or 0.0) for r in conn.execute(
                select(c.sweep_id, func.sum(ran * c.gpus * c.workers).label("gpu_s"),
                       func.sum(ran * c.cpus * c.workers).label("cpu_s"))
                .select_from(runs.join(jobs, runs.c.job_id == c.id))
                .where(c.sweep_id.in_(wanted), runs.c.started_at.is_not(None))
                .group_by(c.sweep_id)).all()}
        return {s: SweepUse(int(launched.get(s, 0)), max(0.0, held.get(s, (0.0, 0.0))[0]),
                            max(0.0, held.get(s, (0.0, 0.0))[1])) for s in wanted}

    def succeeded(self, sweep_id: str) -> set[str]:
        """Its trials that finished by themselves."""
        c = jobs.c
        with self.db.read() as conn:
            rows = conn.execute(select(c.id).where(
                c.sweep_id == sweep_id, c.state == JobState.SUCCEEDED.value)).all()
        return {r.id for r in rows}

    def waiting(self, sweep_id: str, *, unstarted: bool) -> list[str]:
        """Its waiting trials (`unstarted`: only those that never started), in submit
        order."""
        c = jobs.c
        query = select(c.id).where(c.sweep_id == sweep_id, c.state == JobState.WAITING.value)
        if unstarted:
            query = query.where(c.attempt == 0)
        with self.db.read() as conn:
            rows = conn.execute(query.order_by(c.seq)).all()
        return [r.id for r in rows]

    def curves(self, sweep_id: str, key: str, job_id: str = ""
               ) -> dict[str, list[tuple[int, float]]]:
        """Each trial's points of metric `key` that carry a step, in the order written (with
        `job_id`, that trial's alone)."""
        query = (select(metrics.c.job_id, metrics.c.step, metrics.c.value)
                 .select_from(metrics.join(jobs, metrics.c.job_id == jobs.c.id))
                 .where(jobs.c.sweep_id == sweep_id, metrics.c.key == key,
                        metrics.c.step.is_not(None)).order_by(metrics.c.id))
        if job_id:
            query = query.where(metrics.c.job_id == job_id)
        with self.db.read() as conn:
            rows = conn.execute(query).all()
        out: dict[str, list[tuple[int, float]]] = {}
        for job_id, step, value in rows:
            out.setdefault(job_id, []).append((int(step), float(value)))
        return out

    def latest_metrics(self, job_ids: Iterable[str]) -> dict[str, dict[str, float]]:
        """The newest value of each metric of each of these jobs."""
        wanted = sorted(set(job_ids))
        if not wanted:
            return {}
        newest = select(func.max(metrics.c.id)).where(metrics.c.job_id.in_(wanted)).group_by(
            metrics.c.job_id, metrics.c.key)
        with self.db.read() as conn:
            rows = conn.execute(select(metrics.c.job_id, metrics.c.key, metrics.c.value)
                                .where(metrics.c.id.in_(newest))).all()
        out: dict[str, dict[str, float]] = {}
        for job_id, key, value in rows:
            out.setdefault(job_id, {})[key] = float(value)
        return out
