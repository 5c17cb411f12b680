"""Prediction benchmark: how good the predicted starts are, and what a refresh costs.

Accuracy. A trace is replayed under the `default` policy (the service's own QueuePolicy,
as `trainyard sim` replays it). At each of --samples submits that had to wait (spread
evenly over the trace), the queue is looked at as the service would see it: the waiting
jobs, the running ones with how long they have run, the usage and claims. The forecast
(trainyard.sim.forecast, what the service's background refresh runs) predicts the new
job's start from that alone, with run times learned only from the jobs finished by then
(trainyard.sim.estimates); no job's true duration is read. The replay then goes on, and
the start it produces is the truth. Reported per trace:

  coverage_p90                  share of true starts at or before the predicted p90
  median_error_ratio            median |p50 - true start| / true wait, jobs waiting > 10 min
  baseline_median_error_ratio   the same for the naive estimate: position in its queue x
                                mean run time of the jobs finished by then
  per_slot_baseline_...         the naive estimate divided by the jobs running then (a
                                fairer naive guess, shown beside it)

Goals: coverage_p90 >= 0.85; median_error_ratio <= 0.5 x the baseline's. Traces: the Philly
trace (64 GPUs, a queue per team, as bench/policies.py replays it) and a generated one,
or any trace in the project's format with --trace FILE.

Cost. One refresh's CPU for a queue of --cost-waiting waiting and --cost-running running
jobs (one GPU each, four teams under the generated policy, estimates from 1,000 finished
jobs), under FIFO and under the queue policy. Goal: <= 2 s of CPU.

Usage: .venv/bin/python bench/predict.py [--trace FILE] [--samples 300] [--rolls 10]
                                         [--cost-waiting 10000] [--cost-running 1000]
                                         [--json PATH] [--plot PATH]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlib import commit, num, verdict, write_json
from rich.console import Console
from rich.table import Table

from trainyard.domain import policy as cfg
from trainyard.domain.spec import Resources
from trainyard.scheduler.backlog import queue_order
from trainyard.scheduler.model import PendingJob
from trainyard.scheduler.snapshot import active_job
from trainyard.sim.cluster import generated_policy, submit
from trainyard.sim.engine import Replay
from trainyard.sim.estimates import FinishedJob, JobTraits, RunTimeEstimator
from trainyard.sim.forecast import (
    DEFAULT_ROLLS,
    ActiveJob,
    LiveQueue,
    Scheduling,
    WaitingJob,
    forecast,
    repeated,
)
from trainyard.sim.policies import replay_for
from trainyard.sim.trace import (
    Trace,
    TraceError,
    TraceJob,
    generate_trace,
    queue_per_team,
    read_trace,
)

RESULTS = Path(__file__).resolve().parent / "results" / "predict.json"
PLOT = Path(__file__).resolve().parent / "results" / "predict.png"
TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"
PHILLY = Path(os.environ.get("TRAINYARD_TRACES", TRACES)) / "philly-3vc.csv"
GPUS = 64
GOAL_COVERAGE = 0.85
GOAL_ERROR_VS_BASELINE = 0.5
GOAL_REFRESH_CPU_S = 2.0
LONG_WAIT_S = 600.0
ARRIVALS_S = 6 * 3600.0  # expected submits: the last six hours again
LOAD = float(os.environ.get("PREDICT_LOAD", "1.2"))

console = Console(width=None if sys.stdout.isatty() else 130)


@dataclass(frozen=True)
class Sample:
    job_id: str
    at: float  # its submit
    p50: float | None
    p90: float | None
    baseline: float  # the naive estimate's start
    per_slot: float
    true_start: float | None = None


def traits(job: TraceJob) -> JobTraits:
    """What the service would know of a trace job before it ends."""
    return JobTraits(user=job.user, algorithm=job.name, queue=job.queue)


def observed_queue(replay: Replay, now: float, jobs: dict[str, TraceJob]
                   ) -> tuple[LiveQueue, float]:
    """The queue as the service sees it at `now`, each job with run times learned from the
    jobs finished by then; and their mean run time. Reads of each unfinished job only what
    has happened: never its duration or the work it has left."""
    finished = [FinishedJob(traits(jobs[job_id]), state.held, state.finish)
                for job_id, state in replay.states.items()
                if state.finish is not None and state.finish <= now]
    estimator = RunTimeEstimator(finished)
    waiting = [WaitingJob(job, estimator.run_times(traits(jobs[job.job_id])),
                          held_s=replay.states[job.job_id].held)
               for job in replay.backlog]
    active = []
    for run in replay.running.values():
        state = replay.states[run.job_id]
        active.append(ActiveJob(run, state.pending,
                                estimator.run_times(traits(jobs[run.job_id])),
                                state.held + (now - state.run_start)))
    recent = [(state.pending, estimator.run_times(traits(jobs[job_id])))
              for job_id, state in replay.states.items()
              if now - ARRIVALS_S <= state.pending.submitted_at <= now]
    waiting += repeated(recent, now, ARRIVALS_S, len(replay.states) + 1)
    queue = LiveQueue(now, waiting, active, replay.pools, usage=replay.feed.usage,
                      reclaiming=replay.feed.reclaiming)
    mean = sum(f.run_s for f in finished) / len(finished) if finished else 3600.0
    return queue, mean


def sampled(trace: Trace, policy: cfg.Policy, samples: int, rolls: int,
            choose: Callable[[list[str]], list[str]] | None = None) -> list[Sample]:
    """Replay under `default`, predicting the start of each chosen job that waited when it
    was submitted, then reading the start the replay gave it."""
    submitted = submit(trace.jobs, policy)
    by_id = {job.job_id: job for job in submitted.jobs}
    teams = sorted({job.team for job in submitted.jobs})
    waited = _waited(submitted, policy, teams)
    chosen = (choose or (lambda ids: _evenly(ids, samples)))(waited)
    wanted = set(chosen)
    replay = replay_for("default", policy, 0, teams)
    scheduling = Scheduling(policy)
    taken: list[Sample] = []
    seen: set[str] = set()

    def look(now: float) -> None:
        for job in replay.backlog:
            if job.job_id in wanted and job.job_id not in seen and job.submitted_at == now:
                seen.add(job.job_id)
                taken.append(_predict(replay, now, job, by_id, scheduling, rolls))

    replay.run(submitted.pending, [j.duration for j in submitted.jobs],
               [j.team for j in submitted.jobs], after_event=look)
    return [Sample(s.job_id, s.at, s.p50, s.p90, s.baseline, s.per_slot,
                   replay.states[s.job_id].first_start) for s in taken]


def _predict(replay: Replay, now: float, job: PendingJob, jobs: dict[str, TraceJob],
             scheduling: Scheduling, rolls: int) -> Sample:
    queue, mean = observed_queue(replay, now, jobs)
    result = forecast(queue, scheduling, rolls=rolls, seed=job.seq)
    predicted = result.predictions[job.job_id]
    position = 1 + sum(1 for other in replay.backlog.queues[job.queue]
                       if queue_order(other) < queue_order(job))
    baseline = now + position * mean
    per_slot = now + position * mean / max(1, len(replay.running))
    return Sample(job.job_id, now, predicted.p50, predicted.p90, baseline, per_slot)


def _waited(submitted: Any, policy: cfg.Policy, teams: list[str]) -> list[str]:
    """The jobs still waiting after the passes at their own submit, in submit order."""
    replay = replay_for("default", policy, 0, teams)
    waited: list[str] = []

    def look(now: float) -> None:
        waited.extend(job.job_id for job in replay.backlog if job.submitted_at == now)

    replay.run(submitted.pending, [j.duration for j in submitted.jobs],
               [j.team for j in submitted.jobs], after_event=look)
    return list(dict.fromkeys(waited))


def _evenly(ids: Sequence[str], count: int) -> list[str]:
    if len(ids) <= count:
        return list(ids)
    step = len(ids) / count
    return [ids[int(i * step)] for i in range(count)]


def accuracy(samples: Sequence[Sample]) -> dict[str, Any]:
    horizon_ok = [s for s in samples if s.true_start is not None]
    covered = [s for s in horizon_ok if s.p90 is not None and s.true_start is not None and
               s.true_start <= s.p90 + 1e-6]
    long = [s for s in horizon_ok if s.true_start is not None and
            s.true_start - s.at > LONG_WAIT_S]

    def median_error(guess: Callable[[Sample], float | None]) -> float | None:
        errors = []
        for s in long:
            assert s.true_start is not None
            g = guess(s)
            wait = s.true_start - s.at
            errors.append(math.inf if g is None else abs(g - s.true_start) / wait)
        errors.sort()
        return errors[len(errors) // 2] if errors else None

    ours = median_error(lambda s: s.p50)
    naive = median_error(lambda s: s.baseline)
    per_slot = median_error(lambda s: s.per_slot)
    return {
        "samples": len(samples), "long_waits": len(long),
        "coverage_p90": num(len(covered) / len(horizon_ok), 4) if horizon_ok else None,
        "median_error_ratio": num(ours, 4),
        "baseline_median_error_ratio": num(naive, 4),
        "per_slot_baseline_median_error_ratio": num(per_slot, 4),
        "error_vs_baseline": num(ours / naive, 6) if ours is not None and naive else None,
        "median_true_wait_s": num(sorted(s.true_start - s.at for s in long)[len(long) // 2]
                                  if long else None, 1),
    }


def refresh_cost(waiting: int, running: int, rolls: int) -> dict[str, Any]:
    """One forecast's CPU on a synthetic queue, under FIFO and the queue policy."""
    teams = [f"team-{i}" for i in range(4)]
    rng = random.Random(7)
    jobs = [TraceJob(str(i), 0.0, 1.0, 1, team=teams[i % 4], user=f"{teams[i % 4]}-user")
            for i in range(waiting + running)]
    policy = generated_policy(jobs, running)
    pool = next(iter(policy.pools))
    history = [FinishedJob(JobTraits(user=f"{teams[i % 4]}-user", algorithm=f"a{i % 20}"),
                           rng.lognormvariate(8.0, 1.5), float(i)) for i in range(1000)]
    estimator = RunTimeEstimator(history)
    now = 1_000_000.0
    active, queued = [], []
    for i in range(running):
        team = teams[i % 4]
        elapsed = rng.uniform(0, 7200)
        run = active_job(f"r{i}", "default", Resources(1, 0, 1), pool, (str(i),), team,
                         now - elapsed, now)
        active.append(ActiveJob(run, PendingJob(f"r{i}", "default", 0, i, Resources(1, 0, 1),
                                                team=team, owner=f"{team}-user"),
                                estimator.run_times(JobTraits(f"{team}-user", f"a{i % 20}")),
                                elapsed))
    for i in range(waiting):
        team = teams[i % 4]
        job = PendingJob(f"w{i}", "default", 0, running + i, Resources(1, 0, 1), team=team,
                         owner=f"{team}-user", submitted_at=now - (waiting - i))
        queued.append(WaitingJob(job, estimator.run_times(
            JobTraits(f"{team}-user", f"a{i % 20}"))))
    pools = {name: p.capacity for name, p in policy.pools.items()}
    out: dict[str, Any] = {"waiting": waiting, "running": running, "rolls": rolls}
    # FIFO knows pools by the kind of job they run: the same jobs, in the pool "local".
    as_local = [ActiveJob(replace(a.run, pool="local"), a.job, a.run_times, a.elapsed_s)
                for a in active]
    for name, scheduling, queue in (
            ("fifo", Scheduling(None, max_running=running),
             LiveQueue(now, queued, as_local, {"local": pools[pool]})),
            ("default", Scheduling(policy), LiveQueue(now, queued, active, pools))):
        began = time.process_time()
        result = forecast(queue, scheduling, rolls=rolls)
        cpu = time.process_time() - began
        out[name] = {"cpu_s": num(cpu, 3), "events": result.events, "passes": result.passes,
                     "cpu_s_per_roll": num(cpu / rolls, 3)}
    return out


