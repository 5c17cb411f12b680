"""Retries and time limits: which ended attempts run again, how long each waits first, and
the sentences that say so. Pure rules; the tracker applies them."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.quantities import describe_duration

# Attempts a job may use when neither it nor its queue says: those lost through no fault of
# the job are retried up to this; a failed one only when the job asks.
DEFAULT_MAX_ATTEMPTS = 3
MAX_ATTEMPTS_LIMIT = 100
MAX_RETRY_EXIT_CODES = 32
MAX_DURATION_S = 10 * 365 * 86400.0  # ten years: beyond, a duration is a mistake


@dataclass(frozen=True)
class Backoff:
    """The wait before a retry: `base_s` doubled at each retry, at most `cap_s`, and then
    drawn between half of that and all of it, so that jobs that failed together do not all
    start again at once."""

    base_s: float = 10.0
    cap_s: float = 600.0

    def delay(self, retry: int, draw: float) -> float:
        """Seconds before the `retry`th retry (1 for the first); `draw` is uniform in [0, 1)."""
        ceiling = min(self.cap_s, self.base_s * 2.0 ** min(retry - 1, 60))
        return ceiling * (0.5 + draw / 2)


@dataclass(frozen=True)
class RetryState:
    """What decides whether an ended attempt runs again: the job's rule and how many of its
    attempts counted so far (preempted ones do not: the service stopped them)."""

    max_attempts: int = 1
    retried: int = 0  # attempts lost or failed and retried so far
    on_failure: bool = False
    exit_codes: tuple[int, ...] = ()

    @property
    def counted(self) -> int:
        """The attempt that just ended, counted with those before it."""
        return self.retried + 1

    def allows_another(self) -> bool:
        return self.counted < self.max_attempts

    def retries_failure(self, exit_code: int | None) -> bool:
        """Whether a failed attempt (its code non-zero) is the kind this job retries."""
        return self.on_failure or (exit_code is not None and exit_code in self.exit_codes)


NO_RETRY = RetryState()


def waiting_to_retry(state: RetryState, delay_s: float, ended_run: int, outcome: str) -> str:
    """Why a job waits during its back-off, e.g. "attempt 2 of 3 starts after a 40 s
    back-off; attempt 1 was lost: node n2 failed". Attempts are counted as the job's limit
    counts them; where preemptions made the ended run's number another, it is named too
    ("attempt 1 (run 2) was lost")."""
    ended = f"attempt {state.counted}"
    if ended_run != state.counted:
        ended += f" (run {ended_run})"
    return (f"attempt {state.counted + 1} of {state.max_attempts} starts after a "
            f"{describe_duration(max(1, round(delay_s)))} back-off; {ended} {outcome}")


def time_limit_reached(limit_s: float) -> str:
    return f"time limit of {describe_duration(limit_s)} reached"


def pending_timeout_reached(timeout_s: float) -> str:
    return (f"still waiting after {describe_duration(timeout_s)}, its pending timeout; "
            "cancelled")
