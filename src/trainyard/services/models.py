"""Models for every interface: versions, aliases, download, and lineage back to the run,
dataset version and code.

Models are a shared catalogue: any valid token reads them, as other services select a
model by its alias. The runs behind them keep their job's visibility: lineage names
a model's run and its provenance (dataset, code, hyperparameters, which the version records),
and the run's full record only for a caller who may see that run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from trainyard.auth.policy import Access, Identity
from trainyard.domain.algorithms import AlgorithmVersion
from trainyard.domain.errors import FailedPrecondition, NotFound
from trainyard.domain.runs import ModelRef, check_alias, check_model_name, run_id
from trainyard.domain.spec import HASH_RE, AlgorithmRef
from trainyard.metadata.file_chunks import FileChunk, chunks_of
from trainyard.metadata.hashing import read_manifest
from trainyard.services.guard import Guard
from trainyard.services.runs import RunService, RunView
from trainyard.store.algorithms import AlgorithmStore
from trainyard.store.datasets import DatasetStore
from trainyard.store.model_registry import ModelStore, ModelSummary
from trainyard.store.records import AliasChange, DatasetRecord, ModelRecord, RunRecord


@dataclass(frozen=True)
class ModelDetail:
    name: str
    versions: list[ModelRecord]  # oldest first
    aliases: dict[str, int]
    history: list[AliasChange]  # every move of its aliases, oldest first


@dataclass(frozen=True)
class ModelLineage:
    model: ModelRecord
    run: RunRecord  # what it ran: spec, image id, owner
    run_view: RunView | None  # the run's record, for a caller who may see it
    dataset: DatasetRecord | None
    # The registered algorithm version it was trained with (None: none, or since deleted).
    algorithm: AlgorithmVersion | None = None


@dataclass
class ModelService:
    models: ModelStore
    runs: RunService
    datasets: DatasetStore
    guard: Guard
    artifacts_dir: Path
    algorithms: AlgorithmStore | None = None

    def list_models(self, identity: Identity) -> list[ModelSummary]:
        self.guard.require(identity, Access.READ, "ListModels")
        return self.models.list_models()

    def get_model(self, identity: Identity, name: str) -> ModelDetail:
        self.guard.require(identity, Access.READ, "GetModel")
        check_model_name(name, "name")
        versions = self.models.versions(name)
        if not versions:
            raise NotFound("model", name)
        return ModelDetail(name, versions, self.models.aliases(name),
                           self.models.alias_history(name))

    def set_alias(self, identity: Identity, name: str, alias: str,
                  version: int) -> tuple[int, int | None]:
        """Point the alias at a version (atomically, with a row of history); returns (the
        version, the one it named before or None). A member may point aliases only at
        versions whose runs they may see."""
        self.guard.require(identity, Access.WRITE, "SetModelAlias")
        check_model_name(name, "name")
        check_alias(alias)
        target = self.models.resolve(ModelRef(name, version))
        self.guard.job(identity, self.runs.jobs.get(target.job_id), "SetModelAlias",
                       "point an alias at the model of")
        previous = self.models.set_alias(name, alias, target.version, identity.user)
        return target.version, previous

    def download(self, identity: Identity,
                 ref: ModelRef) -> tuple[ModelRecord, Iterator[FileChunk]]:
        """The version and its files as chunks, each naming its file's relative path, size
        and sha256. The client checks every hash before it puts the files in place."""
        self.guard.require(identity, Access.READ, "DownloadModel")
        model = self.models.resolve(ref)
        if not HASH_RE.match(model.content_hash):
            raise FailedPrecondition(f"model {ref} has no content hash to serve it by")
        stored = self.artifacts_dir / model.content_hash
        try:
            files = read_manifest(stored)
        except (OSError, ValueError) as exc:
            raise FailedPrecondition(f"the files of model {ref} cannot be read on the "
                                     f"server: {exc}") from None
        return model, chunks_of(stored, files)

    def lineage(self, identity: Identity, ref: ModelRef) -> ModelLineage:
        """From a model version back to its run, dataset version and code."""
        self.guard.require(identity, Access.READ, "GetModelLineage")
        model = self.models.resolve(ref)
        run = self.runs.runs.get(model.job_id, model.attempt)
        if run is None:  # a version recorded before runs were kept, of an earlier attempt
            raise NotFound("run", run_id(model.job_id, model.attempt))
        # Not a refusal: the lineage is shown either way, the run's record only to those
        # who may see it (so nothing is audited as refused).
        view = self.runs.get(identity, run.id) if self.guard.may_see(
            identity, run.job.owner) else None
        dataset = model.dataset or run.spec.dataset
        record = self.datasets.get(dataset.name, dataset.version) if dataset else None
        return ModelLineage(model, run, view, record, self._algorithm(run.spec.algorithm))

    def _algorithm(self, ref: AlgorithmRef | None) -> AlgorithmVersion | None:
        if ref is None or self.algorithms is None:
            return None
        try:
            return self.algorithms.resolve(ref)
        except NotFound:  # deleted once no job was pinned to it: only a reproduction's gone
            return None
