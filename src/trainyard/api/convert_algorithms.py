"""Algorithms between protobuf and the domain: the registration's spec and its chunks in,
versions, their runs and summaries out."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from trainyard.api.convert import model_to_pb, state_to_pb, timestamp
from trainyard.domain.algorithms import AlgorithmVersion, DefaultResources
from trainyard.domain.errors import InvalidArgument
from trainyard.services.algorithms import (
    AlgorithmDetail,
    AlgorithmRun,
    AlgorithmSummary,
    FileChunk,
    Registration,
    VersionUse,
)
from trainyard.v1 import training_pb2 as pb


def registration_from_pb(spec: pb.AlgorithmSpec) -> Registration:
    res = spec.resources
    return Registration(
        name=spec.name, image=spec.image, code=spec.code, command=spec.command,
        hyperparameters=dict(spec.hyperparameters),
        resources=DefaultResources(cpus=res.cpus, memory_mb=res.memory_mb, gpus=res.gpus),
        description=spec.description, git_commit=spec.git_commit)


def split_upload(parts: Iterator[pb.AlgorithmUpload]) -> tuple[Registration, Iterator[FileChunk]]:
    """The first message's spec, and the chunks after it (read as they are consumed). A
    stream that does not open with the spec, or names a second one, is refused."""
    first = next(parts, None)
    if first is None or first.WhichOneof("part") != "spec":
        raise InvalidArgument("spec", "the first message of a registration must be its spec")
    return registration_from_pb(first.spec), _chunks(parts)


def _chunks(parts: Iterable[pb.AlgorithmUpload]) -> Iterator[FileChunk]:
    for part in parts:
        if part.WhichOneof("part") != "chunk":
            raise InvalidArgument("spec", "a registration names its spec once, first")
        c = part.chunk
        yield FileChunk(path=c.path, size=c.size, sha256=c.sha256, offset=c.offset,
                        data=c.data)


def version_to_pb(version: AlgorithmVersion, created: bool = False) -> pb.AlgorithmVersion:
    res = version.resources
    return pb.AlgorithmVersion(
        name=version.name, version=version.version, source=str(version.source),
        image=version.image, image_id=version.image_id, code_hash=version.code_hash,
        code_size_bytes=version.code_size_bytes, code_file_count=version.code_file_count,
        command=version.command, hyperparameters=version.hyperparameters,
        resources=pb.Resources(cpus=res.cpus, memory_mb=res.memory_mb, gpus=res.gpus),
        description=version.description, git_commit=version.git_commit,
        created_at=timestamp(version.created_at), created_by=version.created_by,
        aliases=list(version.aliases), created=created)


def run_to_pb(run: AlgorithmRun) -> pb.AlgorithmRun:
    msg = pb.AlgorithmRun(run_id=run.run_id, state=state_to_pb(run.state), owner=run.owner)
    if run.ended_at is not None:
        msg.ended_at.CopyFrom(timestamp(run.ended_at))
    if run.model is not None:
        msg.model.CopyFrom(model_to_pb(run.model))
    return msg


def use_to_pb(use: VersionUse) -> pb.AlgorithmVersion:
    msg = version_to_pb(use.version)
    msg.runs.extend(run_to_pb(r) for r in use.runs)
    msg.job_count = use.job_count
    return msg


def detail_to_pb(detail: AlgorithmDetail) -> pb.Algorithm:
    return pb.Algorithm(
        name=detail.name, versions=[use_to_pb(u) for u in detail.versions],
        aliases=detail.aliases,
        alias_history=[pb.AliasChange(alias=c.alias, from_version=c.from_version or 0,
                                      to_version=c.to_version, actor=c.actor,
                                      time=timestamp(c.time)) for c in detail.history])


def summary_to_pb(summary: AlgorithmSummary) -> pb.AlgorithmSummary:
    return pb.AlgorithmSummary(
        name=summary.name, versions=summary.versions, latest_version=summary.latest_version,
        aliases=summary.aliases, updated_at=timestamp(summary.updated_at),
        description=summary.description)
