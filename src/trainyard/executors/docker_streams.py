"""Streams the engine holds open for the service (its events, a container's output), and
how one is ended so that its connection goes with it."""

from __future__ import annotations

import contextlib
from typing import Any


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
