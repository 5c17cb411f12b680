"""A test fixture: a small real JobRuntime server on loopback, built on the generated stubs,
that keeps one attempt's state in memory with runtime.proto's semantics (the token, the
job's own dataset, exactly-once numbered pushes, verified uploads), and can lose replies
after applying a push, as a network error would."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field

import grpc

from trainyard.v1 import runtime_pb2 as pb
from trainyard.v1 import runtime_pb2_grpc


def chunks_of(files: dict[str, bytes], piece: int = 4096) -> Iterator[pb.FileChunk]:
    for path, data in sorted(files.items()):
        sha = hashlib.sha256(data).hexdigest()
        for offset in range(0, len(data), piece) if data else [0]:
            yield pb.FileChunk(path=path, offset=offset, data=data[offset:offset + piece],
                               size=len(data), sha256=sha)


@dataclass
class StandIn(runtime_pb2_grpc.JobRuntimeServicer):
    token: str
    job_id: str = "job1"
    attempt: int = 1
    dataset: dict[str, bytes] = field(default_factory=dict)
    checkpoint: dict[str, bytes] | None = None
    heartbeat_s: float = 0.3
    lose_replies: int = 0  # the next N pushes with lines are applied, then answered UNAVAILABLE
    stop_requested: bool = False
    kept: dict[tuple[str, int], list[bytes]] = field(default_factory=dict)
    heartbeats: dict[int, int] = field(default_factory=dict)
    pushes: list[tuple[str, int, int, int]] = field(default_factory=list)
    model: dict[str, bytes] | None = None
    checkpoint_uploads: int = 0
    dataset_pulls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def dataset_hash(self) -> str:
        if not self.dataset:
            return ""
        blob = b"".join(p.encode() + hashlib.sha256(d).digest()
                        for p, d in sorted(self.dataset.items()))
        return "sha256:" + hashlib.sha256(blob).hexdigest()

    def lines(self, stream: str, rank: int = 0) -> list[str]:
        with self.lock:
            return [line.decode() for line in self.kept.get((stream, rank), [])]

    def _auth(self, context: grpc.ServicerContext) -> None:
        metadata = dict(context.invocation_metadata())
        if metadata.get("authorization") != f"Bearer {self.token}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown or expired job token")

    def GetAttempt(self, request: pb.GetAttemptRequest,  # noqa: N802
                   context: grpc.ServicerContext) -> pb.Attempt:
        self._auth(context)
        return pb.Attempt(job_id=self.job_id, attempt=self.attempt,
                          dataset_hash=self.dataset_hash,
                          dataset_bytes=sum(len(d) for d in self.dataset.values()),
                          dataset_files=len(self.dataset),
                          has_checkpoint=self.checkpoint is not None,
                          heartbeat_interval_s=self.heartbeat_s)

    def PullDataset(self, request: pb.PullDatasetRequest,  # noqa: N802
                    context: grpc.ServicerContext) -> Iterator[pb.FileChunk]:
        self._auth(context)
        if request.content_hash != self.dataset_hash:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "not this job's dataset")
        self.dataset_pulls += 1
        yield from chunks_of(self.dataset)

    def PullCheckpoint(self, request: pb.PullCheckpointRequest,  # noqa: N802
                       context: grpc.ServicerContext) -> Iterator[pb.FileChunk]:
        self._auth(context)
        yield from chunks_of(self.checkpoint or {})

    def _receive(self, chunks: Iterator[pb.FileChunk],
                 context: grpc.ServicerContext) -> dict[str, bytes]:
        self._auth(context)
        files: dict[str, bytes] = {}
        sizes: dict[str, tuple[int, str]] = {}
        for chunk in chunks:
            if len(files.get(chunk.path, b"")) != chunk.offset:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{chunk.path}: bad offset")
            files[chunk.path] = files.get(chunk.path, b"") + chunk.data
            sizes[chunk.path] = (chunk.size, chunk.sha256)
        for path, data in files.items():
            if sizes[path] != (len(data), hashlib.sha256(data).hexdigest()):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{path} does not match")
        return files

    def PushCheckpoint(self, request_iterator: Iterator[pb.FileChunk],  # noqa: N802
                       context: grpc.ServicerContext) -> pb.PushFilesReply:
        files = self._receive(request_iterator, context)
        with self.lock:
            self.checkpoint = files
            self.checkpoint_uploads += 1
        return pb.PushFilesReply(files=len(files), bytes=sum(map(len, files.values())))

    def PushModel(self, request_iterator: Iterator[pb.FileChunk],  # noqa: N802
                  context: grpc.ServicerContext) -> pb.PushFilesReply:
        files = self._receive(request_iterator, context)
        with self.lock:
            self.model = files
        return pb.PushFilesReply(files=len(files), bytes=sum(map(len, files.values())))

    def Push(self, request: pb.PushRequest,  # noqa: N802
             context: grpc.ServicerContext) -> pb.PushReply:
        self._auth(context)
        with self.lock:
            if request.stream == "heartbeat":
                self.heartbeats[request.rank] = self.heartbeats.get(request.rank, 0) + 1
                return pb.PushReply(stop_requested=self.stop_requested)
            self.pushes.append((request.stream, request.rank, request.first_seq,
                                len(request.lines)))
            kept = self.kept.setdefault((request.stream, request.rank), [])
            if request.first_seq > len(kept):
                context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                              f"expected line {len(kept)}, got {request.first_seq}")
            kept += request.lines[len(kept) - request.first_seq:]
            if request.lines and self.lose_replies:
                self.lose_replies -= 1
                context.abort(grpc.StatusCode.UNAVAILABLE, "reply lost on the way")
            return pb.PushReply(next_seq=len(kept), stop_requested=self.stop_requested)


class Served:
    """The stand-in on a free loopback port, until close()."""

    def __init__(self, servicer: StandIn, tls: tuple[bytes, bytes] | None = None) -> None:
        """tls: (PEM key, PEM certificate) to serve TLS."""
        self.servicer = servicer
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        runtime_pb2_grpc.add_JobRuntimeServicer_to_server(servicer, self.server)
        if tls is None:
            self.port = self.server.add_insecure_port("127.0.0.1:0")
        else:
            credentials = grpc.ssl_server_credentials([tls])
            self.port = self.server.add_secure_port("127.0.0.1:0", credentials)
        self.address = f"127.0.0.1:{self.port}"
        self.server.start()

    def close(self) -> None:
        self.server.stop(grace=None)


def wait_for(condition: object, timeout: float = 10.0) -> float:
    """Seconds until condition() held; fails after timeout."""
    started = time.monotonic()
    while not condition():  # type: ignore[operator]
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(0.02)
    return time.monotonic() - started
