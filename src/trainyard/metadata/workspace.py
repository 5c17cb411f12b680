"""Where each job's files live under the data directory. Pure path arithmetic."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class AttemptPaths:
    root: Path
    workdir: Path
    model_dir: Path
    metrics_path: Path
    log_path: Path
    checkpoint_dir: Path

    def create(self) -> None:
        """Make the attempt's directories and empty files. Each directory is made after its
        parent, so that no mkdir fails first for want of one (a launch waits for these)."""
        for d in (self.root.parent, self.root, self.workdir, self.model_dir,
                  self.checkpoint_dir):
            _make_dir(d)
        self.metrics_path.touch()
        self.log_path.touch()


def _make_dir(path: Path) -> None:
    try:
        os.mkdir(path)
    except FileExistsError:
        if not path.is_dir():  # a file (or a dangling link) in its place: say so
            raise
    except FileNotFoundError:  # its parents too (the runs directory of a new data dir)
        path.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class Workspace:
    data_dir: Path

    @property
    def runs_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def datasets_dir(self) -> Path:
        return self.data_dir / "datasets"

    @property
    def artifacts_dir(self) -> Path:
        return self.data_dir / "artifacts"

    @property
    def code_dir(self) -> Path:
        """Registered algorithms' code directories, each under its content hash, read-only."""
        return self.data_dir / "code"

    def code_of(self, code_hash: str) -> Path:
        return self.code_dir / code_hash

    @property
    def executor_dir(self) -> Path:
        return self.data_dir / "executor"

    @property
    def empty_dataset_dir(self) -> Path:
        return self.data_dir / "empty-dataset"

    def attempt(self, job_id: str, attempt: int) -> AttemptPaths:
        return _attempt_paths(self, job_id, attempt)


@functools.lru_cache(maxsize=1024)
def _attempt_paths(workspace: Workspace, job_id: str, attempt: int) -> AttemptPaths:
    """Made once for the attempts in use: a tracker's pass asks for each active job's (a
    path is a dozen objects to build), and the paths never change."""
    job_dir = workspace.runs_dir / job_id
    root = job_dir / f"attempt-{attempt}"
    return AttemptPaths(
        root=root,
        workdir=root / "work",
        model_dir=root / "model",
        metrics_path=root / "metrics.jsonl",
        log_path=root / "output.log",
        # Kept across attempts so a retried or preempted job can resume.
        checkpoint_dir=job_dir / "checkpoint",
    )
