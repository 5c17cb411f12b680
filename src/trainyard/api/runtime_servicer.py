"""The JobRuntime servicer: what one attempt of a remote job asks, with its job token. The
grant the interceptor verified (current_grant) names the attempt; no request names a job."""

from __future__ import annotations

from collections.abc import Iterator

import grpc

from trainyard.api.auth import current_grant
from trainyard.api.errors import grpc_errors
from trainyard.runtime.wire import encode_file_chunk
from trainyard.services.job_runtime import FileChunk, JobRuntimeService, SequenceGap
from trainyard.v1 import runtime_pb2 as pb
from trainyard.v1 import runtime_pb2_grpc as pb_grpc

# Where a refused batch should resume, beside the FAILED_PRECONDITION of a sequence gap.
NEXT_SEQ_METADATA = "trainyard-next-seq"


class JobRuntimeServicer(pb_grpc.JobRuntimeServicer):
    def __init__(self, runtime: JobRuntimeService) -> None:
        self.runtime = runtime

    @grpc_errors
    def GetAttempt(self, request: pb.GetAttemptRequest,
                   context: grpc.ServicerContext) -> pb.Attempt:
        info = self.runtime.attempt(current_grant(), request.node, request.rank)
        return pb.Attempt(job_id=info.job_id, attempt=info.attempt,
                          dataset_hash=info.dataset_hash, dataset_bytes=info.dataset_bytes,
                          dataset_files=info.dataset_files,
                          has_checkpoint=info.has_checkpoint,
                          heartbeat_interval_s=info.heartbeat_interval_s,
                          code_hash=info.code_hash, code_bytes=info.code_bytes,
                          code_files=info.code_files)

    @grpc_errors
    def PullDataset(self, request: pb.PullDatasetRequest,
                    context: grpc.ServicerContext) -> Iterator[bytes]:
        chunks = self.runtime.pull_dataset(current_grant(), request.content_hash)
        yield from _send(chunks, context)

    @grpc_errors
    def PullCode(self, request: pb.PullCodeRequest,
                 context: grpc.ServicerContext) -> Iterator[bytes]:
        yield from _send(self.runtime.pull_code(current_grant(), request.content_hash), context)

    @grpc_errors
    def PullCheckpoint(self, request: pb.PullCheckpointRequest,
                       context: grpc.ServicerContext) -> Iterator[bytes]:
        yield from _send(self.runtime.pull_checkpoint(current_grant()), context)

    @grpc_errors
    def PushCheckpoint(self, request_iterator: Iterator[pb.FileChunk],
                       context: grpc.ServicerContext) -> pb.PushFilesReply:
        stored = self.runtime.push_checkpoint(current_grant(), _received(request_iterator))
        return pb.PushFilesReply(files=stored.files, bytes=stored.bytes)

    @grpc_errors
    def PushModel(self, request_iterator: Iterator[pb.FileChunk],
                  context: grpc.ServicerContext) -> pb.PushFilesReply:
        stored = self.runtime.push_model(current_grant(), _received(request_iterator))
        return pb.PushFilesReply(files=stored.files, bytes=stored.bytes)

    @grpc_errors
    def Push(self, request: pb.PushRequest, context: grpc.ServicerContext) -> pb.PushReply:
        try:
            result = self.runtime.push(current_grant(), request.stream, request.rank,
                                       request.first_seq, request.lines, request.exit_code)
        except SequenceGap as gap:
            # The client resends from here; the number is in the trailers and the sentence.
            context.set_trailing_metadata(((NEXT_SEQ_METADATA, str(gap.next_seq)),))
            raise
        notice = result.notice
        return pb.PushReply(next_seq=result.next_seq, stop_requested=result.stop_requested,
                            preempt_notice=notice is not None,
                            notice_signal=notice.signal if notice else "",
                            notice_grace_s=notice.grace_s if notice else 0.0)


def add_to_server(servicer: JobRuntimeServicer, server: grpc.Server) -> None:
    """The generated registration, but for the pulls, whose chunks are encoded already:
    building a generated message and serializing it would copy each megabyte twice more."""
    registered: dict[str, grpc.RpcMethodHandler] = {}

    class Collect:
        def add_generic_rpc_handlers(self, handlers: object) -> None:
            pass

        def add_registered_method_handlers(self, service: str,
                                           handlers: dict[str, grpc.RpcMethodHandler]) -> None:
            registered.update(handlers)

    pb_grpc.add_JobRuntimeServicer_to_server(servicer, Collect())
    for name in ("PullDataset", "PullCode", "PullCheckpoint"):
        handler = registered[name]
        registered[name] = grpc.unary_stream_rpc_method_handler(
            handler.unary_stream, request_deserializer=handler.request_deserializer,
            response_serializer=_encoded)
    service = pb.DESCRIPTOR.services_by_name["JobRuntime"].full_name
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service,
                                                                          registered),))
    server.add_registered_method_handlers(service, registered)  # type: ignore[attr-defined]


def _encoded(message: bytes) -> bytes:
    return message


def _send(chunks: Iterator[FileChunk], context: grpc.ServicerContext) -> Iterator[bytes]:
    for chunk in chunks:
        if not context.is_active():
            return
        yield encode_file_chunk(chunk.path, chunk.offset, chunk.data, chunk.size, chunk.sha256)


def _received(requests: Iterator[pb.FileChunk]) -> Iterator[FileChunk]:
    for msg in requests:
        yield FileChunk(path=msg.path, size=msg.size, sha256=msg.sha256, offset=msg.offset,
                        data=msg.data)
