"""Policy benchmark: every policy replayed on the Philly trace at 64 GPUs, in-process.

What is run: `trainyard.sim.compare` (what `trainyard sim` runs) on
shared/data/traces/philly-3vc.csv beside the repository (1,842 jobs, three teams, 98 days)
with the policy `--gpus 64` generates: one pool of 64 GPUs, each team owning a third of
them (22/21/21) and free to borrow the rest. Two configurations of the queues:
  queue per team  each team's jobs wait in a queue of their own (as `--queue-per-team`), so
                  QueuePolicy's fair turns between queues are also turns between teams. All
                  five policies run here, and the goals are judged here.
  one queue       as the trace has it: every job in queue `default`. Only `default` differs
                  (the others ignore queues, or nearly); it runs under --one-queue-limit
                  seconds of wall-clock time (a guard: before reclaimed quota was claimed
                  for its owner, this replay churned for good), and reports how far it got.

Timed: each policy's whole replay (wall clock, one run). Goals: `default`
mean JCT <= 0.5x fifo's and <= 1.25x srtf-oracle's; Jain's index across teams >= 0.95;
<= 5 s a policy on this trace; with --generated N, a generated trace of N jobs (100,000 for
the goal of <= 60 s a policy; 4 teams of unequal sizes, a queue per team) on
--generated-gpus GPUs at 80% load is timed too (`make bench-policies` passes 100000).

A deep backlog: a generated trace of --deep-jobs jobs (4,500) on --deep-gpus GPUs (128), a
queue per team, whose jobs arrive --deep-load times (12) as fast as the GPUs can serve
them, so that thousands wait at once and fifo's mean wait is over a week (the goals table
says whether it is). Each policy's replay of it is timed against fifo's in the same run
(fifo is replayed for that even when not asked for); the goal: <= 3x fifo's a policy. For a
policy that misses it, its replay is run again under cProfile and the functions it spends
the most time in are printed (and written: `profile`).

Whether each goal is met is printed; the numbers are as measured either way.

Usage: .venv/bin/python bench/policies.py [--policies fifo,...] [--one-queue-limit 60]
                                          [--generated 100000] [--deep-jobs 4500]
                                          [--json PATH]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlib import commit, num, verdict, write_json
from rich.console import Console
from rich.table import Table

from trainyard.sim.cluster import Cluster, generated_policy
from trainyard.sim.compare import compare
from trainyard.sim.policies import POLICIES
from trainyard.sim.trace import Trace, generate_trace, queue_per_team, read_trace

RESULTS = Path(__file__).resolve().parent / "results" / "policies.json"
# The project's shared data sits beside the repository; TRAINYARD_TRACES to look elsewhere.
TRACES = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"
PHILLY = Path(os.environ.get("TRAINYARD_TRACES", TRACES)) / "philly-3vc.csv"
GPUS = 64
GOAL_VS_FIFO = 0.5  # default's mean JCT over fifo's, at most
GOAL_VS_SRTF = 1.25  # default's mean JCT over srtf-oracle's, at most
GOAL_JAIN = 0.95
GOAL_PHILLY_S = 5.0
GOAL_GENERATED_S = 60.0
GOAL_GENERATED_JOBS = 100_000
GOAL_DEEP_VS_FIFO = 3.0  # a policy's replay time of the deep backlog over fifo's, at most
GOAL_DEEP_WAIT_DAYS = 7.0  # fifo's mean wait there, at least: what makes the backlog deep
DEEP_SEED = 7
PROFILE_TOP = 8  # functions printed for a policy that misses its speed goal
HOUR = 3600.0
DAY = 86400.0

console = Console(width=None if sys.stdout.isatty() else 140)


def run(trace: Trace, gpus: int, policies: list[str], time_limit: float = 0.0
        ) -> dict[str, dict[str, Any]]:
    cluster = Cluster(generated_policy(trace.jobs, gpus), generated=True)
    out = {}
    for name in policies:
        console.log(f"{name}: replaying {len(trace.jobs):,} jobs on {gpus} GPUs")
        started = time.perf_counter()
        result = compare(trace, cluster, [name], time_limit=time_limit)
        summary = result.report()["policies"][name]
        summary["wall_seconds"] = num(time.perf_counter() - started, 3)
        # A policy's replay time is its passes times what one costs: apart, they say which
        # of the two a slower replay comes from.
        summary["ms_per_pass"] = num(summary["sim_seconds"] * 1000 / max(1, summary["passes"]),
                                     6)
        del summary["timeline"]
        out[name] = summary
    return out


def deep_trace(jobs: int, gpus: int, load: float) -> Trace:
    """The deep backlog: arrivals `load` times as fast as `gpus` GPUs serve them."""
    generated = generate_trace(jobs, gpus, load=load, seed=DEEP_SEED)
    return queue_per_team(Trace(tuple(generated), "generated", "trainyard", {}))


def deep(trace: Trace, gpus: int, policies: list[str]) -> dict[str, dict[str, Any]]:
    """Each policy's replay of the deep backlog, fifo's first, each with its time over
    fifo's (`vs_fifo`); a policy over the goal is profiled (`profile`)."""
    names = ["fifo", *(name for name in policies if name != "fifo")]
    out = run(trace, gpus, names)
    fifo_s = out["fifo"]["wall_seconds"]
    for name, summary in out.items():
        ratio = summary["wall_seconds"] / fifo_s if fifo_s else None
        summary["vs_fifo"] = num(ratio, 2)
        if ratio is not None and ratio > GOAL_DEEP_VS_FIFO:
            summary["profile"] = profile(trace, gpus, name)
    return out


