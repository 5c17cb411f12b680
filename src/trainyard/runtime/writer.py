"""Writing received bytes beside receiving them: a thread of its own writes each chunk at its
offset, so that the stream, the sha256 and the disk work at once (hashing and writing both
let go of the interpreter lock)."""

from __future__ import annotations

import os
import queue
import threading

DEPTH = 8  # chunks in flight: with 1 MiB chunks, 8 MiB of memory at most


class BackgroundWriter:
    def __init__(self, depth: int = DEPTH) -> None:
        self._queue: queue.Queue[tuple[int, int, bytes] | None] = queue.Queue(depth)
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name="staging-writer", daemon=True)
        self._thread.start()

    def write(self, fd: int, offset: int, data: bytes) -> None:
        self._raise()
        self._queue.put((fd, offset, data))

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
                fd, offset, data = item
                if self._error is None:  # after a failure, the rest is only drained
                    view, done = memoryview(data), 0
                    while done < len(data):
                        done += os.pwrite(fd, view[done:], offset + done)
            except OSError as exc:
                self._error = exc
            finally:
                self._queue.task_done()