def load_traces(paths: Sequence[Path], generated: int) -> dict[str, tuple[Trace, cfg.Policy]]:
    traces: dict[str, tuple[Trace, cfg.Policy]] = {}
    for path in paths:
        trace = queue_per_team(read_trace(path))
        traces[path.stem] = (trace, generated_policy(trace.jobs, GPUS))
    if generated:
        jobs = generate_trace(generated, GPUS, load=LOAD, seed=11)
        trace = queue_per_team(Trace(tuple(jobs), "generated", "trainyard", {}))
        traces[f"generated-{generated}"] = (trace, generated_policy(trace.jobs, GPUS))
    return traces


def plot(results: dict[str, list[Sample]], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6 * len(results), 5.5), layout="constrained")
    for index, (name, samples) in enumerate(results.items()):
        axes = figure.add_subplot(1, len(results), index + 1)
        points = [(s.true_start - s.at, s.p50 - s.at, s.p90 - s.at) for s in samples
                  if s.true_start is not None and s.p50 is not None and s.p90 is not None]
        if not points:
            continue
        hours = 3600.0
        actual = [p[0] / hours for p in points]
        axes.scatter(actual, [p[1] / hours for p in points], s=9, label="predicted median")
        axes.scatter(actual, [p[2] / hours for p in points], s=6, marker="x", alpha=0.5,
                     label="90% bound")
        top = max(max(actual), 0.1)
        axes.plot([0, top], [0, top], color="grey", linewidth=1, label="exact")
        axes.set_xlabel("actual wait (h)")
        axes.set_ylabel("predicted wait (h)")
        axes.set_title(name)
        axes.legend()
    FigureCanvasAgg(figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trace", type=Path, action="append", default=None,
                        help="a trace in the project's format (repeatable) [default: the "
                        "Philly trace and a generated one]")
    parser.add_argument("--generated", type=int, default=None,
                        help="jobs in the generated trace, 0 for none [default: 2000 without "
                        "--trace, else none]")
    parser.add_argument("--no-philly", action="store_true",
                        help="leave the Philly trace out (without --trace)")
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--rolls", type=int, default=DEFAULT_ROLLS)
    parser.add_argument("--cost-waiting", type=int, default=10_000)
    parser.add_argument("--cost-running", type=int, default=1_000)
    parser.add_argument("--json", type=Path, default=RESULTS)
    parser.add_argument("--plot", type=Path, default=PLOT)
    args = parser.parse_args(argv)
    paths = args.trace if args.trace is not None else [] if args.no_philly else [PHILLY]
    generated = args.generated if args.generated is not None else \
        0 if args.trace is not None else 2000
    table = Table(title=f"Predicted starts, {args.samples} sampled submits a trace, "
                        f"{args.rolls} rolls each")
    for col in ("trace", "samples", "long waits", "median wait", "p90 covers",
                "median error", "naive error", "per-slot naive", "vs naive"):
        table.add_column(col, justify="left" if col == "trace" else "right", no_wrap=True)
    report: dict[str, Any] = {"traces": {}}
    all_samples: dict[str, list[Sample]] = {}
    try:
        traces = load_traces(paths, generated)
    except TraceError as exc:
        console.print(f"[red]error[/]: {exc}", highlight=False)
        return 2
    for name, (trace, policy) in traces.items():
        began = time.perf_counter()
        console.log(f"{name}: {len(trace.jobs):,} jobs, sampling {args.samples} waiting "
                    "submits")
        samples = sampled(trace, policy, args.samples, args.rolls)
        figures = accuracy(samples)
        figures["wall_seconds"] = num(time.perf_counter() - began, 1)
        report["traces"][name] = figures
        all_samples[name] = samples

        def pct(value: float | None) -> str:
            return "-" if value is None else f"{value:.0%}"

        wait = figures["median_true_wait_s"]
        table.add_row(name, str(figures["samples"]), str(figures["long_waits"]),
                      "-" if wait is None else f"{wait / 3600:.1f} h",
                      pct(figures["coverage_p90"]), pct(figures["median_error_ratio"]),
                      pct(figures["baseline_median_error_ratio"]),
                      pct(figures["per_slot_baseline_median_error_ratio"]),
                      "-" if figures["error_vs_baseline"] is None
                      else f"{figures['error_vs_baseline']:.2f}x")
    console.print(table)
    cost = refresh_cost(args.cost_waiting, args.cost_running, args.rolls) \
        if args.cost_waiting else None
    report["refresh"] = cost
    goals: dict[str, Any] = {}
    for name, figures in report["traces"].items():
        coverage, ratio = figures["coverage_p90"], figures["error_vs_baseline"]
        goals[f"{name}_coverage_p90_at_least"] = {
            "target": GOAL_COVERAGE, "value": coverage,
            "pass": None if coverage is None else coverage >= GOAL_COVERAGE}
        goals[f"{name}_error_vs_baseline_at_most"] = {
            "target": GOAL_ERROR_VS_BASELINE, "value": ratio,
            "pass": None if ratio is None else ratio <= GOAL_ERROR_VS_BASELINE}
    if cost is not None:
        cpu = cost["default"]["cpu_s"]
        goals["refresh_cpu_s_at_most"] = {"target": GOAL_REFRESH_CPU_S, "value": cpu,
                                          "pass": cpu <= GOAL_REFRESH_CPU_S}
        costs = Table(title=f"One refresh: {cost['waiting']:,} waiting, {cost['running']:,} "
                            f"running, {cost['rolls']} rolls")
        for col in ("policy", "CPU s", "per roll", "events", "passes"):
            costs.add_column(col, justify="left" if col == "policy" else "right")
        for name in ("fifo", "default"):
            c = cost[name]
            costs.add_row(name, f"{c['cpu_s']:.2f}", f"{c['cpu_s_per_roll']:.2f}",
                          f"{c['events']:,}", f"{c['passes']:,}")
        console.print(costs)
    for name, goal in goals.items():
        console.print(f"{name}: {goal['value']} (goal {goal['target']}) "
                      f"{verdict(goal['pass'])}")
    report["goals"] = goals
    report["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                         "platform": platform.platform()}
    report["commit"] = commit()
    report["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    write_json(report, args.json)
    plot(all_samples, args.plot)
    console.print(f"wrote {args.json} and {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
