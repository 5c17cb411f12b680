"""Trainyard beside what users would pick instead, Slurm and Ray Jobs, on this machine in one
run: the same three workloads on each system, one system at a time, plus the physical
limits. Writes bench/results/peers.json and bench/results/peers.png; bench/README.md
explains the figures.

Usage: PYTHONPATH=bench .venv/bin/python -m peers [--trivial-jobs 500] [--train-jobs 200]
       [--systems trainyard,slurm,ray] [--phase-seconds 180]   (make bench does this)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shlex
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlib import commit, num, write_json

from peers import figures as fig
from peers import limits, procs, ray_jobs, report, slurm, trainyard_sys
from peers import workloads as wl
from trainyard.executors.local import INHERITED_ENV

BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent
RESULTS = BENCH / "results" / "peers.json"
CHART = BENCH / "results" / "peers.png"
TRAINER = REPO / "examples" / "trainer.py"
SYSTEMS = ("trainyard", "slurm", "ray")
Figures = dict[str, Any]


def log(message: str) -> None:
    report.console.log(message)


def write_digits(directory: Path) -> None:
    """The demo's digits split (train.csv, test.csv), from the demo itself."""
    sys.path.insert(0, str(REPO / "examples"))
    try:
        from demo import write_digits as demo_write_digits
    finally:
        sys.path.remove(str(REPO / "examples"))
    directory.mkdir(parents=True, exist_ok=True)
    demo_write_digits(directory)


class Trainer:
    """The demo trainer with arguments for a run of about one second here."""

    def __init__(self, args: argparse.Namespace, data: Path, scratch: Path) -> None:
        self.hyperparameters = {"HIDDEN": args.hidden, "EPOCHS": str(args.epochs)}
        self.data = data
        self.scratch = scratch
        self.argv = f"{shlex.quote(sys.executable)} {shlex.quote(str(TRAINER))}"

    def contract(self, key: str) -> str:
        """What Trainyard runs: it hands the job the contract and hyperparameters itself."""
        return self.argv

    def standalone(self, key: str) -> str:
        """The same run for a system without the contract: the variables by hand, as a
        Slurm or Ray user would write them (Trainyard sets the same thread limits), in the
        environment a Trainyard job gets and nothing more: a host's OPENBLAS_CORETYPE, say,
        would pick other kernels, another speed."""
        env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
        env |= {"TRAINING_DATA_PATH": str(self.data),
               "MODEL_SAVE_PATH": str(self.scratch / key / "model"),
               "METRICS_PATH": str(self.scratch / key / "metrics.jsonl"),
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "PYTHONUNBUFFERED": "1", **self.hyperparameters}
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        return f"mkdir -p {shlex.quote(str(self.scratch / key))} && " \
               f"env -i {assignments} {self.argv} > /dev/null"


