"""A stream that fails after its headers went: the client hears an `error` event with the
error body, not a cut connection; a tar that fails midway is left without its end marker."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import grpc

from tests.web.rest import events
from trainyard.v1 import training_pb2 as pb
from trainyard.web import streams
from trainyard.web.transcode import Aborted


def _failing_after_one() -> Iterator[Any]:
    yield pb.LogChunk(data=b"first line\n", offset=0)
    raise Aborted(grpc.StatusCode.NOT_FOUND, "job 'x' not found")


async def _collect(make: Any) -> bytes:
    active = threading.Event()
    active.set()
    pump = streams.Pump(_failing_after_one(), active)
    body = b"".join([part async for part in make(pump)])
    assert not active.is_set()  # the servicer's loop is told the stream is over
    return body


def test_an_error_midway_is_an_error_event() -> None:
    body = asyncio.run(_collect(lambda pump: streams.sse(pump, streams.log_events())))
    got = events(body)
    assert [e.kind for e in got] == ["log", "error"]
    assert got[0].data == {"offset": 0, "text": "first line\n"} and got[0].id == "11"
    assert got[1].data == {"error": {"code": "NOT_FOUND", "status": 404,
                                     "message": "job 'x' not found"}}


def test_a_tar_cut_midway_has_no_end_marker() -> None:
    def chunks(pump: streams.Pump) -> Any:
        return streams.tar(pump)

    async def run() -> bytes:
        active = threading.Event()
        active.set()

        def failing() -> Iterator[Any]:
            yield pb.ModelFileChunk(path="w.bin", size=1024, offset=0, data=b"x" * 512)
            raise Aborted(grpc.StatusCode.INTERNAL, "disk gone")

        return b"".join([part async for part in chunks(streams.Pump(failing(), active))])

    body = asyncio.run(run())
    assert body.endswith(b"x" * 512) and not body.endswith(b"\0" * 1024)
