"""Turning a finished job's MODEL_SAVE_PATH into a content-addressed model artifact."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainyard.metadata.hashing import store_tree
from trainyard.store.model_registry import ModelStore
from trainyard.store.records import JobRecord, ModelRecord


@dataclass(frozen=True)
class ArtifactCollector:
    models: ModelStore
    objects_dir: Path

    def collect(self, job: JobRecord, model_dir: Path, *, synced: bool = True
                ) -> ModelRecord | None:
        """Store the files the job saved and record them as a model version (`synced`: as
        ModelStore.add_version); None if none."""
        if not model_dir.exists():
            return None
        digest, stored = store_tree(model_dir, self.objects_dir, "model")
        if stored is None:
            return None
        return self.models.add_version(
            job.spec.model, job, content_hash=digest.digest, uri=stored.as_uri(),
            size_bytes=digest.size_bytes, file_count=digest.file_count, synced=synced,
        )
