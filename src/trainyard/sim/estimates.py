"""How long a job will run, learned from the jobs that finished before it.

The estimator looks for the finished jobs most like the one asked about, in this order,
and takes the first group with at least MIN_SAMPLES of them:

1. the same user and algorithm (the job's `algorithm` label, else its name);
2. the same program (its image, else its command);
3. the same queue;
4. every finished job.

With none at all it assumes DEFAULT_RUN_S. The group's run times (the seconds each job
ran over all its attempts, at most MAX_SAMPLES of the most recent) are the distribution a
forecast draws from: one of them at random, spread by a little noise (JITTER), so that a
group of one repeated value still gives a bound. A job's time limit caps every draw.

A running job's remaining time is drawn given how long it has run: from the group's run
times longer than that, less what it has run. A job that has outrun every one of them is
past what history knows; it is given about half as long again as it has run (a draw of
OUTRUN_SPREAD around that), the one guess that grows with the evidence.

Only jobs that finished are read, so no estimate sees the future of a job still waiting or
running: a forecast never knows any job's true run time.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

MIN_SAMPLES = 3
MAX_SAMPLES = 200  # per group, the most recent
DEFAULT_RUN_S = 3600.0
JITTER = 0.1  # the sigma of the log-normal noise on each draw
OUTRUN_MEDIAN = 0.5  # a job past every sample: remaining is this times what it has run...
OUTRUN_SPREAD = 1.0  # ...times log-normal noise of this sigma
MIN_RUN_S = 1.0


@dataclass(frozen=True)
class JobTraits:
    """What the estimator knows of a job before it ends."""

    user: str = ""
    algorithm: str = ""  # its `algorithm` label, else its name
    program: str = ""  # its image, else its command
    queue: str = ""
    time_limit_s: float | None = None


@dataclass(frozen=True)
class FinishedJob:
    traits: JobTraits
    run_s: float  # seconds it ran over all its attempts
    finished_at: float


@dataclass(frozen=True)
class RunTimes:
    """The run times a forecast draws one job's from."""

    samples: tuple[float, ...]  # sorted
    source: str  # which group they are: "user and algorithm", "program", "queue", "all"...
    cap: float | None = None  # the job's time limit
    jitter: float = JITTER  # 0: the samples exactly (a run time known in advance)

    def draw(self, rng: random.Random) -> float:
        """A whole run's length."""
        value = rng.choice(self.samples) * math.exp(rng.gauss(0.0, self.jitter))
        return self._capped(max(MIN_RUN_S, value))

    def draw_remaining(self, rng: random.Random, elapsed: float) -> float:
        """What is left of a run that has lasted `elapsed` seconds so far."""
        longer = bisect.bisect_right(self.samples, elapsed)
        if longer < len(self.samples):
            total = rng.choice(self.samples[longer:]) * \
                math.exp(abs(rng.gauss(0.0, self.jitter)))
        else:
            total = elapsed * (1 + OUTRUN_MEDIAN * math.exp(rng.gauss(0.0, OUTRUN_SPREAD)))
        return max(0.0, self._capped(max(total, elapsed + MIN_RUN_S)) - elapsed)

    def median(self) -> float:
        return self._capped(self.samples[len(self.samples) // 2])

    def _capped(self, value: float) -> float:
        return value if self.cap is None else min(value, self.cap)


class RunTimeEstimator:
    """Run-time distributions for jobs, from the finished ones (see the module's text)."""

    def __init__(self, history: Iterable[FinishedJob], *, min_samples: int = MIN_SAMPLES,
                 max_samples: int = MAX_SAMPLES, default_s: float = DEFAULT_RUN_S) -> None:
        self.min_samples = max(1, min_samples)
        self.default = (default_s,)
        groups: dict[tuple[str, ...], list[tuple[float, float]]] = defaultdict(list)
        for job in history:
            if not job.run_s > 0 or not math.isfinite(job.run_s):
                continue
            for key in _keys(job.traits):
                groups[key].append((job.finished_at, job.run_s))
        self._groups: dict[tuple[str, ...], tuple[float, ...]] = {}
        for key, runs in groups.items():
            runs.sort()
            self._groups[key] = tuple(sorted(run for _, run in runs[-max_samples:]))
        self._cache: dict[JobTraits, RunTimes] = {}

    def run_times(self, traits: JobTraits) -> RunTimes:
        found = self._cache.get(traits)
        if found is None:
            found = self._cache[traits] = self._find(traits)
        return found

    def _find(self, traits: JobTraits) -> RunTimes:
        for key in _keys(traits):
            samples = self._groups.get(key, ())
            if len(samples) >= self.min_samples:
                return RunTimes(samples, _SOURCES[key[0]], traits.time_limit_s)
        return RunTimes(self.default, "default", traits.time_limit_s)


_SOURCES = {"ua": "user and algorithm", "p": "program", "q": "queue", "*": "all"}


def _keys(traits: JobTraits) -> list[tuple[str, ...]]:
    """The groups a job belongs to, most alike first; a group by an unknown trait is none."""
    keys: list[tuple[str, ...]] = []
    if traits.user and traits.algorithm:
        keys.append(("ua", traits.user, traits.algorithm))
    if traits.program:
        keys.append(("p", traits.program))
    if traits.queue:
        keys.append(("q", traits.queue))
    keys.append(("*",))
    return keys
