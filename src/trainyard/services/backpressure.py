"""The policy's `[limits]` at submit: a cap on each user's and each team's waiting jobs (two
counts from the store's state index) and on their submit rate (a token bucket each, in
memory). A refusal is ResourceExhausted with a sentence, and with the seconds to wait where
it is the rate. A sweep counts as many submits as it has trials.

The waiting count is read before the job is stored, without a lock that would serialize
every submit: submits racing one another may pass a cap by the few in flight."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from trainyard.domain.errors import ResourceExhausted
from trainyard.domain.limits import SubmitLimits
from trainyard.store.jobs import JobStore


@dataclass
class TokenBucket:
    """`per_minute` submits a minute, and as many at once after a quiet minute."""

    per_minute: int
    tokens: float
    at: float

    def wait_for(self, count: int, now: float) -> float:
        """Seconds until `count` tokens are there (0: now); refills first."""
        rate = self.per_minute / 60.0
        self.tokens = min(float(self.per_minute), self.tokens + (now - self.at) * rate)
        self.at = now
        return max(0.0, (count - self.tokens) / rate)


class Backpressure:
    def __init__(self, jobs: JobStore, clock: Callable[[], float] = time.monotonic) -> None:
        self.jobs = jobs
        self.clock = clock
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self._lock = threading.Lock()

    def admit(self, limits: SubmitLimits, user: str, team: str, count: int = 1) -> None:
        """Take `count` submits for `user` (and `team`, "" for none), or refuse them all."""
        if limits.waiting_capped:
            self._check_waiting(limits, user, team, count)
        rates = [(("user", user), limits.submits_per_minute_per_user)]
        if team:
            rates.append((("team", team), limits.submits_per_minute_per_team))
        capped = [(key, cap) for key, cap in rates if cap is not None]
        if not capped:
            return
        with self._lock:
            now = self.clock()
            buckets = [(key, self._bucket(key, cap, now)) for key, cap in capped]
            for (kind, name), bucket in buckets:
                if count > bucket.per_minute:
                    raise ResourceExhausted(
                        f"{kind} {name!r} may submit {bucket.per_minute:,} jobs a minute "
                        f"(limits.submits_per_minute_per_{kind}), fewer than the {count:,} "
                        "of this request; submit them in smaller parts")
                wait = bucket.wait_for(count, now)
                if wait > 0:
                    raise ResourceExhausted(
                        f"{kind} {name!r} has submitted {bucket.per_minute:,} jobs in the last "
                        f"minute, the most the policy allows (limits.submits_per_minute_per_"
                        f"{kind}); try again in {math.ceil(wait)} s", retry_after=wait)
            for _, bucket in buckets:
                bucket.tokens -= count

    def _bucket(self, key: tuple[str, str], per_minute: int, now: float) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None or bucket.per_minute != per_minute:  # new, or the policy changed
            tokens = float(per_minute) if bucket is None else min(bucket.tokens, per_minute)
            bucket = self._buckets[key] = TokenBucket(per_minute, tokens, now)
        return bucket

    def _check_waiting(self, limits: SubmitLimits, user: str, team: str, count: int) -> None:
        mine, theirs = self.jobs.waiting_of(user, team)
        for kind, name, waiting, cap in (("user", user, mine, limits.max_waiting_per_user),
                                         ("team", team, theirs, limits.max_waiting_per_team)):
            if cap is None or not name or waiting + count <= cap:
                continue
            if waiting >= cap:
                said = f"has {waiting:,} waiting jobs, the most the policy allows"
            else:
                said = (f"has {waiting:,} waiting jobs and this request adds {count:,}, more "
                        f"than the {cap:,} the policy allows")
            raise ResourceExhausted(
                f"{kind} {name!r} {said} (limits.max_waiting_per_{kind}); submit again when "
                "some have started or been cancelled")
