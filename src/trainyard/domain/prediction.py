"""A waiting job's predicted start, as the forecast (sim/forecast.py) makes it and every
surface shows it: a median, a 90% bound, when it was made, or why the job cannot start."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class PredictedStart:
    """Times are seconds since the epoch. `cannot_start` is set, and the times None, when
    the job cannot start under the policy as it stands; the times are None too when the
    forecast's horizon ended before the job started in half (p50) or a tenth (p90) of its
    roll-forwards."""

    as_of: float  # when the snapshot it rolled forward was taken
    p50: float | None = None
    p90: float | None = None
    cannot_start: str = ""
    horizon_s: float = 0.0  # how far ahead the forecast looked

    def __post_init__(self) -> None:
        for name in ("p50", "p90"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite time, got {value}")


def _about(seconds: float) -> str:
    """A wait as people round it: "under a minute", "about 35 min", "about 3 h", "about 2 d"."""
    if seconds < 60:
        return "under a minute"
    minutes = seconds / 60
    if minutes < 90:
        return f"about {round(minutes)} min"
    hours = minutes / 60
    if hours < 36:
        return f"about {hours:.1f} h".replace(".0 h", " h")
    return f"about {round(hours / 24)} d"


def _clock(at: float, now: float) -> str:
    """A time of day, with the date when it is not today (local time)."""
    when, today = time.localtime(at), time.localtime(now)
    if (when.tm_year, when.tm_yday) == (today.tm_year, today.tm_yday):
        return time.strftime("%H:%M", when)
    return time.strftime("%Y-%m-%d %H:%M", when)


def describe(prediction: PredictedStart, now: float) -> str:
    """"expected to start in about 35 min; 9 in 10 chances by 16:40"."""
    if prediction.cannot_start:
        return f"cannot start: {prediction.cannot_start}"
    horizon = f"not within the next {_about(prediction.horizon_s).removeprefix('about ')}" \
        if prediction.horizon_s else "not within the forecast's horizon"
    if prediction.p50 is None:
        return f"expected to start {horizon}"
    wait = max(0.0, prediction.p50 - now)
    first = "expected to start soon" if wait < 60 else f"expected to start in {_about(wait)}"
    if prediction.p90 is None:
        return f"{first}; 9 in 10 chances {horizon}"
    return f"{first}; 9 in 10 chances by {_clock(max(prediction.p90, now), now)}"
