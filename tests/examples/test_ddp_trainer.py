"""examples/ddp_trainer.py for real: two gloo workers through the local gang launcher on the
demo's digits data; both ranks end with identical weights, rank 0 writes the model and the
metrics, and a second run resumes from the checkpoint the first one left."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAINER = REPO / "examples" / "ddp_trainer.py"
# "[rank R] " is the launcher's prefix; a plain process prints the line without it.
DIGEST = re.compile(r"^(?:\[rank (\d+)\] )?weights-sha256 ([0-9a-f]{64}) rank (\d+)$",
                    re.MULTILINE)
# What a job inherits from whoever runs the tests must not leak into the workers.
CONTRACT = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TF_CONFIG",
            "HYPERPARAMETERS", "TRAINING_DATA_PATH", "MODEL_SAVE_PATH", "CHECKPOINT_PATH",
            "METRICS_PATH", "JOB_ID", "LR", "EPOCHS", "BATCH_SIZE", "SEED", "HIDDEN")


def run_job(data: Path, job: Path, epochs: int, workers: int | None = 2) -> str:
    """One job's run, with its own model, checkpoint and metrics paths under `job`."""
    env = {k: v for k, v in os.environ.items() if k not in CONTRACT}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"),
                                                        env.get("PYTHONPATH")])),
               TRAINING_DATA_PATH=str(data), MODEL_SAVE_PATH=str(job / "model"),
               CHECKPOINT_PATH=str(job / "checkpoint"), METRICS_PATH=str(job / "metrics.jsonl"),
               HYPERPARAMETERS=json.dumps({"EPOCHS": str(epochs), "SEED": "0"}))
    trainer = f"{sys.executable} {TRAINER}"
    command = ([sys.executable, TRAINER] if workers is None else
               [sys.executable, "-m", "trainyard.runtime", "launch", "--workers", str(workers),
                "--", trainer])
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def digests(output: str) -> dict[int, str]:
    found = {int(rank): digest for prefix, digest, rank in DIGEST.findall(output)
             if prefix in ("", rank)}
    assert found, output
    return found


def metrics(job: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (job / "metrics.jsonl").read_text().splitlines()]


def test_two_workers_end_identical_and_a_second_run_resumes(digits: Path,
                                                            tmp_path: Path) -> None:
    job = tmp_path / "job"
    first = run_job(digits, job, epochs=2)
    ranks = digests(first)
    assert set(ranks) == {0, 1} and ranks[0] == ranks[1], first
    stored = json.loads((job / "model" / "weights-sha256.json").read_text())
    assert stored == {"ranks": {"0": ranks[0], "1": ranks[0]}, "identical": True}
    assert (job / "model" / "model.pt").stat().st_size > 0
    meta = json.loads((job / "model" / "model.json").read_text())
    assert (meta["world_size"], meta["epochs_trained"]) == (2, 2)
    assert meta["weights_sha256"] == ranks[0]
    points = metrics(job)
    assert [p["step"] for p in points] == [1, 2]  # rank 0 alone logs, once per epoch
    assert all({"loss", "test_accuracy"} <= set(p) for p in points)
    assert points[-1]["test_accuracy"] > 0.7 and points[-1]["loss"] < points[0]["loss"]
    assert (job / "checkpoint" / "ddp-checkpoint.pt").is_file()

    # The same job again with one epoch more: it starts after the checkpoint's epoch.
    second = run_job(digits, job, epochs=3)
    assert "[rank 0] rank 0: resuming from epoch 3 (checkpoint of epoch 2)" in second, second
    assert "[rank 1] rank 1: resuming from epoch 3" in second, second
    assert "epoch   1/3" not in second and "epoch   3/3" in second, second
    assert [p["step"] for p in metrics(job)] == [1, 2, 3]
    resumed = digests(second)
    assert resumed[0] == resumed[1] != ranks[0]
    assert json.loads((job / "model" / "model.json").read_text())["epochs_trained"] == 3

    # Resuming loses nothing (model, optimizer and sampler state): three epochs in one go
    # give the very same weights.
    straight = digests(run_job(digits, tmp_path / "straight", epochs=3))
    assert straight == resumed


def test_it_runs_as_one_plain_process_without_world_size(digits: Path, tmp_path: Path) -> None:
    output = run_job(digits, tmp_path, epochs=1, workers=None)
    assert set(digests(output)) == {0}, output
    assert "resuming" not in output
    assert [p["step"] for p in metrics(tmp_path)] == [1]
    stored = json.loads((tmp_path / "model" / "weights-sha256.json").read_text())
    assert list(stored["ranks"]) == ["0"] and (tmp_path / "model" / "model.pt").is_file()
