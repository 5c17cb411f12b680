"""Dataset version rows."""

from __future__ import annotations

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from trainyard.store.db import Database
from trainyard.store.records import DatasetRecord
from trainyard.store.schema import dataset_versions


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
