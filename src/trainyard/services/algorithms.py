"""Algorithms for every interface: register a version (an image pinned by its content id, or
an uploaded code directory stored by content hash), list them, show one with the runs of each
version and the models they made, move an alias, and delete an unused version.

Algorithms are a shared catalogue, as models are: any valid token reads them, members
register and alias them. The runs behind a version keep their job's visibility: a caller
sees only the runs they may see, and the count of every job pinned to it."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from trainyard.auth.policy import Access, Identity
from trainyard.domain.algorithms import (
    AlgorithmVersion,
    DefaultResources,
    Source,
    apply,
    check_registration,
)
from trainyard.domain.errors import InvalidArgument, NotFound
from trainyard.domain.runs import check_alias, check_model_name
from trainyard.domain.spec import JobSpec, validate_spec
from trainyard.domain.states import JobState

# FileChunk is re-exported: the adapters build the chunks of an upload from it.
from trainyard.metadata.file_chunks import FileChunk as FileChunk
from trainyard.metadata.file_chunks import receive_tree, remove_tree
from trainyard.metadata.hashing import remove_stored, store_tree
from trainyard.metadata.workspace import Workspace
from trainyard.services.guard import Guard
from trainyard.services.image_ids import ImageIds
from trainyard.store.algorithms import AlgorithmStore
from trainyard.store.algorithms import AlgorithmSummary as AlgorithmSummary  # for the adapters
from trainyard.store.model_registry import ModelStore
from trainyard.store.records import AliasChange, ModelRecord
from trainyard.store.runs import RunStore

UPLOADS = ".uploads"  # under the code directory: where an upload is received, then stored


@dataclass(frozen=True)
class Registration:
    """What a caller asks to register as the next version of `name`."""

    name: str
    image: str = ""
    code: bool = False  # a code directory follows, as chunks
    command: str = ""
    hyperparameters: dict[str, str] = field(default_factory=dict)
    resources: DefaultResources = field(default_factory=DefaultResources)
    description: str = ""
    git_commit: str = ""


@dataclass(frozen=True)
class AlgorithmRun:
    run_id: str
    state: JobState
    owner: str
    ended_at: float | None
    model: ModelRecord | None  # the model version it made, if any


@dataclass(frozen=True)
class VersionUse:
    version: AlgorithmVersion
    runs: list[AlgorithmRun]  # of those the caller may see, oldest first
    job_count: int  # every job pinned to it, seen or not


@dataclass(frozen=True)
class AlgorithmDetail:
    name: str
    versions: list[VersionUse]  # oldest first
    aliases: dict[str, int]
    history: list[AliasChange]  # every move of its aliases, oldest first


# The fields that make two versions the same: registering the latest again makes nothing.
def _same(a: AlgorithmVersion, b: AlgorithmVersion) -> bool:
    return (a.source, a.image, a.image_id, a.code_hash, a.command, a.hyperparameters,
            a.resources, a.description, a.git_commit) == \
        (b.source, b.image, b.image_id, b.code_hash, b.command, b.hyperparameters,
         b.resources, b.description, b.git_commit)


def check_defaults(version: AlgorithmVersion) -> None:
    """Its default hyperparameters and resources, checked as a job's are (domain.spec), on a
    bare job that takes them: a bad one is refused naming `hyperparameters.<key>`."""
    bare = apply(JobSpec(name=version.name), replace(version, image="", image_id=""))
    validate_spec(replace(bare, command="true", image="", code_hash="", algorithm=None))


@dataclass
class AlgorithmService:
    algorithms: AlgorithmStore
    runs: RunStore
    models: ModelStore
    workspace: Workspace
    guard: Guard
    image_ids: ImageIds
    # Storing a code directory and deleting one are serialized, so that a delete cannot
    # remove a directory a registration of the same content has just found in place.
    _code_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def register(self, identity: Identity, request: Registration,
                 chunks: Iterable[FileChunk] = ()) -> tuple[AlgorithmVersion, bool]:
        """The next version of request.name, or its latest version if that is the same in
        every field (then the bool is False). Everything is checked before anything is
        stored; the image is pinned to the id the engine gives it now."""
        self.guard.require(identity, Access.WRITE, "RegisterAlgorithm")
        check_model_name(request.name, "name", "algorithm")
        draft = AlgorithmVersion(
            name=request.name, version=0,
            source=Source.CODE if request.code else Source.IMAGE, image=request.image,
            command=request.command, hyperparameters=dict(request.hyperparameters),
            resources=request.resources, description=request.description,
            git_commit=request.git_commit, created_by=identity.user)
        check_registration(draft)
        check_defaults(draft)
        if draft.image:
            draft = replace(draft, image_id=self.image_ids(draft.image))
        if not request.code:
            if next(iter(chunks), None) is not None:
                raise InvalidArgument("chunk", "an algorithm of an image takes no code "
                                      "files; register a code directory to send them")
            return self._add(draft)
        # Received (checked) first, outside the lock: a slow upload holds up no one.
        received = receive_tree(chunks, self.workspace.code_dir / UPLOADS / "code", "code")
        try:
            with self._code_lock:
                return self._add(self._store_code(draft, received.directory))
        finally:
            remove_tree(received.directory)

    def _store_code(self, draft: AlgorithmVersion, received: Path) -> AlgorithmVersion:
        digest, stored = store_tree(received, self.workspace.code_dir, "code")
        if stored is None:
            raise InvalidArgument("code", "the code directory holds no files")
        return replace(draft, code_hash=digest.digest, code_size_bytes=digest.size_bytes,
                       code_file_count=digest.file_count)

    def _add(self, draft: AlgorithmVersion) -> tuple[AlgorithmVersion, bool]:
        versions = self.algorithms.versions(draft.name)
        if versions and _same(versions[-1], draft):
            return versions[-1], False
        return self.algorithms.add_version(replace(draft, created_at=time.time())), True

    def list(self, identity: Identity) -> list[AlgorithmSummary]:
        self.guard.require(identity, Access.READ, "ListAlgorithms")
        return self.algorithms.list()

    def get(self, identity: Identity, name: str) -> AlgorithmDetail:
        """Its versions, oldest first, each with its runs the caller may see and the model
        each made; its aliases and their history."""
        self.guard.require(identity, Access.READ, "GetAlgorithm")
        check_model_name(name, "name", "algorithm")
        versions = self.algorithms.versions(name)
        if not versions:
            raise NotFound("algorithm", name)
        pinned = self.algorithms.jobs_of(name)
        jobs = Counter(v for _, v in {(job, v) for job, v, _ in pinned})
        keys = [(job, attempt) for job, _, attempt in pinned if attempt]
        found = self.runs.many(keys)
        models = self.models.for_runs(keys)
        by_version: dict[int, list[AlgorithmRun]] = {}
        for job, version, attempt in pinned:
            run = found.get((job, attempt))
            if run is None or not self.guard.may_see(identity, run.job.owner):
                continue
            by_version.setdefault(version, []).append(AlgorithmRun(
                run.id, run.state, run.job.owner, run.ended_at, models.get((job, attempt))))
        return AlgorithmDetail(
            name, [VersionUse(v, by_version.get(v.version, []), jobs.get(v.version, 0))
                   for v in versions],
            self.algorithms.aliases(name), self.algorithms.alias_history(name))

    def set_alias(self, identity: Identity, name: str, alias: str,
                  version: int) -> tuple[int, int | None]:
        """Point the alias at a version (atomically, with a row of history); returns (the
        version, the one it named before or None)."""
        self.guard.require(identity, Access.WRITE, "SetAlgorithmAlias")
        check_model_name(name, "name", "algorithm")
        check_alias(alias)
        if version < 1:
            raise InvalidArgument("version", "name the version the alias points at (1 or more)")
        previous = self.algorithms.set_alias(name, alias, version, identity.user)
        return version, previous

    def delete(self, identity: Identity, name: str, version: int) -> AlgorithmVersion:
        """Delete a version no job is pinned to, with its aliases, and its code directory
        unless another version holds the same one. Refused (FailedPrecondition naming the
        jobs) while any job is pinned to it."""
        self.guard.require(identity, Access.WRITE, "DeleteAlgorithm")
        check_model_name(name, "name", "algorithm")
        if version < 1:
            raise InvalidArgument("version", "name the version to delete (1 or more)")
        with self._code_lock:
            record, shared = self.algorithms.delete_unused(name, version)
            if record.code_hash and not shared:
                remove_stored(self.workspace.code_dir, record.code_hash)
        return record

