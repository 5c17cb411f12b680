"""What one admission pass hands the next (scheduler.snapshot.Feed, as the replay keeps
it): each queue's decayed usage, for fair turns between queues of equal priority, kept in
the store so that a restart does not forget who used what; and the last pass's claims."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from trainyard.scheduler import Decisions, RunningJob
from trainyard.scheduler.snapshot import Feed
from trainyard.store.usage import UsageStore

log = logging.getLogger(__name__)


class FairShareUsage:
    def __init__(self, store: UsageStore | None, *, clock: Callable[[], float],
                 half_life: Callable[[], float], save_interval: float) -> None:
        self.store = store
        self.clock = clock
        self.half_life = half_life  # the policy's as it is now: a reload may change it
        self.save_interval = save_interval
        self.feed = Feed(usage_at=clock())
        self._saved_at = self.at

    @property
    def usage(self) -> Mapping[str, float]:
        """By queue, as of `at`."""
        return self.feed.usage

    @usage.setter
    def usage(self, usage: Mapping[str, float]) -> None:
        self.feed = Feed(dict(usage), self.feed.usage_at, self.feed.reclaiming)

    @property
    def at(self) -> float:
        at = self.feed.usage_at
        assert at is not None  # set at construction
        return at

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
            self.feed = Feed(usage, min(at, self.clock()), self.feed.reclaiming)

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
        self.feed = self.feed.accounted(running, now, self.half_life())
        if now - self._saved_at >= self.save_interval:
            self.save()
        return self.usage

    def carry(self, decisions: Decisions) -> None:
        """Hand the next pass what this one decided to carry over (its claims)."""
        self.feed = self.feed.after(decisions)
