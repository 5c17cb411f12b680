"""This service's objects of one resource kind on one cluster, kept current by a list and a
watch from its resourceVersion (bookmarks followed, a new list on 410 Gone or after the API
server was away), on a thread of its own. What changed is announced by name."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from trainyard.executors.kubernetes.api import KubeApi, Obj
from trainyard.executors.kubernetes.errors import ApiAway, ApiRefused
from trainyard.executors.kubernetes.resources import ResourceKind

log = logging.getLogger(__name__)

WATCH_S = 60  # how long one watch request lasts before it is renewed from where it was
BACKOFF_S = (0.2, 0.5, 1.0, 2.0)  # between attempts while the API server is away
GONE = 410


class ResourceWatch:
    def __init__(self, api: KubeApi, resource: ResourceKind, selector: str,
                 on_change: Callable[[str], None]) -> None:
        self.api = api
        self.resource = resource
        self.selector = selector
        self.on_change = on_change
        self._lock = threading.Condition()
        self._objects: dict[str, Obj] = {}
        self._gone: dict[str, Obj] = {}  # the last state of objects deleted since
        self._forgotten: set[str] = set()  # names no one asks after: no tombstone when gone
        self._put_at: dict[str, float] = {}  # created here, when: newer than a list under way
        self._synced_at: float | None = None  # when the cache last matched a full list
        self._away: str | None = None
        self._stop = threading.Event()
        self._response: list[Any] = []
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"watch-{resource.plural}")

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._end_watch()

    def _end_watch(self) -> None:
        for response in list(self._response):
            with contextlib.suppress(Exception):  # already closed
                response.shutdown() if hasattr(response, "shutdown") else response.close()

    def suspect(self, why: str) -> None:
        """Another call found the API server away: say so at once, and list again to know
        (a list that works clears it)."""
        self._away = why
        self._end_watch()

    # -- reads ---------------------------------------------------------------------------

    @property
    def away(self) -> str | None:
        return self._away

    def synced(self, timeout: float = 0.0) -> bool:
        """Whether the cache has been filled by a list (waiting up to `timeout` for one)."""
        with self._lock:
            return self._lock.wait_for(lambda: self._synced_at is not None, timeout)

    def get(self, name: str) -> Obj | None:
        with self._lock:
            return self._objects.get(name)

    def gone(self, name: str) -> Obj | None:
        """The last state of an object deleted since this service started watching."""
        with self._lock:
            return self._gone.get(name)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._objects)

    def put(self, obj: Obj) -> None:
        """An object this service just created: known before its watch event arrives."""
        name = obj["metadata"]["name"]
        with self._lock:
            self._objects.setdefault(name, obj)
            self._put_at[name] = time.monotonic()

    def forget(self, name: str) -> None:
        """No one will ask after the object again: once it is gone, nothing of it is kept."""
        with self._lock:
            if self._gone.pop(name, None) is None and name in self._objects:
                self._forgotten.add(name)

    def _bury(self, name: str, obj: Obj) -> None:
        """Keep a deleted object's last state for whoever asks after it (lock held)."""
        if name in self._forgotten:
            self._forgotten.discard(name)
        else:
            self._gone[name] = obj

    # -- the thread ----------------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                version = self._relist()
                failures = 0
                self._away = None
                while not self._stop.is_set():
                    version = self._watch(version)
                    if not version:
                        break  # 410 Gone: list again
            except ApiAway as exc:
                self._away = str(exc)
            except ApiRefused as exc:
                self._away = f"the API server refuses to list {self.resource.plural}: {exc}"
            except Exception:
                log.exception("watching %s failed", self.resource.plural)
                self._away = f"watching {self.resource.plural} failed"
            if self._stop.is_set():
                return
            if self._away is not None:
                log.warning("%s", self._away)
            self._stop.wait(BACKOFF_S[min(failures, len(BACKOFF_S) - 1)])
            failures += 1

    def _relist(self) -> str:
        began = time.monotonic()
        items, version = self.api.list(self.resource, self.selector)
        fresh = {obj["metadata"]["name"]: obj for obj in items}
        with self._lock:
            # Created while the list was under way: newer than the list, not gone.
            fresh.update({n: self._objects[n] for n, at in self._put_at.items()
                          if at >= began and n not in fresh and n in self._objects})
            self._put_at = {n: at for n, at in self._put_at.items() if at >= began}
            vanished = {n: o for n, o in self._objects.items() if n not in fresh}
            changed = [n for n, o in fresh.items() if self._objects.get(n) != o]
            for name, obj in vanished.items():
                self._bury(name, obj)
            self._objects = fresh
            self._synced_at = time.monotonic()
            self._lock.notify_all()
        for name in [*vanished, *changed]:
            self.on_change(name)
        return version

    def _watch(self, version: str) -> str:
        """Follow events until the server ends the watch: the version to go on from, or ""
        when it has expired (410)."""
        self._response.clear()
        for event in self.api.watch(self.resource, self.selector, version, WATCH_S,
                                    self._response):
            if self._stop.is_set():
                return version
            kind, obj = event.get("type"), event.get("object") or {}
            meta = obj.get("metadata") or {}
            if kind == "ERROR":
                if obj.get("code") == GONE:
                    return ""
                raise ApiAway(f"the watch of {self.resource.plural} failed: "
                              f"{obj.get('message', '')}")
            version = str(meta.get("resourceVersion") or version)
            if kind == "BOOKMARK":
                continue
            name = str(meta.get("name", ""))
            with self._lock:
                if kind == "DELETED":
                    self._objects.pop(name, None)
                    self._bury(name, obj)
                else:
                    self._objects[name] = obj
            self.on_change(name)
        return version
