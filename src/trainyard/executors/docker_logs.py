"""Copies each container's output into its job's log file while it runs, so the log outlives
the container. The engine replays a container's output identically from its start, so the
file's size says how much of a replay to skip: a copy resumed after any interruption (a cut
stream, a restarted service) neither repeats nor loses a byte. Past its cap the log ends with
the note of executors.log_cap, and what follows is read and dropped."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import requests.exceptions

from trainyard.domain.log_cap import DEFAULT_MAX_LOG_BYTES, is_cut, keep

log = logging.getLogger(__name__)

ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)
LOCK_WAIT = 10.0  # how long a one-off copy waits for another copy of the same log
RESUME_DELAY = 0.5  # before following again a stream that broke while the container runs


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

    def follow(self, handle: str, log_path: Path) -> None:
        """Copy the container's output as it comes, until the container ends."""
        with self._lock:
            current = self._followers.get(handle)
            if handle in self._complete or (current is not None and current.thread.is_alive()):
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
        while True:
            clean = self._copy(handle, log_path, follow=True)
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
            time.sleep(RESUME_DELAY)  # the stream broke while the container runs on

    def _copy(self, handle: str, log_path: Path, follow: bool) -> bool:
        """Append what the engine holds beyond what the file has; True if the engine's
        stream ended by itself."""
        with self._lock:
            file_lock = self._file_locks.setdefault(handle, threading.Lock())
        if not file_lock.acquire(timeout=-1 if follow else LOCK_WAIT):
            log.warning("log of %s may be incomplete: another copy of it is stuck", handle)
            return False
        try:
            with log_path.open("ab") as out:
                skip = out.tell()
                if is_cut(skip, self._max_bytes) and not follow:
                    return True  # cut: nothing more is kept
                for chunk in self._stream(handle, follow):
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
            file_lock.release()

    def _stream(self, handle: str, follow: bool) -> Iterator[bytes]:
        api = self._stream_api if follow else self._api
        yield from api.logs(handle, stdout=True, stderr=True, stream=True, follow=follow)
