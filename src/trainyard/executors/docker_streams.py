"""Streams the engine holds open for the service (its events, a container's output), and
how one is ended so that its connection goes with it."""

from __future__ import annotations

import contextlib
from typing import Any

import docker
from docker.types import CancellableStream


def interrupt(stream: Any) -> None:
    """Wake the reader blocked on a stream, from another thread: the SDK's close shuts the
    socket down. The reader then closes the stream itself; closing the response here would
    race with its read."""
    with contextlib.suppress(Exception):
        stream.close()


def close_stream(stream: Any) -> None:
    """Close a stream the SDK returned, from its reader's thread once it is done with it.

    The SDK's own close shuts the socket down only while the response is still open, and
    leaves the connection to the response. Closing the response as well hands the
    connection back or closes it, whatever state the stream ended in, rather than leaving
    it to the garbage collector."""
    interrupt(stream)
    response = getattr(stream, "_response", None)  # where the SDK's stream keeps it
    if response is not None:
        with contextlib.suppress(Exception):
            response.close()


def container_output(api: docker.APIClient, handle: str, follow: bool) -> Any:
    """A container's output from its start, stdout and stderr as the engine interleaved
    them, as a stream its reader ends with close_stream.

    The SDK's own `logs` asks the engine again, whether the container has a terminal,
    once the stream is open. An engine going away in between fails that request, and the
    failure's traceback holds the open response in a reference cycle: its socket is left
    to the garbage collector. The service's containers never have a terminal, so one
    request serves, and its response is closed if it is refused."""
    params = {"stdout": 1, "stderr": 1, "timestamps": 0, "follow": int(follow), "tail": "all"}
    # The SDK's own helpers, as its `logs` calls them: private, so the SDK's version is
    # pinned and the tests open real streams through this.
    response = api._get(api._url("/containers/{0}/logs", handle), params=params, stream=True)
    try:
        api._raise_for_status(response)
        return CancellableStream(api._multiplexed_response_stream_helper(response), response)
    except BaseException:
        response.close()
        raise
