"""An in-process signal that the store changed, so waiters wake without polling."""

from __future__ import annotations

import threading


class ChangeFeed:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._version = 0
        self._created = 0

    @property
    def version(self) -> int:
        return self._version

    @property
    def created(self) -> int:
        """How many jobs this process has stored so far (each counted once committed)."""
        return self._created

    def notify(self, *, created: bool = False) -> None:
        """The store changed; `created`: a job was stored."""
        with self._cond:
            self._version += 1
            self._created += created
            self._cond.notify_all()

    def wait(self, since: int, timeout: float) -> int:
        """Block until the version moves past `since` or the timeout passes; return the version."""
        with self._cond:
            self._cond.wait_for(lambda: self._version != since, timeout=timeout)
            return self._version
