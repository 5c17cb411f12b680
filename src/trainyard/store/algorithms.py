"""Algorithm versions, numbered per name; their aliases, moved atomically with a row of
history (as model aliases are); and what uses them: the jobs pinned to each version."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from trainyard.domain.algorithms import AlgorithmVersion, DefaultResources, Source
from trainyard.domain.errors import FailedPrecondition, NotFound
from trainyard.domain.spec import AlgorithmRef
from trainyard.store.db import Database
from trainyard.store.records import AliasChange
from trainyard.store.schema import (
    algorithm_alias_history,
    algorithm_aliases,
    algorithm_versions,
    jobs,
    runs,
)

SHOWN_USERS = 20


def _version(m: Mapping[Any, Any], aliases: tuple[str, ...] = ()) -> AlgorithmVersion:
    return AlgorithmVersion(
        name=m["name"], version=m["version"], source=Source(m["source"]), image=m["image"],
        image_id=m["image_id"], code_hash=m["code_hash"],
        code_size_bytes=m["code_size_bytes"], code_file_count=m["code_file_count"],
        command=m["command"], hyperparameters=dict(m["hyperparameters"] or {}),
        resources=DefaultResources(m["cpus"], m["memory_mb"], m["gpus"]),
        description=m["description"], git_commit=m["git_commit"],
        created_at=m["created_at"], created_by=m["created_by"], aliases=aliases)


# A submit resolves its handle by one of these, built once (the statement cache's key).
_V, _A = algorithm_versions.c, algorithm_aliases.c
_BY_NAME = select(algorithm_versions).where(_V.name == bindparam("b_name"))
_BY_NUMBER = _BY_NAME.where(_V.version == bindparam("b_version"))
_BY_ALIAS = _BY_NAME.join(algorithm_aliases, (_A.name == _V.name) & (
    _A.version == _V.version)).where(_A.alias == bindparam("b_alias"))
_LATEST = _BY_NAME.order_by(_V.version.desc()).limit(1)


def _missing_kind(name_known: bool, ref: AlgorithmRef) -> str:
    """What a reference that names no version lacks: the algorithm, or its alias or
    version."""
    if not name_known:
        return "algorithm"
    return "algorithm alias" if ref.alias else "algorithm version"


def _aliases_of(aliases: Mapping[str, int], version: int) -> tuple[str, ...]:
    return tuple(sorted(a for a, v in aliases.items() if v == version))


@dataclass(frozen=True)
class AlgorithmSummary:
    name: str
    versions: int
    latest_version: int
    updated_at: float  # when its newest version was registered
    aliases: dict[str, int] = field(default_factory=dict)
    description: str = ""  # its newest version's


class AlgorithmStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add_version(self, version: AlgorithmVersion) -> AlgorithmVersion:
        """Record it as the next version of its name; the number given is ignored."""
        for _ in range(5):  # another writer may take the same number on PostgreSQL
            try:
                with self.db.write() as conn:
                    current = conn.execute(select(func.max(algorithm_versions.c.version))
                                           .where(algorithm_versions.c.name == version.name)
                                           ).scalar_one()
                    numbered = replace(version, version=(current or 0) + 1, aliases=())
                    conn.execute(insert(algorithm_versions).values(**_columns(numbered)))
                return numbered
            except IntegrityError:
                continue
        raise RuntimeError(f"could not number a new version of algorithm {version.name!r}")

    def aliases(self, name: str, conn: Connection | None = None) -> dict[str, int]:
        a = algorithm_aliases.c
        with self.db.read(conn) as c:
            rows = c.execute(select(a.alias, a.version).where(a.name == name)
                             .order_by(a.alias)).all()
        return {r.alias: r.version for r in rows}

    def versions(self, name: str) -> list[AlgorithmVersion]:
        """Every version of an algorithm, oldest first, each with its aliases."""
        v = algorithm_versions.c
        with self.db.read() as conn:
            rows = conn.execute(select(algorithm_versions).where(v.name == name)
                                .order_by(v.version)).all()
            aliases = self.aliases(name, conn)
        return [_version(r._mapping, _aliases_of(aliases, r.version)) for r in rows]

    def list(self) -> list[AlgorithmSummary]:
        v = algorithm_versions.c
        with self.db.read() as conn:
            rows = conn.execute(select(v.name, func.count(), func.max(v.version),
                                       func.max(v.created_at))
                                .group_by(v.name).order_by(v.name)).all()
            latest = {r.name: r.description for r in conn.execute(
                select(v.name, v.description).where(
                    v.id.in_(select(func.max(v.id)).group_by(v.name)))).all()}
            aliases = conn.execute(select(algorithm_aliases)).all()
        by_name: dict[str, dict[str, int]] = {}
        for a in aliases:
            by_name.setdefault(a.name, {})[a.alias] = a.version
        return [AlgorithmSummary(name, count, top, created,
                                 dict(sorted(by_name.get(name, {}).items())),
                                 latest.get(name, ""))
                for name, count, top, created in rows]

    def resolve(self, ref: AlgorithmRef, *, aliases: bool = True) -> AlgorithmVersion:
        """The version a reference names: by number, by alias, or the latest. NotFound names
        what is missing. `aliases` False leaves the version's aliases out (a submit needs
        only the version: one query)."""
        return self.resolve_first([ref], aliases=aliases)

    def resolve_first(self, refs: Sequence[AlgorithmRef], *,
                      aliases: bool = True) -> AlgorithmVersion:
        """The version the first of `refs` that names one names, on one connection (the
        sample service's `production` alias, else the latest); NotFound for the last."""
        missing: NotFound | None = None
        with self.db.read() as conn:
            for ref in refs:
                query, params = (_BY_ALIAS, {"b_alias": ref.alias}) if ref.alias else \
                    (_BY_NUMBER, {"b_version": ref.version}) if ref.version else (_LATEST, {})
                row = conn.execute(query, {"b_name": ref.name, **params}).first()
                if row is not None:
                    names = _aliases_of(self.aliases(ref.name, conn), row.version) \
                        if aliases else ()
                    return _version(row._mapping, names)
                missing = NotFound(_missing_kind(self._exists(ref, conn), ref), str(ref))
        assert missing is not None, "no reference given"
        raise missing

    def _exists(self, ref: AlgorithmRef, conn: Connection) -> bool:
        return conn.execute(select(algorithm_versions.c.id).where(
            algorithm_versions.c.name == ref.name).limit(1)).first() is not None

    def set_alias(self, name: str, alias: str, version: int, actor: str,
                  now: float | None = None) -> int | None:
        """Point the alias at this version, in one transaction with a row of its history;
        returns the version it named before (None: it is new)."""
        now = time.time() if now is None else now
        a = algorithm_aliases.c
        for _ in range(5):  # two first settings of one alias may race on PostgreSQL
            try:
                with self.db.write() as conn:
                    exists = conn.execute(select(algorithm_versions.c.id).where(
                        algorithm_versions.c.name == name,
                        algorithm_versions.c.version == version)).first()
                    if exists is None:
                        raise NotFound("algorithm version", f"{name}:{version}")
                    key = (a.name == name, a.alias == alias)
                    previous = conn.execute(select(a.version).where(*key)
                                            .with_for_update()).scalar()
                    values = {"version": version, "updated_at": now, "updated_by": actor}
                    if previous is None:
                        conn.execute(insert(algorithm_aliases).values(name=name, alias=alias,
                                                                      **values))
                    else:
                        conn.execute(update(algorithm_aliases).where(*key).values(**values))
                    conn.execute(insert(algorithm_alias_history).values(
                        name=name, alias=alias, from_version=previous, to_version=version,
                        actor=actor, time=now))
                return previous
            except IntegrityError:
                continue
        raise RuntimeError(f"could not set alias {alias!r} of algorithm {name!r}")

    def alias_history(self, name: str) -> list[AliasChange]:
        h = algorithm_alias_history.c
        with self.db.read() as conn:
            rows = conn.execute(select(algorithm_alias_history).where(h.name == name)
                                .order_by(h.id)).all()
        return [AliasChange(r.name, r.alias, r.from_version, r.to_version, r.actor, r.time)
                for r in rows]

    def jobs_of(self, name: str, version: int = 0) -> list[tuple[str, int, int]]:
        """The jobs pinned to the algorithm (one version, or any: 0), as (job id, version,
        attempt) per run, attempt 0 for a job not run yet; oldest first."""
        c = jobs.c
        query = (select(c.id, c.algorithm_version,
                        func.coalesce(runs.c.attempt, 0).label("attempt"))
                 .select_from(jobs.outerjoin(runs, runs.c.job_id == c.id))
                 .where(c.algorithm_name == name))
        if version:
            query = query.where(c.algorithm_version == version)
        with self.db.read() as conn:
            rows = conn.execute(query.order_by(c.seq, runs.c.attempt)).all()
        return [(r.id, r.algorithm_version, r.attempt) for r in rows]

    def delete_unused(self, name: str, version: int) -> tuple[AlgorithmVersion, bool]:
        """Delete a version no job is pinned to, with the aliases naming it; returns it and
        whether another version still holds its code directory. One that jobs use is refused
        (FailedPrecondition naming them). One transaction: a job stored meanwhile either comes
        first and blocks the delete, or finds the version gone when it resolves."""
        v = algorithm_versions.c
        c = jobs.c
        with self.db.write() as conn:
            row = conn.execute(select(algorithm_versions).where(
                v.name == name, v.version == version).with_for_update()).first()
            if row is None:
                raise NotFound("algorithm version", f"{name}:{version}")
            users = conn.execute(
                select(c.id, func.coalesce(runs.c.attempt, 0).label("attempt"))
                .select_from(jobs.outerjoin(runs, runs.c.job_id == c.id))
                .where(c.algorithm_name == name, c.algorithm_version == version)
                .order_by(c.seq, runs.c.attempt).limit(SHOWN_USERS + 1)).all()
            if users:
                total = conn.execute(select(func.count()).select_from(jobs).where(
                    c.algorithm_name == name, c.algorithm_version == version)).scalar_one()
                shown = ", ".join(f"{r.id}-{r.attempt}" if r.attempt else
                                  f"{r.id} (not run yet)" for r in users[:SHOWN_USERS])
                raise FailedPrecondition(
                    f"algorithm {name}:{version} is used by {total} job(s): {shown}"
                    f"{' and more' if len(users) > SHOWN_USERS else ''}; a version that jobs "
                    "ran is kept for their lineage and reproduction")
            record = _version(row._mapping)
            a = algorithm_aliases.c
            conn.execute(delete(algorithm_aliases).where(a.name == name, a.version == version))
            conn.execute(delete(algorithm_versions).where(v.id == row.id))
            shared = bool(record.code_hash) and bool(conn.execute(
                select(func.count()).select_from(algorithm_versions)
                .where(v.code_hash == record.code_hash)).scalar_one())
        return record, shared


def _columns(version: AlgorithmVersion) -> dict[str, Any]:
    return {
        "name": version.name, "version": version.version, "source": str(version.source),
        "image": version.image, "image_id": version.image_id, "code_hash": version.code_hash,
        "code_size_bytes": version.code_size_bytes,
        "code_file_count": version.code_file_count, "command": version.command,
        "hyperparameters": dict(version.hyperparameters), "cpus": version.resources.cpus,
        "memory_mb": version.resources.memory_mb, "gpus": version.resources.gpus,
        "description": version.description, "git_commit": version.git_commit,
        "created_at": version.created_at or time.time(), "created_by": version.created_by,
    }
