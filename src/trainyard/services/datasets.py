"""Datasets for every interface: register a directory as an immutable version, list the
versions with the runs that used them, trace a version to the models trained on it, and
delete an unused one.

Datasets are a shared catalogue: any valid token lists them. The runs that used a version
are named only where the caller may see them (their job's visibility)."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.auth.policy import Access, Identity
from trainyard.domain.errors import NotFound
from trainyard.domain.runs import run_id
from trainyard.domain.spec import check_text
from trainyard.metadata.datasets import DatasetRegistry, check_ref
from trainyard.services.guard import Guard
from trainyard.store.model_registry import ModelStore
from trainyard.store.records import DatasetRecord, ModelRecord
from trainyard.store.runs import RunStore


@dataclass(frozen=True)
class DatasetUse:
    record: DatasetRecord
    run_ids: list[str]  # the runs, of those the caller may see, that used it


@dataclass(frozen=True)
class DatasetLineage:
    dataset: DatasetUse
    models: list[ModelRecord]  # every model version trained on it


@dataclass
class DatasetService:
    registry: DatasetRegistry
    runs: RunStore
    models: ModelStore
    guard: Guard

    def register(self, identity: Identity, name: str, path: str) -> tuple[DatasetRecord, bool]:
        """Copy and hash a directory on the server as a new version of `name` (or find the
        same content registered already: then the bool is False). Admins only: the path is
        on the server's own file system, which the service may read and the caller not."""
        self.guard.require(identity, Access.ADMIN, "RegisterDataset")
        return self.registry.register(name, path)

    def list(self, identity: Identity, name: str = "") -> list[DatasetUse]:
        self.guard.require(identity, Access.READ, "ListDatasets")
        check_text("name", name)
        usage = self.runs.dataset_usage(self.guard.owners(identity), name)
        return [DatasetUse(r, usage.get((r.name, r.version), []))
                for r in self.registry.store.list(name)]

    def lineage(self, identity: Identity, name: str, version: str) -> DatasetLineage:
        """From a dataset version to every model trained on it, and the runs that used it."""
        self.guard.require(identity, Access.READ, "GetDatasetLineage")
        check_ref(name, version)
        record = self.registry.store.get(name, version)
        if record is None:
            raise NotFound("dataset version", f"{name}:{version}")
        owners = self.guard.owners(identity)
        used = [run_id(j, a) for j, a in self.runs.using_dataset(name, version, owners) if a]
        return DatasetLineage(DatasetUse(record, used), self.models.trained_on(name, version))

    def delete(self, identity: Identity, name: str, version: str) -> DatasetRecord:
        """Remove an unused version; admins only, as they register them."""
        self.guard.require(identity, Access.ADMIN, "DeleteDataset")
        return self.registry.delete(name, version)
