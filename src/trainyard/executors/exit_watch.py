"""Processes watched for their end, all from one thread of the service that polls their
pidfds: a launch then hands its process over without starting a thread of its own (a
thread's start waits for the new thread to run, most of a millisecond on a busy host).

A pidfd becomes readable once its process has ended, whoever its parent is, and it names
that process and no other, so a recycled pid is never mistaken for it. Where the kernel
has no pidfd, watch() says so and the caller waits its own way."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class ExitWatch:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._new: dict[int, Callable[[], None]] = {}  # pidfd -> called once it ended
        self._wake_read, self._wake_write = os.pipe()
        # A wake-up already waiting is enough: a full pipe never blocks a launch.
        os.set_blocking(self._wake_write, False)
        self._thread: threading.Thread | None = None

    def watch(self, pid: int, ended: Callable[[], None]) -> bool:
        """Call `ended` on the watching thread once process `pid` has ended (at once if it
        has already). False where no pidfd could be opened: nothing is then watched."""
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            return False
        with self._lock:
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="exit-watch", daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # no thread to be had: the caller waits its own way
                    os.close(fd)
                    return False
                self._thread = thread
            self._new[fd] = ended
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_write, b"\0")  # the watching thread takes it into its poll
        return True

    def _run(self) -> None:
        # Only this thread touches the poller; others hand pidfds over through _new.
        poller = select.poll()
        poller.register(self._wake_read, select.POLLIN)
        watched: dict[int, Callable[[], None]] = {}
        while True:
            for fd, _events in poller.poll():
                if fd == self._wake_read:
                    os.read(self._wake_read, 4096)
                    with self._lock:
                        new, self._new = self._new, {}
                    for added in new:
                        poller.register(added, select.POLLIN)
                    watched.update(new)
                    continue
                ended = watched.pop(fd)
                poller.unregister(fd)
                os.close(fd)
                try:
                    ended()
                except Exception:  # one watcher's trouble must not end the watching
                    log.exception("handling a process's end failed")


_shared: ExitWatch | None = None
_shared_lock = threading.Lock()


def exit_watch() -> ExitWatch:
    """The one watch of this process, shared by its executors."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ExitWatch()
        return _shared
