"""Copies each container's output into its job's log file while it runs, so the log outlives
the container. The engine replays a container's output identically from its start, so the
file's size says how much of a replay to skip: a copy resumed after any interruption (a cut
stream, a restarted service) neither repeats nor loses a byte. Past its cap the log ends with
the note of executors.log_cap, and what follows is read and dropped."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

from trainyard.domain.log_cap import DEFAULT_MAX_LOG_BYTES, is_cut, keep
from trainyard.executors.docker_streams import close_stream, container_output, interrupt

log = logging.getLogger(__name__)

ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)
LOCK_WAIT = 10.0  # how long a one-off copy waits for another copy of the same log
RESUME_DELAY = 0.5  # before following again a stream that broke while the container runs
CLOSE_WAIT = 5.0  # how long closing waits for the followers, all together


@dataclass
class _Follower:
    thread: threading.Thread
    complete: bool = False  # it followed the output to the container's end


class LogCopier:
    def __init__(self, api: docker.APIClient, stream_api: docker.APIClient,
                 max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> None:
        self._api = api  # bounded calls
        self._max_bytes = max_bytes  # the log is cut there (log_cap)
        self._stream_api = stream_api  # follows, which may be quiet for hours
        self._lock = threading.Lock()
        self._followers: dict[str, _Follower] = {}
        self._file_locks: dict[str, threading.Lock] = {}
        self._complete: set[str] = set()  # handles whose log file holds all their output
        self._streams: dict[str, Any] = {}  # handle -> the stream its follower reads
        self._closed = threading.Event()

    def close(self) -> None:
        """Stop following: each follower's stream is cut, and the followers are waited for.
        A container that runs on is followed again, from where its log ends, by whoever
        adopts it next."""
        self._closed.set()
        with self._lock:
            streams = list(self._streams.values())
            threads = [follower.thread for follower in self._followers.values()]
        for stream in streams:
            interrupt(stream)
        deadline = time.monotonic() + CLOSE_WAIT
        for thread in threads:
            if thread.is_alive():  # one registered but not started yet cannot be joined
                thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def follow(self, handle: str, log_path: Path) -> None:
        """Copy the container's output as it comes, until the container ends."""
        with self._lock:
            current = self._followers.get(handle)
            if self._closed.is_set() or handle in self._complete or \
                    (current is not None and current.thread.is_alive()):
                return
            thread = threading.Thread(target=self._follow, args=(handle, log_path),
                                      name=f"logs-{handle}", daemon=True)
            self._followers[handle] = _Follower(thread)
        thread.start()

    def drain(self, handle: str, log_path: Path, wait: float) -> bool:
        """For a container that has ended: True once the log holds all its output. Waits up to
        `wait` for a follower still writing; False if it is still at it, or the engine could
        not be asked for the rest."""
        with self._lock:
            if handle in self._complete:
                return True
            follower = self._followers.get(handle)
        if follower is not None:
            follower.thread.join(timeout=wait)
            if follower.thread.is_alive():
                return False
        if not (follower is not None and follower.complete) and \
                not self._copy(handle, log_path, follow=False):
            return False
        with self._lock:
            self._complete.add(handle)
        return True

    def forget(self, handle: str) -> None:
        with self._lock:
            self._followers.pop(handle, None)
            self._file_locks.pop(handle, None)
            self._complete.discard(handle)

    def _follow(self, handle: str, log_path: Path) -> None:
        while not self._closed.is_set():
            clean = self._copy(handle, log_path, follow=True)
            if self._closed.is_set():
                return
            try:
                running = self._api.inspect_container(handle)["State"]["Running"]
            except ENGINE_ERRORS:
                return  # gone or unreachable: a later drain or follow picks it up
            if not running:
                with self._lock:
                    follower = self._followers.get(handle)
                    if follower is not None and clean:
                        follower.complete = True
                return
            self._closed.wait(RESUME_DELAY)  # the stream broke while the container runs on

    def _copy(self, handle: str, log_path: Path, follow: bool) -> bool:
        """Append what the engine holds beyond what the file has; True if the engine's
        stream ended by itself."""
        with self._lock:
            file_lock = self._file_locks.setdefault(handle, threading.Lock())
        if not file_lock.acquire(timeout=-1 if follow else LOCK_WAIT):
            log.warning("log of %s may be incomplete: another copy of it is stuck", handle)
            return False
        stream: Any = None
        try:
            with log_path.open("ab") as out:
                skip = out.tell()
                if is_cut(skip, self._max_bytes) and not follow:
                    return True  # cut: nothing more is kept
                stream = self._open(handle, follow)
                if stream is None:
                    return False
                for chunk in stream:
                    if skip >= len(chunk):
                        skip -= len(chunk)
                        continue
                    # Once cut, a follow reads on (discarding) to the container's end.
                    data = keep(chunk[skip:], out.tell(), self._max_bytes)
                    if data:
                        out.write(data)
                        out.flush()
                    skip = 0
            return True
        except (*ENGINE_ERRORS, ValueError) as exc:
            log.info("log copy of %s stopped: %s", handle, exc)
            return False
        finally:
            if stream is not None:
                self._done_with(handle, stream)
            file_lock.release()

    def _open(self, handle: str, follow: bool) -> Iterable[bytes] | None:
        """The container's output from its start; None once closing began. A follow's
        stream is known, so that closing can cut it."""
        api = self._stream_api if follow else self._api
        stream: Iterable[bytes] = container_output(api, handle, follow)
        if follow:
            with self._lock:
                if not self._closed.is_set():
                    self._streams[handle] = stream
                    return stream
            close_stream(stream)
            return None
        return stream

    def _done_with(self, handle: str, stream: Any) -> None:
        with self._lock:
            if self._streams.get(handle) is stream:
                del self._streams[handle]
        close_stream(stream)
