"""Sweep benchmark: a random search of the demo trainer with and without early stopping.

One run, on one real `trainyard server` (the local-process executor, SQLite in a fresh data
dir, --max-concurrent --parallel, forecasts off), driven by the Python SDK over gRPC on
127.0.0.1. The digits dataset (examples/demo.py) is registered once; then the same random
search (--trials trials, --seed: the same hyperparameters each time; LR log-uniform in
[1e-3, 1], HIDDEN one of 128 / 256,256 / 512,512; EPOCHS --epochs, one CPU each, at most
--parallel at once) runs as three sweeps, one after the other, alone on the server:

  none     every trial runs to its end
  median   --early-stop median on test_accuracy:max (from step 1)
  asha     --early-stop asha, min steps 1, reduction 3

For each: CPU-hours used (what the sweep's budget counts: CPUs x seconds run of all its
trials, as `trainyard sweeps show` reports it), trials stopped early, the best test_accuracy
found, and the wall time. Goal, for each rule against none: at most 0.5x the CPU-hours for a
best test_accuracy within 0.5 points.

Usage: .venv/bin/python bench/sweeps.py [--trials 64] [--epochs 150] [--parallel 2]
                                        [--seed 1] [--rules median,asha] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlib import commit, num, stop_process, verdict, wait_for_port, write_json
from rich.console import Console
from rich.table import Table

from trainyard.client import Client, Resources, TrainSpec

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results" / "sweeps.json"
TRAINER = ROOT / "examples" / "trainer.py"
GOAL_CPU_RATIO = 0.5  # at most this share of the CPU-hours of the sweep without a rule
GOAL_BEST_POINTS = 0.5  # best test_accuracy at most this many points below
HIDDEN = ["128", "256,256", "512,512"]
LR_RANGE = (1e-3, 1.0)
SWEEP_TIMEOUT_S = 1800.0
console = Console()


@contextmanager
def server(workdir: Path, parallel: int) -> Iterator[str]:
    """A `trainyard server` subprocess; yields its address once it serves."""
    port_file, log_path = workdir / "port", workdir / "server.log"
    cmd = [sys.executable, "-m", "trainyard.cli.main", "server", "--port", "0",
           "--http-port", "0", "--port-file", str(port_file),
           "--data-dir", str(workdir / "data"), "--max-concurrent", str(parallel),
           "--predict-every", "0", "--database-url", f"sqlite:///{workdir / 'db.sqlite'}"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        yield f"127.0.0.1:{wait_for_port(proc, port_file, log_path)}"
    finally:
        stop_process(proc)


def register_digits(client: Client, workdir: Path) -> str:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from demo import write_digits
    finally:
        sys.path.remove(str(ROOT / "examples"))
    data = workdir / "digits"
    data.mkdir()
    write_digits(data)
    return client.register_dataset("digits", str(data)).version


def run_sweep(client: Client, dataset: str, rule: str, args: argparse.Namespace
              ) -> dict[str, Any]:
    """Submit one sweep and wait for every trial's end; its figures."""
    template = TrainSpec(
        name=f"bench-{rule}", dataset=f"digits:{dataset}",
        command=f"{sys.executable} {TRAINER}", resources=Resources(cpus=1, memory_mb=512),
        hyperparameters={"EPOCHS": str(args.epochs), "BATCH_SIZE": "64", "SEED": "0",
                         "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    began = time.monotonic()
    sweep_id, _ = client.sweep(
        template, ranges={"LR": (*LR_RANGE, True)}, choices={"HIDDEN": HIDDEN},
        trials=args.trials, seed=args.seed, max_parallel=args.parallel,
        objective="test_accuracy:max", early_stop=rule if rule != "none" else "")
    deadline = began + SWEEP_TIMEOUT_S
    while True:
        shown = client.get_sweep(sweep_id)
        if shown["state"] == "FINISHED":
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"sweep {rule} did not finish in {SWEEP_TIMEOUT_S:.0f} s")
        time.sleep(1.0)
    wall = time.monotonic() - began
    best = shown["best"]
    return {"rule": rule, "sweep_id": sweep_id, "trials": shown["total_trials"],
            "succeeded": shown["trial_counts"].get("SUCCEEDED", 0),
            "stopped_early": shown["stopped_early"],
            "failed": shown["trial_counts"].get("FAILED", 0),
            "cpu_hours": shown["cpu_hours"], "best_test_accuracy": best["best"],
            "best_hyperparameters": {k: v for k, v in best["hyperparameters"].items()
                                     if k in ("LR", "HIDDEN")},
            "wall_seconds": wall}


def compare(base: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """A rule's figures against the sweep without one: its share of the CPU-hours, and how
    many points of test_accuracy its best is below (negative: above)."""
    ratio = run["cpu_hours"] / base["cpu_hours"] if base["cpu_hours"] else None
    gap = (base["best_test_accuracy"] - run["best_test_accuracy"]) * 100
    return {"cpu_ratio": num(ratio, 3), "best_gap_points": num(gap, 2),
            "cpu_pass": None if ratio is None else ratio <= GOAL_CPU_RATIO,
            "best_pass": gap <= GOAL_BEST_POINTS}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rules", default="median,asha",
                        help="the early-stopping rules compared with none, comma-separated")
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rules = [r for r in args.rules.split(",") if r]
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-sweeps-") as tmp, \
            server(Path(tmp), args.parallel) as address, Client(address, timeout=60) as client:
        dataset = register_digits(client, Path(tmp))
        for rule in ("none", *rules):
            console.log(f"sweep {rule}: {args.trials} trials, {args.epochs} epochs, "
                        f"{args.parallel} at once")
            runs[rule] = run_sweep(client, dataset, rule, args)
            console.log(f"  {runs[rule]['cpu_hours'] * 3600:.0f} CPU-seconds, best "
                        f"{runs[rule]['best_test_accuracy']:.4f}")
    base = runs["none"]
    table = Table(title=f"Random search of the demo trainer: {args.trials} trials, "
                        f"{args.epochs} epochs, {args.parallel} at once")
    for col in ("early stop", "CPU-hours", "vs none", "stopped early", "succeeded",
                "best test_accuracy", "vs none (points)", "wall"):
        table.add_column(col, justify="left" if col == "early stop" else "right")
    comparisons = {rule: compare(base, runs[rule]) for rule in rules}
    for rule, run in runs.items():
        vs = comparisons.get(rule)
        table.add_row(rule, f"{run['cpu_hours']:.4f}",
                      "-" if vs is None else f"{vs['cpu_ratio']:.2f}x",
                      str(run["stopped_early"]), str(run["succeeded"]),
                      f"{run['best_test_accuracy']:.4f}",
                      "-" if vs is None else f"{-vs['best_gap_points']:+.2f}",
                      f"{run['wall_seconds']:.0f} s")
    console.print(table)
    goals: dict[str, Any] = {}
    for rule, vs in comparisons.items():
        goals[f"{rule}_cpu_ratio_at_most"] = {"target": GOAL_CPU_RATIO,
                                              "value": vs["cpu_ratio"], "pass": vs["cpu_pass"]}
        goals[f"{rule}_best_gap_points_at_most"] = {
            "target": GOAL_BEST_POINTS, "value": vs["best_gap_points"],
            "pass": vs["best_pass"]}
    for name, goal in goals.items():
        console.print(f"{name}: {goal['value']} (goal {goal['target']}) "
                      f"{verdict(goal['pass'])}")
    for run in runs.values():
        run["cpu_hours"] = num(run["cpu_hours"], 5)
        run["best_test_accuracy"] = num(run["best_test_accuracy"], 4)
        run["wall_seconds"] = num(run["wall_seconds"], 1)
    report = {
        "config": {"trials": args.trials, "epochs": args.epochs, "parallel": args.parallel,
                   "seed": args.seed, "lr_log_range": list(LR_RANGE), "hidden": HIDDEN,
                   "cpus_per_trial": 1},
        "sweeps": runs, "comparisons": comparisons, "goals": goals,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "commit": commit(), "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_json(report, args.json)
    console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
