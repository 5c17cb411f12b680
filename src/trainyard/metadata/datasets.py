"""Immutable, content-addressed dataset versions."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from trainyard.domain.errors import FailedPrecondition, InvalidArgument, NotFound
from trainyard.domain.spec import HASH_RE, NAME_RE
from trainyard.metadata.hashing import remove_stored, store_tree
from trainyard.store.datasets import DatasetStore
from trainyard.store.records import DatasetRecord

log = logging.getLogger(__name__)
SHOWN_USERS = 20


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

    def delete(self, name: str, version: str) -> DatasetRecord:
        """Delete a version no job names, with its files unless another name holds the same
        content. One that jobs name is refused, with their runs."""
        check_ref(name, version)
        record = self.store.get(name, version)
        if record is None:
            raise NotFound("dataset version", f"{name}:{version}")
        users, shared = self.store.delete_unreferenced(name, version)
        if users:
            shown = ", ".join(f"{job}-{attempt}" if attempt else f"{job} (not run yet)"
                              for job, attempt in users[:SHOWN_USERS])
            more = f" and {len(users) - SHOWN_USERS} more" if len(users) > SHOWN_USERS else ""
            raise FailedPrecondition(
                f"dataset {name}:{version[:12]} is used by {len(users)} run(s): "
                f"{shown}{more}; a version that runs used is kept for their lineage and "
                "reproduction")
        expected = self.objects_dir / version
        if shared:
            return record
        if Path(record.path) != expected:
            # Never delete a path the store names but this service did not make.
            log.warning("dataset %s:%s: its files at %s are not where this service keeps "
                        "them (%s); left in place", name, version, record.path, expected)
        else:
            remove_stored(self.objects_dir, version)
        return record


def check_ref(name: str, version: str) -> None:
    if not NAME_RE.match(name):
        raise InvalidArgument("name", f"{name[:130]!r} is not a valid dataset name")
    if not HASH_RE.match(version):
        raise InvalidArgument("version", "must be the 64-character hash of a dataset version")
