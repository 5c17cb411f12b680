"""Model versions: each successful run's artifact, numbered per model name."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, func, insert, select
from sqlalchemy.exc import IntegrityError

from trainyard.store.db import Database
from trainyard.store.records import JobRecord, ModelRecord
from trainyard.store.schema import model_versions


def _record(m: Mapping[Any, Any]) -> ModelRecord:
    return ModelRecord(m["model_name"], m["version"], m["content_hash"], m["uri"],
                       m["size_bytes"], m["file_count"], m["job_id"], m["attempt"],
                       m["created_at"])


class ModelStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add_version(
        self, model_name: str, job: JobRecord, *, content_hash: str, uri: str,
        size_bytes: int, file_count: int,
    ) -> ModelRecord:
        """Record the job's artifact as the next version of model_name (idempotent per job)."""
        existing = self.for_job(job.id, job.attempt)
        if existing is not None:
            return existing
        for _ in range(5):  # another writer may take the same number on PostgreSQL
            try:
                with self.db.write() as conn:
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

