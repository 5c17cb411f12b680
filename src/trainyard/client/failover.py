"""Several servers behind one client: a call that finds its server UNAVAILABLE moves to the
next address, and the one that answered is where the next call goes first.

Servers sharing one PostgreSQL all serve the APIs, so any of them answers; a submit retried
on another carries its request id and makes one job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc

T = TypeVar("T")


def split_addresses(server: str) -> list[str]:
    """"a:50051,b:50051" as its addresses, in order; blanks dropped."""
    return [part.strip() for part in server.split(",") if part.strip()]


class Channels:
    """A channel per address, opened on first use."""

    def __init__(self, addresses: list[str],
                 open_channel: Callable[[str], grpc.Channel]) -> None:
        if not addresses:
            raise ValueError("no server address")
        self.addresses = addresses
        self._open = open_channel
        self._channels: dict[int, grpc.Channel] = {}
        self.current = 0  # the index of the address that answered last

    def channel(self, index: int | None = None) -> grpc.Channel:
        index = self.current if index is None else index
        found = self._channels.get(index)
        if found is None:
            found = self._channels[index] = self._open(self.addresses[index])
        return found

    def order(self) -> list[int]:
        """The addresses to try: the one that answered last, then the others in turn."""
        n = len(self.addresses)
        return [(self.current + step) % n for step in range(n)]

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()


def _unavailable(exc: grpc.RpcError) -> bool:
    code = exc.code() if isinstance(exc, grpc.Call) else None
    return code is grpc.StatusCode.UNAVAILABLE


class FailoverStub:
    """Stands for a generated stub (TrainingServiceStub, AdminServiceStub): each method,
    called, runs on the current server and, on UNAVAILABLE, on the next ones in turn. A
    stream moves only if its server is unavailable before the first message."""

    def __init__(self, channels: Channels, stub_class: Callable[[grpc.Channel], Any]) -> None:
        self._channels = channels
        self._stub_class = stub_class
        self._stubs: dict[int, Any] = {}

    def _stub(self, index: int) -> Any:
        found = self._stubs.get(index)
        if found is None:
            found = self._stubs[index] = self._stub_class(self._channels.channel(index))
        return found

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        method = getattr(self._stub(self._channels.current), name)
        if isinstance(method, grpc.UnaryStreamMultiCallable):
            return lambda request, **kw: self._stream(name, request, kw)
        return lambda request, **kw: self._unary(name, request, kw)

    def _unary(self, name: str, request: Any, kw: dict[str, Any]) -> Any:
        """`request` may be a function that makes a client stream's messages: each server
        tried then gets the stream from its start."""
        return self._answered(lambda stub: getattr(stub, name)(
            request() if callable(request) else request, **kw))

    def _stream(self, name: str, request: Any, kw: dict[str, Any]) -> Iterator[Any]:
        def opened(stub: Any) -> tuple[list[Any], Iterator[Any]]:
            replies = getattr(stub, name)(request, **kw)
            try:
                return [next(replies)], replies
            except StopIteration:
                return [], replies

        first, rest = self._answered(opened)
        yield from first
        yield from rest

    def _answered(self, attempt: Callable[[Any], T]) -> T:
        """The result of the first server that is not UNAVAILABLE, which becomes current."""
        last: grpc.RpcError | None = None
        for index in self._channels.order():
            try:
                result = attempt(self._stub(index))
            except grpc.RpcError as exc:
                if not _unavailable(exc):
                    raise
                last = exc
                continue
            self._channels.current = index
            return result
        assert last is not None
        raise last
