"""Turning a finished job's MODEL_SAVE_PATH into a content-addressed model artifact."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainyard.metadata.hashing import digest_tree, store_tree
from trainyard.store.models import ModelStore
from trainyard.store.records import JobRecord, ModelRecord


@dataclass(frozen=True)
class ArtifactCollector:
    models: ModelStore
    objects_dir: Path

    def collect(self, job: JobRecord, model_dir: Path) -> ModelRecord | None:
        """Store the files the job saved and record them as a model version; None if none."""
        if not model_dir.is_dir():
            return None
        digest = digest_tree(model_dir, "model")
        if digest.file_count == 0:
            return None
        stored = store_tree(model_dir, digest, self.objects_dir)
        return self.models.add_version(
            job.spec.name, job, content_hash=digest.digest, uri=stored.as_uri(),
            size_bytes=digest.size_bytes, file_count=digest.file_count,
        )
