"""The engine's event stream for one service's containers: it reports container ends as
they happen and vouches for containers known to be running, so that following a running
job costs no call to the engine. Whatever it cannot vouch for is inspected instead."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import docker

from trainyard.executors.docker_streams import close_stream, interrupt

log = logging.getLogger(__name__)

# A vouch expires, so that even an end the stream failed to deliver is seen within this.
VOUCH_TTL = 30.0
MAX_END_MARKS = 4096
# An engine that shuts down stops its containers first (TERM, KILL after their stop timeout)
# and closes the stream after: a container killed by a signal this shortly before the break
# was stopped by the engine, not by its job.
SHUTDOWN_WINDOW = 30.0
SIGNAL_EXITS = frozenset({"137", "143"})  # SIGKILL, SIGTERM
Token = tuple[int, int]  # (subscription, events seen): when an inspect was asked


class EngineEvents:
    def __init__(self, api: docker.APIClient, label_filter: str,
                 on_end: Callable[[str], None], on_connect: Callable[[], None]) -> None:
        self._api = api
        self._filters = {"type": "container", "label": label_filter}
        self._on_end = on_end
        self._on_connect = on_connect
        self._lock = threading.Lock()
        self._connected = False
        self._subscription = 0
        self._seen = 0  # events received: orders an end against an inspect
        self._vouched: dict[str, float] = {}  # handle -> when it was last known running
        self._ended: OrderedDict[str, int] = OrderedDict()  # handle -> event number of its end
        self._interrupted: set[str] = set()  # vouched when the stream broke
        self._signalled: OrderedDict[str, float] = OrderedDict()  # running, then killed: when
        self._response: Any = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="docker-events", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            interrupt(response)
        self._thread.join(timeout=5)

    @property
    def connected(self) -> bool:
        return self._connected

    # --- vouching ------------------------------------------------------------------------

    def token(self) -> Token | None:
        """Take before asking the engine whether a container runs; pass to vouch after."""
        with self._lock:
            return (self._subscription, self._seen) if self._connected else None

    def vouch(self, handle: str, token: Token | None) -> None:
        """The engine said `handle` runs, in an answer asked for at `token`. Vouch for it
        only if the stream was subscribed before that and has reported no end since."""
        with self._lock:
            if token is None or not self._connected or token[0] != self._subscription:
                return
            ended = self._ended.get(handle)
            if ended is not None:
                if ended > token[1]:
                    return  # it ended after the engine answered: the answer is stale
                del self._ended[handle]
            self._vouched[handle] = time.monotonic()
            self._interrupted.discard(handle)

    def vouches_for(self, handle: str) -> bool:
        with self._lock:
            since = self._vouched.get(handle)
            return self._connected and since is not None and \
                time.monotonic() - since < VOUCH_TTL

    def interrupted(self, handle: str) -> bool:
        """The stream broke while this container was known to run, or just after it was
        killed by a signal (an engine restart)."""
        with self._lock:
            return handle in self._interrupted

    def forget(self, handle: str) -> None:
        with self._lock:
            self._vouched.pop(handle, None)
            self._ended.pop(handle, None)
            self._interrupted.discard(handle)
            self._signalled.pop(handle, None)

    # --- the stream ----------------------------------------------------------------------

    def _run(self) -> None:
        backoff = 0.2
        while not self._stop.is_set():
            events: Any = None
            try:
                events = self._api.events(decode=True, filters=self._filters)
                self._response = events
                if self._stop.is_set():  # opened while closing, after its interrupt
                    break
                with self._lock:
                    # Ends before this moment were not seen: inspect each container again.
                    self._vouched.clear()
                    self._subscription += 1
                    self._connected = True
                backoff = 0.2
                self._on_connect()
                for event in events:
                    self._on_event(event)
            except Exception as exc:  # any failure: fall back to inspect, then reconnect
                if not self._stop.is_set():
                    log.debug("Docker event stream: %s", exc)
            finally:
                if events is not None:  # a stream cut off still holds its socket
                    self._response = None
                    close_stream(events)
            with self._lock:
                was_connected = self._connected
                self._connected = False
                self._interrupted.update(self._vouched)
                self._vouched.clear()
                now = time.monotonic()
                self._interrupted.update(name for name, when in self._signalled.items()
                                         if now - when < SHUTDOWN_WINDOW)
                self._signalled.clear()
            if was_connected and not self._stop.is_set():
                log.warning("lost the Docker event stream; following containers by inspect")
                self._on_end("")  # let the tracker look at every container now
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 5.0)

    def _on_event(self, event: dict[str, Any]) -> None:
        action = event.get("Action") or event.get("status") or ""
        actor = event.get("Actor") or {}
        name = (actor.get("Attributes") or {}).get("name", "")
        if not name or action not in ("die", "oom", "destroy"):
            return
        with self._lock:
            if action == "destroy" and name not in self._vouched:
                return  # the removal of a container already known to have ended
            self._seen += 1
            self._ended[name] = self._seen
            self._ended.move_to_end(name)
            while len(self._ended) > MAX_END_MARKS:
                self._ended.popitem(last=False)
            if action == "die" and name in self._vouched and \
                    (actor.get("Attributes") or {}).get("exitCode") in SIGNAL_EXITS:
                self._signalled[name] = time.monotonic()
                while len(self._signalled) > MAX_END_MARKS:
                    self._signalled.popitem(last=False)
            self._vouched.pop(name, None)
        self._on_end(name)