def workloads(system: wl.System, stamps: wl.Stamps, args: argparse.Namespace,
              body: Callable[[str], str],
              profile: Callable[[wl.Trivial], dict[str, float]] | None = None
              ) -> tuple[Figures, dict[str, Any]]:
    """The three workloads on one system: its figures, and the curves for the chart;
    `profile` says where the trivial jobs' time went, where the system records it."""
    cap, slots = args.phase_seconds, args.slots
    log(f"{system.name}: submit->start, {args.start_samples} jobs one at a time")
    start = wl.start_latency(system, stamps, args.start_samples, cap)
    log(f"{system.name}: {args.trivial_jobs} trivial jobs at once")
    trivial = wl.trivial(system, stamps, args.trivial_jobs, cap)
    phases = profile(trivial) if profile is not None else {}
    log(f"{system.name}: {args.train_jobs} training jobs, {slots} at a time")
    train = wl.training(system, stamps, args.train_jobs, slots, body,
                        max(cap, args.train_phase_seconds))
    log(f"{system.name}: a burst of {args.burst_jobs} behind {slots} jobs of "
        f"{args.long_seconds:g} s")
    burst = wl.burst(system, stamps, args.burst_jobs, slots, args.long_seconds, cap)
    figures: Figures = {
        "start_p50_ms": num(fig.pct(start.samples_ms, 50)),
        "start_p99_ms": num(fig.pct(start.samples_ms, 99)),
        "start_samples": len(start.samples_ms),
        "start_failures": start.failures,
        "submit_per_s": num(trivial.submit_per_s, 1),
        "submitted_jobs": trivial.submitted,
        "submit_errors": len(trivial.errors),
        "submit_system_cpu_ms": num(trivial.system_cpu_ms_per_submit, 3),
        "submit_client_cpu_ms": num(trivial.client_cpu_ms_per_submit, 3),
        "e2e_jobs_per_s": num(trivial.e2e_jobs_per_s, 2),
        "e2e_seconds": num(trivial.e2e_seconds, 2),
        "e2e_finished_jobs": trivial.finished,
        "e2e_capped": trivial.capped,
        "queued_start_p50_ms": num(fig.pct(trivial.burst_start_ms, 50), 1),
        "queued_start_p99_ms": num(fig.pct(trivial.burst_start_ms, 99), 1),
        "train_makespan_s": num(train.makespan_s, 2),
        "train_finished_jobs": train.finished,
        "train_jobs_per_s": num(fig.rate(train.finished, train.makespan_s), 3),
        "train_capped": train.capped,
        "train_run_p50_s": num(fig.pct(train.run_s, 50), 3),
        "cpu_utilisation_pct": num(train.cpu_utilisation * 100, 1),
        "slots_busy_pct": num(train.busy_share * 100, 1),
        "idle_gap_p50_ms": num(fig.pct(train.gaps_ms, 50), 1),
        "idle_gap_p99_ms": num(fig.pct(train.gaps_ms, 99), 1),
        "burst_wait_p50_ms": num(fig.pct(burst.wait_ms, 50), 1),
        "burst_wait_max_ms": num(max(burst.wait_ms, default=math.nan), 1),
        "burst_first_start_after_free_ms": num(burst.first_start_after_free_ms, 1),
        "burst_last_start_after_free_ms": num(burst.last_start_after_free_ms, 1),
        "burst_capped": burst.capped,
        **{f"trivial_{k}": num(v, 2) for k, v in phases.items()},
    }
    if trivial.errors or train.errors:
        figures["first_error"] = (trivial.errors + train.errors)[0]
    curves = {"cpu": train.cpu_curve, "gaps_ms": sorted(train.gaps_ms),
              "start_ms": sorted(start.samples_ms)}
    return figures, curves


def run_trainyard(root: Path, stamps: wl.Stamps, args: argparse.Namespace, trainer: Trainer,
                  data: Path, lim: Figures) -> tuple[Figures, dict[str, Any]]:
    with trainyard_sys.server(root / "trainyard", args.slots) as system:
        system.register_digits(data)
        system.hyperparameters = trainer.hyperparameters
        log("trainyard: bare gRPC health checks (the transport's ceiling)")
        health = trainyard_sys.health_checks(system, 200, wl.SUBMITTERS)
        lim["grpc_call_p50_ms"] = num(health.p50_ms, 3)
        lim["grpc_calls_per_s"] = num(health.calls_per_s, 1)
        return workloads(system, stamps, args, trainer.contract,
                         lambda t: system.phases(t.ids, stamps, args.slots))


def run_slurm(root: Path, stamps: wl.Stamps, args: argparse.Namespace,
              trainer: Trainer) -> tuple[Figures, dict[str, Any]]:
    with slurm.cluster(root / "slurm") as system:
        return workloads(system, stamps, args, trainer.standalone)


def run_ray(root: Path, stamps: wl.Stamps, args: argparse.Namespace,
            trainer: Trainer) -> tuple[Figures, dict[str, Any]]:
    with ray_jobs.head(root / "ray", args.slots) as system:
        return workloads(system, stamps, args, trainer.standalone)


TRAIN_CAP_OVER_IDEAL = 1.5


def train_cap(phase_seconds: float, ideal_s: float | None) -> float:
    """The training workload's cap: the phases' own, or 1.5x the ideal makespan if longer."""
    return max(phase_seconds, TRAIN_CAP_OVER_IDEAL * ideal_s) if ideal_s else phase_seconds


