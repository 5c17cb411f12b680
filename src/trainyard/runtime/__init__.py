"""For training code: read the container contract and write metrics. Standard library only,
so it can be copied into any image or shipped beside a job as one zip file.

The package also holds what runs around a job: the gang launcher of multi-worker jobs on
one machine (`gang.py`, `python3 -m trainyard.runtime launch`) and the agent of remote jobs
(`python3 -m trainyard.runtime run -- COMMAND`, see `agent.py`), which alone needs grpcio."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from trainyard.runtime.cli import main
from trainyard.runtime.gang import (
    FRAMEWORKS,
    LOOPBACK,
    framework_env,
    free_ports,
    launch,
    worker_env,
)
from trainyard.runtime.notice import read_notice

__all__ = [
    "FRAMEWORKS", "LOOPBACK", "checkpoint_path", "checkpoint_saved", "data_path",
    "framework_env", "free_ports", "hyperparameter", "hyperparameters", "job_id", "launch",
    "log_metric", "main", "metrics_path", "model_path", "preemption_requested",
    "preemption_signal", "rank",
    "worker_env", "world_size",
]

# The file that counts complete checkpoints: the service reads it on its own host (the last
# checkpoint's time bounds the work a preemption loses), the remote agent to upload them.
CHECKPOINT_SIGNAL = "TRAINYARD_CHECKPOINT_SIGNAL"
# The file whose existence says the job is about to be preempted (domain.notice's names; a
# remote job's agent sets its own, runtime/notice.py the file's format).
PREEMPT_NOTICE = "TRAINYARD_PREEMPT_NOTICE"
# A registered algorithm's code directory, read-only, its working directory (domain.contract).
CODE_PATH = "CODE_PATH"


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


def preemption_requested() -> bool:
    """Whether the job is about to be preempted: its queue's notice came (with SIGUSR1 or
    TERM, as the queue says). Save a checkpoint and call checkpoint_saved(): the job is then
    stopped at once, and its next attempt resumes from checkpoint_path(). Cheap enough to
    ask between batches. A remote job's runtime agent writes the file when the service
    tells it. Always False outside the service."""
    notice = os.environ.get(PREEMPT_NOTICE)
    # One stat, no Path: a trainer asks between every two batches.
    return bool(notice) and os.path.exists(notice)


def preemption_signal() -> str:
    """The signal the notice came with ("SIGUSR1" or "TERM"), "" when there is no notice or
    it came alone. The service writes the file just before it sends the signal, so a job
    that finds the file may wait a moment for the signal the file names."""
    notice = os.environ.get(PREEMPT_NOTICE)
    given = read_notice(Path(notice)) if notice else None
    return "" if given is None or given.signal == "none" else given.signal


def checkpoint_saved() -> None:
    """Say that checkpoint_path() now holds a complete checkpoint. On the service's own host
    it notes the time (a preemption then loses only the work since), and after a preemption
    notice it stops the job at once rather than at its grace's end; a remote job's runtime
    uploads it (the service notes it then, with the same effect), so that the next attempt
    resumes from it wherever it runs. Outside the service this does nothing."""
    signal_file = os.environ.get(CHECKPOINT_SIGNAL)
    if not signal_file:
        return
    path = Path(signal_file)
    try:
        count = int(path.read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        count = 0
    # A counter written by rename: the agent never reads half a write, and sees every call.
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.write_text(f"{count + 1}\n")
    os.replace(partial, path)


def rank() -> int:
    """This worker's rank in a multi-worker job: 0 to world_size() - 1; 0 when alone."""
    return int(os.environ.get("RANK") or 0)


def world_size() -> int:
    """How many workers the job has; 1 for a single-worker job."""
    return int(os.environ.get("WORLD_SIZE") or 1)


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
