"""Model versions: each successful run's artifact, numbered per model name; and aliases,
stable handles on one version each, moved atomically with a row of history."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Connection, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from trainyard.domain.errors import NotFound
from trainyard.domain.runs import ModelRef
from trainyard.domain.spec import DatasetRef
from trainyard.store.db import Database
from trainyard.store.records import AliasChange, JobRecord, ModelRecord
from trainyard.store.schema import model_alias_history, model_aliases, model_versions


def _record(m: Mapping[Any, Any], aliases: tuple[str, ...] = ()) -> ModelRecord:
    dataset = DatasetRef(m["dataset_name"], m["dataset_version"]) if m["dataset_name"] \
        else None
    return ModelRecord(m["model_name"], m["version"], m["content_hash"], m["uri"],
                       m["size_bytes"], m["file_count"], m["job_id"], m["attempt"],
                       m["created_at"], dataset, dict(m["hyperparameters"] or {}),
                       m["command"], aliases)


@dataclass(frozen=True)
class ModelSummary:
    name: str
    versions: int
    latest_version: int
    updated_at: float  # when its newest version was made
    aliases: dict[str, int] = field(default_factory=dict)


class ModelStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add_version(
        self, model_name: str, job: JobRecord, *, content_hash: str, uri: str,
        size_bytes: int, file_count: int, synced: bool = True,
    ) -> ModelRecord:
        """Record the job's artifact as the next version of model_name (idempotent per job).
        `synced=False` (Database.write) where a synced commit follows that a power cut
        would undo with it, and the files are collected again (a job's final state)."""
        existing = self.for_job(job.id, job.attempt)
        if existing is not None:
            return existing
        for _ in range(5):  # another writer may take the same number on PostgreSQL
            try:
                with self.db.write(synced=synced) as conn:
                    current = conn.execute(
                        select(func.max(model_versions.c.version)).where(
                            model_versions.c.model_name == model_name
                        )
                    ).scalar_one()
                    values = dict(
                        model_name=model_name, version=(current or 0) + 1,
                        content_hash=content_hash, uri=uri, size_bytes=size_bytes,
                        file_count=file_count, job_id=job.id, attempt=job.attempt,
                        dataset_name=job.spec.dataset.name if job.spec.dataset else None,
                        dataset_version=job.spec.dataset.version if job.spec.dataset else None,
                        hyperparameters=dict(job.spec.hyperparameters),
                        command=job.spec.command, created_at=time.time(),
                    )
                    conn.execute(insert(model_versions).values(**values))
                return _record(values)
            except IntegrityError:
                continue
        raise RuntimeError(f"could not number a new version of model {model_name!r}")

    def for_job(self, job_id: str, attempt: int | None = None,
                conn: Connection | None = None) -> ModelRecord | None:
        query = select(model_versions).where(model_versions.c.job_id == job_id)
        if attempt is not None:
            query = query.where(model_versions.c.attempt == attempt)
        with self.db.read(conn) as c:
            row = c.execute(query.order_by(model_versions.c.id.desc())).first()
        return _record(row._mapping) if row else None


    # --- models, versions and aliases -----------------------------------------------------

    def list_models(self) -> list[ModelSummary]:
        mv = model_versions.c
        with self.db.read() as conn:
            rows = conn.execute(select(mv.model_name, func.count(), func.max(mv.version),
                                       func.max(mv.created_at))
                                .group_by(mv.model_name).order_by(mv.model_name)).all()
            aliases = conn.execute(select(model_aliases)).all()
        by_model: dict[str, dict[str, int]] = {}
        for a in aliases:
            by_model.setdefault(a.model_name, {})[a.alias] = a.version
        return [ModelSummary(name, count, latest, created, dict(sorted(
                    by_model.get(name, {}).items())))
                for name, count, latest, created in rows]

    def aliases(self, name: str, conn: Connection | None = None) -> dict[str, int]:
        with self.db.read(conn) as c:
            rows = c.execute(select(model_aliases.c.alias, model_aliases.c.version)
                             .where(model_aliases.c.model_name == name)
                             .order_by(model_aliases.c.alias)).all()
        return {r.alias: r.version for r in rows}

    def versions(self, name: str) -> list[ModelRecord]:
        """Every version of a model, oldest first, each with its aliases."""
        with self.db.read() as conn:
            rows = conn.execute(select(model_versions)
                                .where(model_versions.c.model_name == name)
                                .order_by(model_versions.c.version)).all()
            aliases = self.aliases(name, conn)
        return [_record(r._mapping, _aliases_of(aliases, r.version)) for r in rows]

    def resolve(self, ref: ModelRef) -> ModelRecord:
        """The version a reference names: by number, by alias, or the latest."""
        mv = model_versions.c
        with self.db.read() as conn:
            version = ref.version
            if ref.alias:
                found = conn.execute(select(model_aliases.c.version).where(
                    model_aliases.c.model_name == ref.name,
                    model_aliases.c.alias == ref.alias)).scalar()
                if found is None:
                    raise NotFound("model alias", str(ref))
                version = found
            query = select(model_versions).where(mv.model_name == ref.name)
            query = query.where(mv.version == version) if version else \
                query.order_by(mv.version.desc()).limit(1)
            row = conn.execute(query).first()
            if row is None:
                raise NotFound("model version" if version else "model", str(ref))
            aliases = self.aliases(ref.name, conn)
        return _record(row._mapping, _aliases_of(aliases, row.version))

    def set_alias(self, name: str, alias: str, version: int, actor: str,
                  now: float | None = None) -> int | None:
        """Point the alias at this version, in one transaction with a row of its history;
        returns the version it named before (None: it is new)."""
        now = time.time() if now is None else now
        for _ in range(5):  # two first settings of one alias may race on PostgreSQL
            try:
                with self.db.write() as conn:
                    exists = conn.execute(select(model_versions.c.id).where(
                        model_versions.c.model_name == name,
                        model_versions.c.version == version)).first()
                    if exists is None:
                        raise NotFound("model version", f"{name}:{version}")
                    key = (model_aliases.c.model_name == name, model_aliases.c.alias == alias)
                    previous = conn.execute(select(model_aliases.c.version).where(*key)
                                            .with_for_update()).scalar()
                    values = {"version": version, "updated_at": now, "updated_by": actor}
                    if previous is None:
                        conn.execute(insert(model_aliases).values(model_name=name, alias=alias,
                                                                  **values))
                    else:
                        conn.execute(update(model_aliases).where(*key).values(**values))
                    conn.execute(insert(model_alias_history).values(
                        model_name=name, alias=alias, from_version=previous,
                        to_version=version, actor=actor, time=now))
                return previous
            except IntegrityError:
                continue
        raise RuntimeError(f"could not set alias {alias!r} of model {name!r}")

    def alias_history(self, name: str) -> list[AliasChange]:
        h = model_alias_history.c
        with self.db.read() as conn:
            rows = conn.execute(select(model_alias_history).where(h.model_name == name)
                                .order_by(h.id)).all()
        return [AliasChange(r.model_name, r.alias, r.from_version, r.to_version, r.actor, r.time)
                for r in rows]

    def trained_on(self, dataset_name: str, dataset_version: str) -> list[ModelRecord]:
        """Every model version trained on this dataset version, oldest first."""
        mv = model_versions.c
        with self.db.read() as conn:
            rows = conn.execute(select(model_versions).where(
                mv.dataset_name == dataset_name, mv.dataset_version == dataset_version)
                .order_by(mv.id)).all()
            names = {r.model_name for r in rows}
            aliases = {n: self.aliases(n, conn) for n in names}
        return [_record(r._mapping, _aliases_of(aliases[r.model_name], r.version))
                for r in rows]

    def for_runs(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ModelRecord]:
        """The model version each of these runs made, with its aliases, in two queries."""
        wanted = set(keys)
        if not wanted:
            return {}
        mv = model_versions.c
        with self.db.read() as conn:
            rows = conn.execute(select(model_versions).where(
                mv.job_id.in_(sorted({j for j, _ in wanted}))).order_by(mv.id)).all()
            rows = [r for r in rows if (r.job_id, r.attempt) in wanted]
            names = sorted({r.model_name for r in rows})
            aliases: dict[str, dict[str, int]] = {n: {} for n in names}
            if names:
                for a in conn.execute(select(model_aliases).where(
                        model_aliases.c.model_name.in_(names))).all():
                    aliases[a.model_name][a.alias] = a.version
        return {(r.job_id, r.attempt): _record(r._mapping, _aliases_of(
            aliases[r.model_name], r.version)) for r in rows}

    def with_aliases(self, model: ModelRecord) -> ModelRecord:
        return replace(model, aliases=_aliases_of(self.aliases(model.model_name),
                                                  model.version))


def _aliases_of(aliases: Mapping[str, int], version: int) -> tuple[str, ...]:
    return tuple(sorted(a for a, v in aliases.items() if v == version))