def run_limits(root: Path, args: argparse.Namespace, trainer: Trainer
               ) -> tuple[Figures, list[float]]:
    """The limits, and the trainer's runs slots at a time (bracket_trainer adds to them)."""
    stamps = wl.Stamps(root / "stamps-limits")
    stamps.root.mkdir(parents=True)
    log("limits: fork/exec, the trainer alone, SQLite commits, the move into a process cap")
    fork = limits.fork_exec(stamps, args.start_samples * 2, args.trivial_jobs, args.slots)
    alone_s = limits.median(limits.trainer_runs(stamps, trainer.standalone, 5, 1, "alone"))
    in_slots = limits.trainer_runs(stamps, trainer.standalone, 3 * args.slots, args.slots,
                                   "slots")
    run_s = limits.median(in_slots)
    commits = limits.sqlite_commits(root / "commit.db", 200)
    cap = limits.cap_move(args.start_samples)
    return {
        "cap_move_p50_ms": num(cap.move_p50_ms, 2) if cap else None,
        "cap_move_shell_p50_ms": num(cap.shell_p50_ms, 2) if cap else None,
        "fork_exec_start_p50_ms": num(fig.pct(fork.start_ms, 50), 3),
        "fork_exec_start_p99_ms": num(fig.pct(fork.start_ms, 99), 3),
        "fork_exec_e2e_jobs_per_s": num(fork.e2e_jobs_per_s, 1),
        "trainer_run_s": num(alone_s, 3),
        "trainer_run_in_slots_s": num(run_s, 3),
        "trainer_run_in_slots_before_s": num(run_s, 3),
        "train_makespan_ideal_s": num(math.ceil(args.train_jobs / args.slots) * run_s, 2),
        "sqlite_commit_p50_ms": num(commits.p50_ms, 3),
        "sqlite_commits_per_s": num(commits.per_s, 1),
    }, in_slots


def bracket_trainer(root: Path, args: argparse.Namespace, trainer: Trainer,
                    lim: Figures, before: list[float]) -> None:
    """The trainer run slots at a time again, right after Trainyard's workloads: this
    machine's speed drifts by some percent over minutes, so the ideal makespan is the median
    of the runs before and after, which bracket the workload it is compared with."""
    stamps = wl.Stamps(root / "stamps-limits-after")
    stamps.root.mkdir()
    log("limits: the trainer again, slots at a time")
    after = limits.trainer_runs(stamps, trainer.standalone, 3 * args.slots, args.slots,
                                "slots-after")
    run_s = limits.median([*before, *after])
    lim["trainer_run_in_slots_after_s"] = num(limits.median(after), 3)
    lim["trainer_run_in_slots_s"] = num(run_s, 3)
    lim["train_makespan_ideal_s"] = num(math.ceil(args.train_jobs / args.slots) * run_s, 2)


def run_docker(args: argparse.Namespace, ty: Figures, lim: Figures) -> None:
    from peers import docker_start

    why = docker_start.unavailable()
    if why:
        log(f"[yellow]containers not measured: {why}[/]")
        lim["docker_run_start_p50_ms"] = None
        ty["docker_start_p50_ms"] = None
        ty["docker_not_measured"] = why
        return
    log(f"trainyard --docker: {args.docker_samples} rounds of docker run -d and submit")
    out = docker_start.measure(args.docker_samples, 2, args.phase_seconds)
    lim["docker_run_start_p50_ms"] = num(fig.pct(out.docker_run_ms, 50), 1)
    ty["docker_start_p50_ms"] = num(fig.pct(out.trainyard_ms, 50), 1)
    ty["docker_start_samples"] = len(out.trainyard_ms)


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        model = next((ln.split(":", 1)[1].strip() for ln in
                      Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("model name")), "")
    mem_kb = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    return {"hostname": socket.gethostname(), "cpu_count": os.cpu_count(), "cpu_model": model,
            "memory_gib": round(mem_kb / 2**20, 1), "platform": platform.platform(),
            "python": platform.python_version()}


