"""The runtime's gRPC client of trainyard.v1.JobRuntime: messages coded by `wire`, the job
token as metadata, TLS when a CA is given, and bounded retries while the service is away.

grpc is imported inside the functions that need it: `import trainyard.runtime` stays
standard-library only, and only the `run` verb needs grpcio on a node."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from trainyard.runtime import wire

SERVICE = "/trainyard.v1.JobRuntime/"
PULLS = {"dataset": "PullDataset", "code": "PullCode", "checkpoint": "PullCheckpoint"}
# Errors that say "not now" rather than "no": retried with backoff until RETRY_FOR passes.
RETRIED = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"})
RETRY_FOR = 120.0
FIRST_BACKOFF = 0.1
MAX_BACKOFF = 5.0
UNARY_TIMEOUT = 30.0  # one small call; streams have none, keepalives find a dead peer
CHANNEL_OPTIONS = [("grpc.keepalive_time_ms", 20_000), ("grpc.keepalive_timeout_ms", 10_000),
                   ("grpc.max_receive_message_length", 64 * 1024 * 1024),
                   ("grpc.max_send_message_length", 64 * 1024 * 1024),
                   # A pull's messages are read on the calling thread, not handed over
                   # from the channel's own thread one by one.
                   ("SingleThreadedUnaryStream", 1)]

T = TypeVar("T")


class ServiceError(Exception):
    """A call the service refused, or could not answer in time; the message says which."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _ca_certificate(tls_ca: str) -> bytes:
    """The PEM of `--tls-ca`: a file, or `env:NAME`, the variable that holds it (how a pod
    is given it, beside its other variables)."""
    if tls_ca.startswith("env:"):
        pem = os.environ.get(tls_ca[len("env:"):], "")
        if not pem:
            raise ServiceError("INVALID_ARGUMENT", f"{tls_ca[4:]} holds no CA certificate")
        return pem.encode()
    try:
        return Path(tls_ca).read_bytes()
    except OSError as exc:
        raise ServiceError("INVALID_ARGUMENT",
                           f"cannot read the CA certificate {tls_ca}: {exc}") from exc


class RuntimeClient:
    """One channel to the service, authenticated with the attempt's token."""

    def __init__(self, address: str, token: str, tls_ca: str = "", *,
                 retry_for: float = RETRY_FOR) -> None:
        import grpc

        self.address = address
        self.retry_for = retry_for
        self._metadata = (("authorization", f"Bearer {token}"),)
        if tls_ca:
            root = _ca_certificate(tls_ca)
            credentials = grpc.ssl_channel_credentials(root_certificates=root)
            self._channel = grpc.secure_channel(address, credentials, options=CHANNEL_OPTIONS)
        else:
            self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)

    def close(self) -> None:
        self._channel.close()

    # --- the six calls; each retried as a whole --------------------------------------------

    def get_attempt(self, node: str, rank: int) -> wire.Attempt:
        call = self._unary("GetAttempt", wire.Attempt)
        attempt: wire.Attempt = self.retrying("asking for the attempt", lambda: call(
            wire.GetAttemptRequest(node=node, rank=rank), timeout=UNARY_TIMEOUT,
            metadata=self._metadata))
        return attempt

    def push(self, request: wire.PushRequest) -> wire.PushReply:
        call = self._unary("Push", wire.PushReply)
        reply: wire.PushReply = self.retrying(f"pushing {request.stream}", lambda: call(
            request, timeout=UNARY_TIMEOUT, metadata=self._metadata))
        return reply

    def push_once(self, request: wire.PushRequest, timeout: float = 2.0) -> None:
        """One try, briefly: for what is only a shortcut (the exit report)."""
        self._unary("Push", wire.PushReply)(request, timeout=timeout, metadata=self._metadata)

    def pull(self, what: str, request: wire.Message,
             receive: Callable[[Iterator[wire.FileChunk]], T]) -> T:
        """Stream `what` ("dataset", "code" or "checkpoint") into `receive`, which starts
        again from nothing when the stream is cut and retried."""
        method = PULLS[what]
        call = self._channel.unary_stream(
            SERVICE + method, request_serializer=_encode,
            response_deserializer=wire.FileChunk.decode)
        return self.retrying(f"pulling the {what}",
                             lambda: receive(call(request, metadata=self._metadata)))

    def push_files(self, what: str, chunks: Callable[[], Iterable[wire.FileChunk]]
                   ) -> wire.PushFilesReply:
        """Upload `what` ("model" or "checkpoint"); `chunks` is called again for a retry."""
        method = "PushModel" if what == "model" else "PushCheckpoint"
        call = self._channel.stream_unary(
            SERVICE + method, request_serializer=_encode,
            response_deserializer=wire.PushFilesReply.decode)
        reply: wire.PushFilesReply = self.retrying(
            f"uploading the {what}", lambda: call(iter(chunks()), metadata=self._metadata))
        return reply

    # --- retries --------------------------------------------------------------------------

    def retrying(self, what: str, attempt: Callable[[], T]) -> T:
        """attempt() until it succeeds, fails for good, or the service has been away for
        retry_for seconds; capped exponential backoff with full jitter."""
        import grpc

        give_up = time.monotonic() + self.retry_for
        backoff = FIRST_BACKOFF
        while True:
            try:
                return attempt()
            except grpc.RpcError as exc:
                code, details = _status(exc)
                if code not in RETRIED:
                    raise ServiceError(code, _refusal(what, code, details)) from None
                if time.monotonic() + backoff > give_up:
                    raise ServiceError(code, f"{what} failed: the service at {self.address} "
                                       f"did not answer for {self.retry_for:.0f} s "
                                       f"({code}: {details})") from None
            time.sleep(random.uniform(0, backoff))
            backoff = min(MAX_BACKOFF, backoff * 2)

    def _unary(self, method: str, reply: type[wire.M]) -> Any:
        return self._channel.unary_unary(SERVICE + method, request_serializer=_encode,
                                         response_deserializer=reply.decode)


def _encode(message: wire.Message) -> bytes:
    return message.encode()


def _status(exc: Any) -> tuple[str, str]:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return (code.name if code is not None else "UNKNOWN"), str(details or "")


def _refusal(what: str, code: str, details: str) -> str:
    if code == "UNAUTHENTICATED":
        return f"{what} failed: the service refused the job token ({details})"
    if code == "PERMISSION_DENIED":
        return f"{what} failed: the job token may not do this ({details})"
    return f"{what} failed: {code}: {details}"
