"""Immutable, content-addressed dataset versions."""

from __future__ import annotations

import time
from pathlib import Path

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import NAME_RE
from trainyard.metadata.hashing import store_tree
from trainyard.store.datasets import DatasetStore
from trainyard.store.records import DatasetRecord


class DatasetRegistry:
    def __init__(self, store: DatasetStore, objects_dir: Path, data_dir: Path) -> None:
        self.store = store
        self.objects_dir = objects_dir
        self.data_dir = data_dir.resolve()

    def register(self, name: str, path: str) -> tuple[DatasetRecord, bool]:
        """Copy the directory's content into the store and record it under name."""
        if not NAME_RE.match(name):
            raise InvalidArgument("name", f"{name!r} is not a valid dataset name (letters, "
                                  "digits, '.', '_' or '-')")
        if not path:
            raise InvalidArgument("path", "must not be empty")
        src = Path(path)
        if not src.is_absolute():
            raise InvalidArgument("path", f"{path!r} must be an absolute path")
        if not src.is_dir():
            raise InvalidArgument("path", f"{path!r} is not a directory on the server")
        real = src.resolve()
        if real == self.data_dir or self.data_dir in real.parents or real in self.data_dir.parents:
            raise InvalidArgument("path", f"{path!r} overlaps the server's data directory")
        digest, stored = store_tree(src, self.objects_dir, "path")
        if stored is None:
            raise InvalidArgument("path", f"{path!r} holds no files")
        return self.store.add(
            DatasetRecord(name=name, version=digest.digest, size_bytes=digest.size_bytes,
                          file_count=digest.file_count, path=str(stored),
                          created_at=time.time())
        )

    def resolve(self, name: str, version: str) -> DatasetRecord:
        record = self.store.get(name, version)
        if record is None:
            known = [r.version[:12] for r in self.store.list(name)]
            hint = f"; known versions: {', '.join(known)}" if known else "; no such dataset"
            raise InvalidArgument("dataset", f"{name}:{version} is not registered{hint}")
        return record