def run(args: argparse.Namespace) -> dict[str, Any]:
    systems: dict[str, Figures] = {}
    curves: dict[str, dict[str, Any]] = {}
    versions: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-peers-") as tmp:
        root = Path(tmp)
        data = root / "digits"
        write_digits(data)
        trainer = Trainer(args, data, root / "scratch")
        lim, trainer_before = run_limits(root, args, trainer)
        # A machine slower today than the cap was set for still finishes the training
        # workload: its cap is never short of the ideal makespan this run measured.
        args.train_phase_seconds = train_cap(args.phase_seconds, lim["train_makespan_ideal_s"])
        runners: dict[str, Callable[[wl.Stamps], tuple[Figures, dict[str, Any]]]] = {
            "trainyard": lambda s: run_trainyard(root, s, args, trainer, data, lim),
            "slurm": lambda s: run_slurm(root, s, args, trainer),
            "ray": lambda s: run_ray(root, s, args, trainer),
        }
        why_not = {"slurm": slurm.available(), "ray": ray_jobs.available()}
        for name in args.systems:
            if why_not.get(name):
                log(f"[yellow]{name}: not measured: {why_not[name]}[/]")
                systems[name] = {"not_measured": why_not[name]}
                continue
            stamps = wl.Stamps(root / f"stamps-{name}")
            stamps.root.mkdir()
            started = time.monotonic()
            try:
                systems[name], curves[name] = runners[name](stamps)
            except Exception as exc:  # one system's failure must not lose the others
                traceback.print_exc()
                systems[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            systems[name]["wall_seconds"] = num(time.monotonic() - started, 1)
            if name == "trainyard":
                bracket_trainer(root, args, trainer, lim, trainer_before)
        if "trainyard" in systems and args.docker_samples:
            run_docker(args, systems["trainyard"], lim)
        if "slurm" in args.systems and not why_not["slurm"]:
            versions.update(slurm.versions())
        if "ray" in args.systems and not why_not["ray"]:
            versions["ray"] = ray_jobs.version()
    systems["limits"] = lim
    return results(args, systems, curves, versions)


def results(args: argparse.Namespace, systems: dict[str, Figures],
            curves: dict[str, dict[str, Any]], versions: dict[str, str]) -> dict[str, Any]:
    ty = systems.get("trainyard", {})
    peers: dict[str, Figures] = {name: systems[name] for name in ("slurm", "ray")
                                 if name in systems}
    ratios = fig.ratios(ty, peers)
    ratios.update(fig.ratios(ty, {"limits": {
        "start_p50_ms": systems["limits"].get("fork_exec_start_p50_ms"),
        "train_makespan_s": systems["limits"].get("train_makespan_ideal_s"),
        "e2e_jobs_per_s": systems["limits"].get("fork_exec_e2e_jobs_per_s"),
        "docker_start_p50_ms": systems["limits"].get("docker_run_start_p50_ms")}}))
    goals = fig.goals(ty, systems.get("slurm", {}), systems.get("ray", {}), systems["limits"])
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(),
        "versions": versions,
        "config": {"trivial_jobs": args.trivial_jobs, "train_jobs": args.train_jobs,
                   "burst_jobs": args.burst_jobs, "long_job_seconds": args.long_seconds,
                   "start_samples": args.start_samples, "slots": args.slots,
                   "submitters": wl.SUBMITTERS, "poll_seconds": wl.POLL_S,
                   "phase_cap_seconds": args.phase_seconds,
                   "train_phase_cap_seconds": args.train_phase_seconds,
                   "trainer": {"HIDDEN": args.hidden, "EPOCHS": args.epochs},
                   "systems": list(args.systems)},
        "systems": systems,
        "ratios": ratios,
        "goals": {g.key: {**g.as_json(), **({"why": fig.why_missed(
            g, ty, peers, systems["limits"], args.slots)} if g.passed is False else {})}
            for g in goals},
        "curves": curves,
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--trivial-jobs", type=int, default=500)
    p.add_argument("--train-jobs", type=int, default=200)
    p.add_argument("--burst-jobs", type=int, default=20)
    p.add_argument("--long-seconds", type=float, default=10.0,
                   help="how long the jobs the burst waits behind run")
    p.add_argument("--start-samples", type=int, default=20,
                   help="trivial jobs one at a time, for submit->start")
    p.add_argument("--docker-samples", type=int, default=10,
                   help="rounds of docker run -d vs a container job (0: skip)")
    p.add_argument("--epochs", type=int, default=38, help="the trainer's EPOCHS (~1 s here)")
    p.add_argument("--hidden", default="256,256", help="the trainer's HIDDEN")
    p.add_argument("--phase-seconds", type=float, default=180.0,
                   help="wall-clock cap of each workload on each system")
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help="comma-separated, of: " + ", ".join(SYSTEMS))
    p.add_argument("--json", type=Path, default=RESULTS)
    p.add_argument("--chart", type=Path, default=CHART)
    p.add_argument("--render", type=Path, default=None, metavar="JSON",
                   help="measure nothing: print the tables (and Markdown) of saved results")
    args = p.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    args.train_phase_seconds = args.phase_seconds  # until the limits' ideal makespan says
    if unknown := set(args.systems) - set(SYSTEMS):
        p.error(f"unknown systems: {', '.join(sorted(unknown))}")
    if min(args.trivial_jobs, args.train_jobs, args.burst_jobs, args.start_samples) < 1:
        p.error("job counts and samples must be at least 1")
    # Every system runs as many one-CPU jobs at once as the machine has CPUs.
    args.slots = os.cpu_count() or 1
    return args


def main() -> int:
    args = parse_args()
    if args.render is not None:
        saved = json.loads(args.render.read_text())
        report.render(saved)
        print(report.markdown(saved))
        return 0
    # Every process started from here on, however deep, carries the run's marker.
    os.environ[procs.MARKER_ENV] = procs.TOKEN
    with procs.cleanup():
        out = run(args)
    report.render(out)
    write_json(out, args.json)
    report.chart(out, args.chart)
    report.console.print(f"results: {args.json}, chart: {args.chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
