"""Dataset version rows."""

from __future__ import annotations

from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import IntegrityError

from trainyard.store.db import Database
from trainyard.store.records import DatasetRecord
from trainyard.store.schema import dataset_versions, jobs, model_versions, runs


def _record(row: object) -> DatasetRecord:
    m = row._mapping  # type: ignore[attr-defined]
    return DatasetRecord(m["name"], m["version"], m["size_bytes"], m["file_count"], m["path"],
                         m["created_at"])


class DatasetStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add(self, record: DatasetRecord) -> tuple[DatasetRecord, bool]:
        """Insert unless (name, version) exists; return the stored record and whether it is new."""
        existing = self.get(record.name, record.version)
        if existing is not None:
            return existing, False
        try:
            with self.db.write() as conn:
                conn.execute(insert(dataset_versions).values(**record.__dict__))
        except IntegrityError:
            # A concurrent registration of the same content won; its record is ours too.
            existing = self.get(record.name, record.version)
            if existing is None:
                raise
            return existing, False
        return record, True

    def get(self, name: str, version: str) -> DatasetRecord | None:
        with self.db.read() as conn:
            row = conn.execute(
                select(dataset_versions).where(
                    dataset_versions.c.name == name, dataset_versions.c.version == version
                )
            ).first()
        return _record(row) if row else None

    def list(self, name: str = "") -> list[DatasetRecord]:
        query = select(dataset_versions).order_by(
            dataset_versions.c.name, dataset_versions.c.created_at
        )
        if name:
            query = query.where(dataset_versions.c.name == name)
        with self.db.read() as conn:
            return [_record(r) for r in conn.execute(query).all()]

    def delete_unreferenced(self, name: str, version: str
                            ) -> tuple[list[tuple[str, int]], bool]:
        """Delete the version's row unless a job names it (or a model was trained on it).

        Returns (the referencing jobs as (job id, attempt; 0 before its first run), whether
        another name still holds the same content). Nothing is deleted when the list is not
        empty. One transaction: a job stored meanwhile either comes first and blocks the
        delete, or finds the version gone when it is admitted.
        """
        c = jobs.c
        with self.db.write() as conn:
            users = conn.execute(
                select(c.id, func.coalesce(runs.c.attempt, 0).label("attempt"))
                .select_from(jobs.outerjoin(runs, runs.c.job_id == c.id))
                .where(c.dataset_name == name, c.dataset_version == version)
                .order_by(c.seq, runs.c.attempt)).all()
            trained = conn.execute(select(model_versions.c.job_id, model_versions.c.attempt)
                                   .where(model_versions.c.dataset_name == name,
                                          model_versions.c.dataset_version == version)).all()
            found = [(r.id, r.attempt) for r in users]
            found += [(r.job_id, r.attempt) for r in trained if (r.job_id, r.attempt)
                      not in found]
            if found:
                return found, True
            conn.execute(delete(dataset_versions).where(dataset_versions.c.name == name,
                                                        dataset_versions.c.version == version))
            shared = conn.execute(select(func.count()).select_from(dataset_versions)
                                  .where(dataset_versions.c.version == version)).scalar_one()
        return [], bool(shared)