def profile(trace: Trace, gpus: int, name: str) -> list[dict[str, Any]]:
    """Where one policy's replay spends its time: the functions of most own time."""
    console.log(f"{name}: replaying again under cProfile")
    cluster = Cluster(generated_policy(trace.jobs, gpus), generated=True)
    profiler = cProfile.Profile()
    profiler.runcall(compare, trace, cluster, [name])
    functions = pstats.Stats(profiler).get_stats_profile().func_profiles
    top = sorted(functions.items(), key=lambda item: -item[1].tottime)[:PROFILE_TOP]
    return [{"function": f"{Path(f.file_name).name}:{f.line_number}({name})",
             "calls": f.ncalls, "own_seconds": num(f.tottime, 3),
             "cumulative_seconds": num(f.cumtime, 3)} for name, f in top]


def goals(per_team: dict[str, dict[str, Any]],
          generated: dict[str, dict[str, Any]] | None,
          deep_backlog: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    default, fifo, srtf = (per_team.get(n) for n in ("default", "fifo", "srtf-oracle"))

    def ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float | None:
        if not a or not b or not a.get("mean_jct") or not b.get("mean_jct"):
            return None
        return float(a["mean_jct"]) / float(b["mean_jct"])

    vs_fifo, vs_srtf = ratio(default, fifo), ratio(default, srtf)
    jain = default.get("jain") if default else None
    slowest = max((p["wall_seconds"] for p in per_team.values()), default=None)
    result: dict[str, Any] = {
        "default_mean_jct_vs_fifo_at_most": {
            "target": GOAL_VS_FIFO, "value": num(vs_fifo, 3),
            "pass": None if vs_fifo is None else vs_fifo <= GOAL_VS_FIFO},
        "default_mean_jct_vs_srtf_oracle_at_most": {
            "target": GOAL_VS_SRTF, "value": num(vs_srtf, 3),
            "pass": None if vs_srtf is None else vs_srtf <= GOAL_VS_SRTF},
        "default_jain_at_least": {
            "target": GOAL_JAIN, "value": jain,
            "pass": None if jain is None else jain >= GOAL_JAIN},
        "philly_seconds_per_policy_at_most": {
            "target": GOAL_PHILLY_S, "value": slowest,
            "pass": None if slowest is None else slowest <= GOAL_PHILLY_S},
    }
    slowest_big = max((p["wall_seconds"] for p in generated.values()), default=None) \
        if generated else None
    result["generated_seconds_per_policy_at_most"] = {
        "target": GOAL_GENERATED_S, "value": slowest_big,
        "pass": None if slowest_big is None else slowest_big <= GOAL_GENERATED_S}
    ratios = [p["vs_fifo"] for p in (deep_backlog or {}).values() if p["vs_fifo"] is not None]
    worst = max(ratios, default=None)
    result["deep_replay_vs_fifo_at_most"] = {
        "target": GOAL_DEEP_VS_FIFO, "value": worst,
        "pass": None if worst is None else worst <= GOAL_DEEP_VS_FIFO}
    wait = num(deep_backlog["fifo"]["mean_wait"] / DAY, 2) if deep_backlog else None
    result["deep_fifo_mean_wait_days_at_least"] = {
        "target": GOAL_DEEP_WAIT_DAYS, "value": wait,
        "pass": None if wait is None else wait >= GOAL_DEEP_WAIT_DAYS}
    return result


def policy_table(title: str, results: dict[str, dict[str, Any]]) -> Table:
    table = Table(title=title)
    relative = all("vs_fifo" in s for s in results.values())
    for col in ("policy", "jobs", "mean JCT h", "median h", "p95 h", "p99 h", "mean wait h",
                "makespan d", "util", "Jain", "preempt", "wall s",
                *(("x fifo",) if relative else ())):
        table.add_column(col, justify="left" if col == "policy" else "right", no_wrap=True)

    def h(value: float | None) -> str:
        return "-" if value is None else f"{value / HOUR:.1f}"

    for name, s in results.items():
        mark = "" if s["completed"] else " (stopped)"
        table.add_row(name + mark, f"{s['jobs']:,}", h(s["mean_jct"]), h(s["median_jct"]),
                      h(s["p95_jct"]), h(s["p99_jct"]), h(s["mean_wait"]),
                      f"{s['makespan'] / 86400:.1f}", f"{s['utilization']:.1%}",
                      f"{s['jain']:.3f}", f"{s['preemptions']:,}", f"{s['wall_seconds']:.2f}",
                      *((f"{s['vs_fifo']:.2f}x",) if relative else ()))
    return table


def passes_table(results: dict[str, dict[str, Any]]) -> Table:
    """Each policy's time in its passes over fifo's, as the number of its passes over fifo's
    times the cost of one over fifo's: whether a slower replay does more or dearer passes."""
    table = Table(title="Deep backlog: passes, and what one costs")
    for col in ("policy", "passes", "x fifo", "ms/pass", "x fifo ", "passes' time x fifo"):
        table.add_column(col, justify="left" if col == "policy" else "right", no_wrap=True)
    for name, (passes, per_pass) in pass_ratios(results).items():
        s = results[name]
        table.add_row(name, f"{s['passes']:,}", f"{passes:.2f}x", f"{s['ms_per_pass']:.3f}",
                      *(("-", "-") if per_pass is None else
                        (f"{per_pass:.2f}x", f"{passes * per_pass:.2f}x")))
    return table


def pass_ratios(results: dict[str, dict[str, Any]]) -> dict[str, tuple[float, float | None]]:
    """Each policy's passes over fifo's, and its time per pass over fifo's (None where
    fifo's rounds to nothing)."""
    fifo = results["fifo"]
    return {name: (s["passes"] / max(1, fifo["passes"]),
                   s["ms_per_pass"] / fifo["ms_per_pass"] if fifo["ms_per_pass"] else None)
            for name, s in results.items()}


def profile_table(name: str, rows: list[dict[str, Any]]) -> Table:
    table = Table(title=f"{name} on the deep backlog: where the time goes (cProfile)")
    for col in ("function", "calls", "own s", "cumulative s"):
        table.add_column(col, justify="left" if col == "function" else "right", no_wrap=True)
    for row in rows:
        table.add_row(row["function"], row["calls"], f"{row['own_seconds']:.2f}",
                      f"{row['cumulative_seconds']:.2f}")
    return table


def goals_table(result: dict[str, Any]) -> Table:
    table = Table(title="Goals")
    for col in ("goal", "target", "measured", "result"):
        table.add_column(col, no_wrap=True)
    rows = (("default mean JCT / fifo's", "default_mean_jct_vs_fifo_at_most", "<= {}x",
             "{:.2f}x"),
            ("default mean JCT / srtf-oracle's", "default_mean_jct_vs_srtf_oracle_at_most",
             "<= {}x", "{:.2f}x"),
            ("default Jain's index across teams", "default_jain_at_least", ">= {}", "{:.3f}"),
            ("Philly replay, slowest policy", "philly_seconds_per_policy_at_most", "<= {} s",
             "{:.2f} s"),
            (f"generated {GOAL_GENERATED_JOBS:,}-job trace, slowest policy",
             "generated_seconds_per_policy_at_most", "<= {} s", "{:.1f} s"),
            ("deep backlog, slowest policy / fifo", "deep_replay_vs_fifo_at_most", "<= {}x",
             "{:.2f}x"),
            ("deep backlog, fifo's mean wait", "deep_fifo_mean_wait_days_at_least",
             ">= {} d", "{:.1f} d"))
    for label, key, target, value in rows:
        goal = result[key]
        table.add_row(label, target.format(goal["target"]),
                      "n/a" if goal["value"] is None else value.format(goal["value"]),
                      verdict(goal["pass"]))
    return table


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--policies", default=",".join(POLICIES),
                   help="comma-separated [default: all]")
    p.add_argument("--one-queue-limit", type=float, default=60.0,
                   help="wall-clock seconds for `default` with the trace's one queue "
                   "(0: skip it)")
    p.add_argument("--generated", type=int, default=0,
                   help="also time a generated trace of this many jobs (0: skip)")
    p.add_argument("--generated-gpus", type=int, default=256)
    p.add_argument("--deep-jobs", type=int, default=4500,
                   help="jobs of the deep-backlog trace (0: skip it)")
    p.add_argument("--deep-gpus", type=int, default=128)
    p.add_argument("--deep-load", type=float, default=12.0,
                   help="how many times as fast as the GPUs serve them its jobs arrive")
    p.add_argument("--json", type=Path, default=RESULTS, help="where to write the results")
    args = p.parse_args()
    args.policies = [n.strip() for n in args.policies.split(",") if n.strip()]
    unknown = set(args.policies) - set(POLICIES)
    if unknown:
        p.error(f"unknown policies: {', '.join(sorted(unknown))}")
    return args


