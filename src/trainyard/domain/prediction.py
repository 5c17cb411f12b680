"""A waiting job's predicted start, as the forecast (sim/forecast.py) makes it and every
surface shows it: a median, a 90% bound, when it was made, or why the job cannot start."""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainyard.start_wording import start_sentence


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


def describe(prediction: PredictedStart, now: float) -> str:
    """"expected to start in about 35 min; 9 in 10 chances by 16:40", "not expected to
    start within the next 24 h", or "cannot start: <why>" (the words: start_wording.py,
    which the client side shares)."""
    return start_sentence(prediction.p50, prediction.p90, prediction.cannot_start,
                          prediction.horizon_s, now)
