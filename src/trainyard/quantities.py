"""Durations and sizes as users type them ("90s", "1h30m", "2d"; "512M", "4G", "4Gi"), read in
one place for the command line, the SDK and the policy file. Pure and outside every layer,
so that the client side (which loads nothing of the server) reads them as the server does."""

from __future__ import annotations

import math
import re

_DURATION_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])")
_DURATION = re.compile(rf"(?:{_DURATION_PART.pattern})+\s*")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

# Every suffix is a power of 1024, as Docker reads "512m" and "4g" and Kubernetes "4Gi";
# Kubernetes' decimal "4G" thus gets 4 GiB, a little more than it asked, never less.
# Sizes are kept in MiB.
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?)b?\s*", re.IGNORECASE)
_POWER = {"": 2, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
MIB = 1024 * 1024
DURATION_HINT = 'a duration like "90s", "10m", "1h30m", "2d" or "1w"'
SIZE_HINT = 'a size like "512M", "4G", "4Gi" or a number of MiB'


def duration_seconds(text: str, *, bare_number: bool = True) -> float | None:
    """"1h30m" as 5400.0 seconds; a bare number is seconds (unless `bare_number` is false).
    None when it is neither."""
    if _DURATION.fullmatch(text):
        total = sum(float(amount) * UNIT_SECONDS[unit]
                    for amount, unit in _DURATION_PART.findall(text))
        return total if math.isfinite(total) else None
    if not bare_number:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def size_mib(text: str) -> int | None:
    """"4G", "4g" or "4Gi" as 4096 MiB, "512M" as 512; a bare number is MiB (as --memory
    always took). Rounded up to whole MiB; None when it is no size."""
    match = _SIZE.fullmatch(text)
    if match is None:
        return None
    amount, unit = float(match.group(1)), match.group(2).lower()
    size_bytes = amount * 1024 ** _POWER[unit]
    if not math.isfinite(size_bytes):
        return None
    return int(math.ceil(size_bytes / MIB - 1e-9))


def describe_duration(seconds: float) -> str:
    """Seconds as people say them: "2 h", "90 s", "1 h 30 min", "2 d"."""
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:g} s" if whole != seconds else f"{whole} s"
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        count, whole = divmod(whole, size)
        if count:
            parts.append(f"{count} {unit}")
    return " ".join(parts[:2])


def hours(value: float) -> str:
    """Hours as a sentence writes them: thousands separated, whole from 100 up, else to a
    tenth ("982", "1,000", "2.5")."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    text = f"{value:,.1f}"
    return text[:-2] if text.endswith(".0") else text


def period_words(seconds: float) -> str:
    """"7 days", "24 hours", "day": how "in the last ..." reads."""
    for unit, size in (("day", 86400.0), ("hour", 3600.0), ("minute", 60.0)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return unit if count == 1 else f"{count:,} {unit}s"
    return describe_duration(seconds)