def main() -> int:
    args = parse_args()
    philly = read_trace(PHILLY)
    per_team = run(queue_per_team(philly), GPUS, args.policies)
    one_queue = run(philly, GPUS, ["default"], args.one_queue_limit) \
        if args.one_queue_limit > 0 and "default" in args.policies else {}
    generated = None
    if args.generated:
        jobs = generate_trace(args.generated, args.generated_gpus, seed=7)
        generated = run(queue_per_team(Trace(tuple(jobs), "generated", "trainyard", {})),
                        args.generated_gpus, args.policies)
    deep_backlog = deep(deep_trace(args.deep_jobs, args.deep_gpus, args.deep_load),
                        args.deep_gpus, args.policies) if args.deep_jobs else None
    summary = {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "config": {"trace": str(PHILLY), "gpus": GPUS, "policies": args.policies,
                   "one_queue_limit_s": args.one_queue_limit,
                   "generated_jobs": args.generated, "generated_gpus": args.generated_gpus,
                   "generated_load": 0.8, "deep_jobs": args.deep_jobs,
                   "deep_gpus": args.deep_gpus, "deep_load": args.deep_load,
                   "deep_seed": DEEP_SEED},
        "queue_per_team": per_team,
        "one_queue": one_queue,
        "generated": generated,
        "deep_backlog": deep_backlog,
        "goals": goals(per_team, generated, deep_backlog),
    }
    console.print(policy_table(f"Philly at {GPUS} GPUs, a queue per team", per_team))
    if one_queue:
        console.print(policy_table(f"Philly at {GPUS} GPUs, the trace's one queue", one_queue))
    if generated:
        console.print(policy_table(f"Generated {args.generated:,} jobs at "
                                   f"{args.generated_gpus} GPUs", generated))
    if deep_backlog:
        console.print(policy_table(
            f"Deep backlog: {args.deep_jobs:,} jobs at {args.deep_gpus} GPUs, arriving "
            f"{args.deep_load:g}x as fast as served", deep_backlog))
        console.print(passes_table(deep_backlog))
        for name, result in deep_backlog.items():
            if "profile" in result:
                console.print(profile_table(name, result["profile"]))
    console.print(goals_table(summary["goals"]))
    write_json(summary, args.json)
    console.print(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
