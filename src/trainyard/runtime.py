"""For training code: read the container contract and write metrics. Standard library only,
so it can be copied into any image."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def _path(name: str, default: str) -> Path:
    return Path(os.environ.get(name) or default)


def job_id() -> str:
    return os.environ.get("JOB_ID", "local")


def data_path() -> Path:
    """Read-only directory holding the job's dataset version."""
    return _path("TRAINING_DATA_PATH", "data")


def model_path() -> Path:
    """Directory whose files become the model artifact when the job succeeds."""
    path = _path("MODEL_SAVE_PATH", "model")
    path.mkdir(parents=True, exist_ok=True)
    return path


def checkpoint_path() -> Path:
    """Directory kept across retries and preemptions."""
    path = _path("CHECKPOINT_PATH", "checkpoint")
    path.mkdir(parents=True, exist_ok=True)
    return path


def metrics_path() -> Path:
    return _path("METRICS_PATH", "metrics.jsonl")


def hyperparameters() -> dict[str, str]:
    """All hyperparameters, as the strings they were submitted as."""
    raw = os.environ.get("HYPERPARAMETERS", "{}")
    value: Any = json.loads(raw)
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def hyperparameter(name: str, default: str | None = None) -> str | None:
    return hyperparameters().get(name, default)


def log_metric(step: int | None = None, **values: float) -> None:
    """Append one line to METRICS_PATH: log_metric(step=3, loss=0.2, accuracy=0.91)."""
    record: dict[str, Any] = {} if step is None else {"step": int(step)}
    for key, value in values.items():
        record[key] = float(value)
    line = json.dumps(record, separators=(",", ":")) + "\n"
    # One write of a whole line with O_APPEND keeps lines intact even with several writers.
    fd = os.open(metrics_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
