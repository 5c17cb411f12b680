"""Reading the metrics a job appends to METRICS_PATH, one JSON object a line."""

from __future__ import annotations

import json
import math
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


def read_new_metrics(path: Path, offset: int, *, final: bool = False) -> MetricsBatch:
    """Parse complete lines after offset. A trailing partial line waits for the next pass,
    unless final (the writer has exited), when it is parsed too."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read(MAX_READ_BYTES)
    except FileNotFoundError:
        return MetricsBatch([], 0, offset)
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
