"""Reading the metrics a job appends to METRICS_PATH, one JSON object a line."""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from trainyard.store.records import MetricPoint

MAX_READ_BYTES = 4 << 20  # per pass, so one chatty job cannot stall the tracker
MAX_LINE_BYTES = 64 << 10


@dataclass(frozen=True)
class MetricsBatch:
    points: list[MetricPoint]
    malformed: int
    end_offset: int


def parse_line(line: bytes) -> MetricPoint | None:
    """A point, or None when the line is not a JSON object with at least one number."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(obj, dict):
        return None
    step = obj.get("step")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        return None
    values = {
        str(k)[:128]: float(v)
        for k, v in obj.items()
        if k != "step" and isinstance(v, int | float) and not isinstance(v, bool)
        and math.isfinite(v)
    }
    return MetricPoint(step, values) if values else None


def _read_regular_file(path: Path, offset: int, size: int = MAX_READ_BYTES) -> bytes | None:
    """Up to `size` bytes from offset, or None unless path is a regular file. The job owns
    the path: it may have swapped it for a link, a directory or a FIFO, none of which may
    block or mislead the reader."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.pread(fd, size, offset)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_new_metrics(path: Path, offset: int, *, final: bool = False) -> MetricsBatch:
    """Parse complete lines after offset. A trailing partial line waits for the next pass,
    unless final (the writer has exited), when it is parsed too."""
    # With the byte before offset: a read that starts inside a line is the rest of one
    # already skipped as too long (and counted once), never a line of its own.
    before = 1 if offset > 0 else 0
    data = _read_regular_file(path, offset - before, MAX_READ_BYTES + before)
    if data is None:
        return MetricsBatch([], 0, offset)
    inside, data = data[:before] not in (b"", b"\n"), data[before:]
    if inside:
        newline = data.find(b"\n")
        if newline < 0:  # all of it the same line: skip a whole read, or the writer's last
            done = final or len(data) >= MAX_READ_BYTES
            return MetricsBatch([], 0, offset + len(data) if done else offset)
        return read_new_metrics(path, offset + newline + 1, final=final)
    end = len(data) if final and len(data) < MAX_READ_BYTES else data.rfind(b"\n") + 1
    points: list[MetricPoint] = []
    malformed = 0
    for raw in data[:end].splitlines():
        if not raw.strip():
            continue
        point = parse_line(raw) if len(raw) <= MAX_LINE_BYTES else None
        if point is None:
            malformed += 1
        else:
            points.append(point)
    if end == 0 and len(data) >= MAX_READ_BYTES:
        # One line longer than a whole read: skip it as malformed rather than stall.
        return MetricsBatch([], 1, offset + len(data))
    return MetricsBatch(points, malformed, offset + end)
