"""How a predicted start is said ("expected to start in about 35 min; 9 in 10 chances by
16:40"), from plain numbers. Pure and outside every layer, so that the server's domain and
the client side (which loads nothing of the server) say it in the same words; the
dashboard's jobs.js mirrors it."""

from __future__ import annotations

import time


def about(seconds: float) -> str:
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


def clock(at: float, now: float) -> str:
    """A time of day, with the date when it is not today (local time)."""
    when, today = time.localtime(at), time.localtime(now)
    if (when.tm_year, when.tm_yday) == (today.tm_year, today.tm_yday):
        return time.strftime("%H:%M", when)
    return time.strftime("%Y-%m-%d %H:%M", when)


def ago(seconds: float) -> str:
    """How old something is: "just now", "40 s ago", "3 min ago", "2 h ago", "3 d ago"."""
    if seconds < 1:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds)} s ago"


def start_sentence(p50: float | None, p90: float | None, cannot_start: str,
                   horizon_s: float, now: float) -> str:
    """The sentence for a predicted start (times in epoch seconds, None past the forecast's
    horizon): "expected to start in about 35 min; 9 in 10 chances by 16:40", "not expected
    to start within the next 24 h", or "cannot start: <why>"."""
    if cannot_start:
        return f"cannot start: {cannot_start}"
    within = (f"within the next {about(horizon_s).removeprefix('about ')}" if horizon_s
              else "within the forecast's horizon")
    if p50 is None:
        return f"not expected to start {within}"
    wait = max(0.0, p50 - now)
    first = "expected to start soon" if wait < 60 else f"expected to start in {about(wait)}"
    if p90 is None:
        return f"{first}; 1 in 10 chances or more that it does not start {within}"
    return f"{first}; 9 in 10 chances by {clock(max(p90, now), now)}"


def start_in_brief(p50: float | None, cannot_start: str, horizon_s: float,
                   now: float) -> str:
    """The same for a table's cell: "~35 min", "soon", "> 24 h" or "cannot start"."""
    if cannot_start:
        return "cannot start"
    if p50 is None:
        return f"> {about(horizon_s).removeprefix('about ')}" if horizon_s else "later"
    wait = p50 - now
    return "soon" if wait < 60 else "~" + about(wait).removeprefix("about ")
