"""Writing received bytes beside receiving them: a thread of its own hashes each chunk and
writes it at its offset, so that the stream and the sha256 and the disk work at once
(hashing and writing both let go of the interpreter lock)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import threading
from typing import Protocol

DEPTH = 8  # chunks in flight, each as large as the service sends them
# Each chunk goes to disk in pieces of this size, as cp does: a write of a whole chunk at once
# makes the kernel take large page-cache folios, which cost far more to fill on some systems.
PIECE = 128 * 1024


# glibc's mallopt parameters: buffers up to MMAP_MAX come from the heap, which gives back
# only what exceeds TRIM_MAX free at its top.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_MAX = 16 * 1024 * 1024
TRIM_MAX = 128 * 1024 * 1024


def reuse_freed_buffers() -> None:
    """Have malloc keep freed megabyte buffers for the next message instead of handing each
    back to the kernel, which would have to fault in and zero fresh pages for every one:
    gRPC and the interpreter allocate every received message anew. glibc only; elsewhere,
    nothing changes."""
    with contextlib.suppress(OSError, AttributeError):
        mallopt = ctypes.CDLL(None).mallopt
        mallopt(_M_MMAP_THRESHOLD, MMAP_MAX)
        mallopt(_M_TRIM_THRESHOLD, TRIM_MAX)


class Digest(Protocol):
    def update(self, data: bytes | memoryview, /) -> None: ...


class BackgroundWriter:
    def __init__(self, depth: int = DEPTH) -> None:
        self._queue: queue.Queue[tuple[int, int, memoryview, Digest] | None] = \
            queue.Queue(depth)
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name="staging-writer", daemon=True)
        self._thread.start()

    def write(self, fd: int, offset: int, data: bytes | memoryview, digest: Digest) -> None:
        """Hash `data` into `digest` and write it at `offset`, after what came before."""
        self._raise()
        self._queue.put((fd, offset, memoryview(data), digest))

    def flush(self) -> None:
        """Every write handed over so far is done; the first failure is raised."""
        self._queue.join()
        self._raise()

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                fd, offset, view, digest = item
                if self._error is None:  # after a failure, the rest is only drained
                    digest.update(view)
                    done = 0
                    while done < len(view):
                        done += os.pwrite(fd, view[done:done + PIECE], offset + done)
            except OSError as exc:
                self._error = exc
            finally:
                self._queue.task_done()
