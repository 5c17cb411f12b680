"""A streaming RPC as an HTTP response: its messages as server-sent events, or a model's
file chunks as one tar archive. Each message is computed on a thread of its own pool (a
stream waits most of its life, and must not hold the threads the other routes run on);
the first is awaited briefly before the headers go, so that a refusal still picks the
status code; one after that ends the stream with an `error` event."""

from __future__ import annotations

import asyncio
import codecs
import json
import tarfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from google.protobuf.message import Message

from trainyard.client.messages import plain
from trainyard.web.errors import HTTP_BY_CODE, error_body
from trainyard.web.transcode import Aborted

HEADERS_WAIT_S = 1.0
_END = object()
_THREADS = ThreadPoolExecutor(max_workers=256, thread_name_prefix="http-stream")
BLOCK = 512


def _next(responses: Iterator[Any]) -> Any:
    return next(responses, _END)


class Pump:
    """Pulls a stream's messages on the stream threads, and tells it when the client left."""

    def __init__(self, responses: Iterator[Any], active: threading.Event) -> None:
        self.responses = responses
        self.active = active
        self._loop = asyncio.get_running_loop()
        self._pending: asyncio.Future[Any] = self._pull()

    def _pull(self) -> asyncio.Future[Any]:
        return self._loop.run_in_executor(_THREADS, _next, self.responses)

    async def started(self) -> Any:
        """Wait briefly for the first message (returned; None if it has not come, or the
        stream ended at once), so that an error before it raises here."""
        done, _ = await asyncio.wait({self._pending}, timeout=HEADERS_WAIT_S)
        if not done:
            return None
        first = self._pending.result()
        return None if first is _END else first

    async def messages(self) -> AsyncIterator[Any]:
        try:
            while (item := await self._pending) is not _END:
                self._pending = self._pull()
                yield item
        finally:
            self.active.clear()  # the client left, or the stream ended


def _event(kind: str, data: Any, event_id: str = "") -> bytes:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _error_event(exc: Exception) -> bytes:
    if isinstance(exc, Aborted):
        return _event("error", error_body(exc.code.name, HTTP_BY_CODE.get(exc.code, 500),
                                          exc.details))
    return _event("error", error_body("INTERNAL", 500, "internal error; see the server log"))


EventOf = Callable[[Message], tuple[str, Any, str]]


def log_events() -> EventOf:
    """LogChunk -> `log` events of text (UTF-8 decoded across chunk ends), each with the
    offset after it as its id, which a reconnecting EventSource sends back."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def event(chunk: Message) -> tuple[str, Any, str]:
        data: bytes = chunk.data  # type: ignore[attr-defined]
        offset: int = chunk.offset  # type: ignore[attr-defined]
        return "log", {"offset": offset, "text": decoder.decode(data)}, str(offset + len(data))

    return event


def transition_events(skip: int) -> EventOf:
    """JobEvent -> `transition` events numbered from 1; the first `skip` were seen already."""
    count = 0

    def event(message: Message) -> tuple[str, Any, str]:
        nonlocal count
        count += 1
        return ("transition" if count > skip else ""), plain(message), str(count)

    return event


async def sse(pump: Pump, event_of: EventOf) -> AsyncIterator[bytes]:
    try:
        async for message in pump.messages():
            kind, data, event_id = event_of(message)
            if kind:
                yield _event(kind, data, event_id)
        yield _event("end", {})
    except Exception as exc:  # after the headers: an event (the servicer aborts)
        yield _error_event(exc)


def _tar_header(path: str, size: int, mtime: int) -> bytes:
    info = tarfile.TarInfo(path)
    info.size = size
    info.mode = 0o644
    info.mtime = mtime
    return info.tobuf(format=tarfile.PAX_FORMAT)


async def tar(pump: Pump, mtime: int | None = None) -> AsyncIterator[bytes]:
    """ModelFileChunk messages -> a tar archive: each file's header before its first chunk,
    padding after its last. Every file is dated `mtime` (the version's registration, so that
    each download of a version is the same bytes; now where it is not known). An error
    midway leaves the archive unterminated, so a reader sees it is broken rather than
    short."""
    dated = int(time.time()) if mtime is None else mtime
    try:
        async for chunk in pump.messages():
            if chunk.offset == 0:
                yield _tar_header(chunk.path, chunk.size, dated)
            yield chunk.data
            end = chunk.offset + len(chunk.data)
            if end == chunk.size and chunk.size % BLOCK:
                yield b"\0" * (BLOCK - chunk.size % BLOCK)
        yield b"\0" * (2 * BLOCK)
    except Exception:  # the client cannot be told now; the missing end marker says it
        return
