"""Each queue's decayed usage, for fair turns between queues of equal priority, kept in the
store so that a restart does not forget who used what."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from trainyard.scheduler import RunningJob
from trainyard.scheduler.queues import decayed_usage
from trainyard.store.usage import UsageStore

log = logging.getLogger(__name__)


class FairShareUsage:
    def __init__(self, store: UsageStore | None, *, clock: Callable[[], float],
                 half_life: Callable[[], float], save_interval: float) -> None:
        self.store = store
        self.clock = clock
        self.half_life = half_life  # the policy's as it is now: a reload may change it
        self.save_interval = save_interval
        self.usage: dict[str, float] = {}  # by queue
        self.at = clock()  # the moment `usage` is as of
        self._saved_at = self.at

    def load(self) -> None:
        """Pick up where the last run left off: the saved usage, as of when it was saved.
        The next advance decays it over the time since, and adds what jobs that kept running
        meanwhile used."""
        if self.store is None:
            return
        try:
            usage, at = self.store.load()
        except Exception:  # fair share starting from zero is better than not starting
            log.exception("could not read the saved fair-share usage; it starts from zero")
            return
        if at is not None:
            self.usage, self.at = usage, min(at, self.clock())

    def save(self) -> None:
        if self.store is None:
            return
        self._saved_at = self.at  # a failed save is tried again after the interval
        try:
            self.store.save(self.usage, self.at)
        except Exception:
            log.exception("could not save the fair-share usage")

    def advance(self, running: Iterable[RunningJob], now: float) -> Mapping[str, float]:
        """The usage at `now`: the old decayed, and what the running jobs used since. Saved
        when the interval has passed since the last save."""
        self.usage = decayed_usage(self.usage, running, max(0.0, now - self.at),
                                   self.half_life())
        self.at = now
        if now - self._saved_at >= self.save_interval:
            self.save()
        return self.usage
