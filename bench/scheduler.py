"""Scheduler benchmark: one pass of the queue policy over a large waiting list, in-process.

What is timed: `QueuePolicy(policy).schedule(snapshot)`, one full scheduling pass, exactly as
the server calls it, with no I/O around it. The snapshot and the policy are built once per
size, outside the timed region, from a fixed seed, so every run sees the same inputs.

The cluster (identical for every size; only the number of waiting jobs changes):
  pools     6 CPU pools (`cpu-0`..`cpu-5`) and 2 GPU pools (`gpu-0`, `gpu-1`), all running
            local commands. Every pool is full except `cpu-4` and `cpu-5`, which have room
            for more than 100 more jobs between them.
  teams     100, each with a quota in every pool (an equal share of its CPUs, and of its
            GPUs in a GPU pool); about half of them may borrow idle quota.
  queues    1,000 over 10 priority levels (100 queues a level); weights 0.5 to 4; each on
            one or two pools; about 10% with a max_running, some of those already at it;
            a decayed usage each, for fair turns.
  running   every slot of the full pools, and most of the two others, by jobs of random
            teams and queues. The policy's max_running is len(running) + 100, so one pass
            admits exactly 100 jobs (asserted) and the global limit then holds the rest.
  waiting   the given number of jobs, spread uniformly over the queues (so over teams and
            levels too), 1-4 CPUs and 1-8 GiB each (1-2 GPUs in a GPU queue), job priority
            0-2, submitted within the last 500 s (younger than reserve_after_s, so no pool
            is held for a long waiter and the count admitted does not depend on that),
            added one by one in submit order to a Backlog, as the tracker's WaitingJobs
            keeps them between passes (each queue's jobs in order).

The upkeep of the Backlog is timed too, outside the pass: adding every waiting job one at a
time, as submits arrive, and removing 100 (the jobs a pass admits), in µs per job.

Each size gets an untimed warm-up pass. Then --repeat rounds each time one pass of every
size in turn (gc collected before each), so that a noisy neighbour, and the state of the
CPU caches, are the same for both sides of the ratio: min and median ms per pass are
reported, with the 100k/10k ratio of the medians. The same number of passes of one size
back to back is timed too and reported beside it ("back to back"): there the smaller
snapshot stays in the caches between its passes, which a live server, whose passes come
between other work, does not see.
Goals: <= 20 ms per pass at 100,000 waiting jobs, and that at most 2x the
figure at 10,000. Whether each is met is printed; the numbers are as measured either way.

--profile runs one more pass at the largest size under cProfile and prints the functions
with the most cumulative time (not part of the timed figures).

Usage: .venv/bin/python bench/scheduler.py [--repeat 5] [--sizes 10000,100000]
                                           [--profile] [--json PATH]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import platform
import pstats
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlib import commit, num, verdict, write_json
from rich.console import Console
from rich.table import Table

from trainyard.domain import policy as cfg
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler.backlog import Backlog
from trainyard.scheduler.model import Decisions, PendingJob, RunningJob, Snapshot
from trainyard.scheduler.queues import QueuePolicy

RESULTS = Path(__file__).resolve().parent / "results" / "scheduler.json"
DEFAULT_SIZES = (10_000, 100_000)
SEED = 20_261_130
ADMIT = 100  # jobs one pass admits: the global limit is len(running) + ADMIT
N_QUEUES = 1_000
N_TEAMS = 100
LEVELS = 10  # queue priority levels, N_QUEUES // LEVELS queues each
MAX_REPEAT = 50
MAX_SIZE = 1_000_000
GOAL_PASS_MS = 20.0  # at GOAL_SIZE waiting jobs
GOAL_SIZE = 100_000
GOAL_BASE_SIZE = 10_000
GOAL_RATIO = 2.0  # GOAL_SIZE's median over GOAL_BASE_SIZE's median, at most
NOW = 1_000_000.0  # the snapshot's clock, in seconds
GIB = 1024

CPU_POOLS = tuple(f"cpu-{i}" for i in range(6))
GPU_POOLS = ("gpu-0", "gpu-1")
FREE_POOLS = ("cpu-4", "cpu-5")  # the only pools with room
CPU_POOL_CPUS = 512.0
CPU_POOL_JOBS = 256
GPU_POOL_GPUS = 64
FREE_POOL_RUNNING = 176  # of CPU_POOL_JOBS: 2 x 80 free slots > ADMIT
RUNNING_CPUS = 2.0  # each running job in a CPU pool; 176 x 2 of 512 CPUs leaves room

console = Console(width=None if sys.stdout.isatty() else 100)


# --- the inputs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """The policy and what runs: the same for every size."""

    policy: cfg.Policy
    running: tuple[RunningJob, ...]
    usage: dict[str, float]
    pools: dict[str, PoolCapacity]


def build_cluster(seed: int) -> Cluster:
    rng = random.Random(seed)
    capacities: dict[str, PoolCapacity] = {}
    for name in CPU_POOLS:
        capacities[name] = PoolCapacity(name, max_jobs=CPU_POOL_JOBS, cpus=CPU_POOL_CPUS,
                                        memory_mb=CPU_POOL_JOBS * 8 * GIB)
    for name in GPU_POOLS:
        capacities[name] = PoolCapacity(name, max_jobs=2 * GPU_POOL_GPUS, cpus=CPU_POOL_CPUS,
                                        memory_mb=CPU_POOL_JOBS * 8 * GIB,
                                        gpu_ids=tuple(f"{name}:{i}" for i in range(GPU_POOL_GPUS)))
    pools = {name: cfg.Pool(cap) for name, cap in capacities.items()}

    team_names = [f"team-{i:03d}" for i in range(N_TEAMS)]
    teams: dict[str, cfg.Team] = {}
    for name in team_names:
        borrow = rng.random() < 0.5
        quotas = {}
        for pool, cap in capacities.items():
            share_cpus = (cap.cpus or 0.0) / N_TEAMS
            quotas[pool] = cfg.Quota(
                cpus=share_cpus, gpus=cap.gpus // N_TEAMS if cap.gpus else None,
                borrow_cpus=4 * share_cpus if borrow else 0.0,
                borrow_gpus=2 if borrow and cap.gpus else 0)
        teams[name] = cfg.Team(name, members=frozenset({f"{name}-user"}), quotas=quotas)

    queues: dict[str, cfg.Queue] = {}
    per_level = N_QUEUES // LEVELS
    for i in range(N_QUEUES):
        name = f"q{i:04d}"
        if rng.random() < 0.1:
            queue_pools = tuple(rng.sample(GPU_POOLS, rng.choice((1, 2))))
        else:
            queue_pools = tuple(rng.sample(CPU_POOLS, rng.choice((1, 2))))
        queues[name] = cfg.Queue(
            name, pools=queue_pools, priority=LEVELS - 1 - i // per_level,
            max_running=rng.randint(2, 4) if rng.random() < 0.1 else None,
            weight=rng.choice((0.5, 1.0, 1.0, 2.0, 4.0)))

    by_pool = {p: [q for q in queues.values() if p in q.pools] for p in capacities}
    running: list[RunningJob] = []
    for pool, cap in capacities.items():
        if cap.gpus:
            count, each = cap.gpus, Resources(4.0, 32 * GIB, 1)  # every GPU taken
        else:
            count = FREE_POOL_RUNNING if pool in FREE_POOLS else cap.max_jobs
            each = Resources(RUNNING_CPUS, 4 * GIB, 0)
        for k in range(count):
            queue = rng.choice(by_pool[pool])
            running.append(RunningJob(
                job_id=f"run-{pool}-{k}", queue=queue.name, resources=each,
                gpu_ids=(cap.gpu_ids[k],) if each.gpus else (), pool=pool,
                team=rng.choice(team_names)))
    usage = {q: rng.uniform(0.0, 5_000.0) for q in queues if rng.random() < 0.8}
    policy = cfg.Policy(pools=pools, queues=queues, teams=teams,
                        max_running=len(running) + ADMIT)
    return Cluster(policy, tuple(running), usage, capacities)


def build_snapshot(cluster: Cluster, waiting: int, seed: int) -> Snapshot:
    return snapshot_of(cluster, backlog_of(build_pending(cluster, waiting, seed)))


def snapshot_of(cluster: Cluster, backlog: Backlog) -> Snapshot:
    return Snapshot(pending=backlog, running=cluster.running, now=NOW, pools=cluster.pools,
                    usage=cluster.usage)


def build_pending(cluster: Cluster, waiting: int, seed: int) -> list[PendingJob]:
    rng = random.Random(seed * 1_000_003 + waiting)
    queues = list(cluster.policy.queues.values())
    team_names = list(cluster.policy.teams)
    pending: list[PendingJob] = []
    for seq in range(waiting):
        queue = rng.choice(queues)
        team = rng.choice(team_names)
        gpu_queue = queue.pools[0] in GPU_POOLS
        resources = Resources(float(rng.randint(1, 4)), rng.randint(1, 8) * GIB,
                              rng.randint(1, 2) if gpu_queue else 0)
        pending.append(PendingJob(
            job_id=f"job-{seq:07d}", queue=queue.name, priority=rng.choice((0, 0, 0, 1, 2)),
            seq=seq, resources=resources, owner=f"{team}-user", team=team,
            submitted_at=NOW - rng.uniform(0.0, 500.0)))
    return pending


def backlog_of(jobs: Sequence[PendingJob]) -> Backlog:
    backlog = Backlog()
    for job in jobs:
        backlog.add(job)
    return backlog


# --- the measurement -------------------------------------------------------------------------


@dataclass(frozen=True)
class SizeResult:
    waiting: int
    running: int
    max_running: int
    admitted: int
    times_ms: tuple[float, ...]  # in rounds of every size in turn
    back_to_back_ms: tuple[float, ...]  # the same passes, one after another
    reasons: dict[str, int]  # pending reason code -> jobs
    preempted: int  # running jobs the pass asked to stop, where the scheduler preempts
    add_us: float  # Backlog upkeep: adding one job, as a submit arrives
    remove_us: float  # and removing one the pass admitted

    @property
    def min_ms(self) -> float:
        return min(self.times_ms)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def back_to_back_median_ms(self) -> float:
        return statistics.median(self.back_to_back_ms)


def one_pass(policy: cfg.Policy, snapshot: Snapshot) -> tuple[float, Decisions]:
    gc.collect()
    t0 = time.perf_counter()
    decisions = QueuePolicy(policy).schedule(snapshot)
    return (time.perf_counter() - t0) * 1000, decisions


def check(decisions: Decisions, snapshot: Snapshot) -> None:
    if len(decisions.admit) != ADMIT:
        raise AssertionError(f"the pass admitted {len(decisions.admit)} jobs, not {ADMIT}: "
                             "the benchmark's cluster no longer admits what it should")
    if len(decisions.admit) + len(decisions.pending) != len(snapshot.pending):
        raise AssertionError("some waiting job got neither an admission nor a reason")


@dataclass
class Prepared:
    """One size's inputs, built and warmed up before anything is timed."""

    waiting: int
    backlog: Backlog
    snapshot: Snapshot
    add_us: float
    decisions: Decisions


def prepare(cluster: Cluster, waiting: int, seed: int) -> Prepared:
    pending = build_pending(cluster, waiting, seed)
    gc.collect()
    t0 = time.perf_counter()
    backlog = backlog_of(pending)
    add_us = (time.perf_counter() - t0) * 1e6 / waiting
    snapshot = snapshot_of(cluster, backlog)
    _, decisions = one_pass(cluster.policy, snapshot)  # warm-up, untimed
    check(decisions, snapshot)
    return Prepared(waiting, backlog, snapshot, add_us, decisions)


def measure(cluster: Cluster, sizes: Sequence[int], repeat: int, seed: int
            ) -> list[SizeResult]:
    prepared = [prepare(cluster, size, seed) for size in sizes]
    rounds: dict[int, list[float]] = {p.waiting: [] for p in prepared}
    for _ in range(repeat):
        for p in prepared:
            ms, p.decisions = one_pass(cluster.policy, p.snapshot)
            check(p.decisions, p.snapshot)
            rounds[p.waiting].append(ms)
    results = []
    for p in prepared:
        back_to_back = [one_pass(cluster.policy, p.snapshot)[0] for _ in range(repeat)]
        decisions = p.decisions
        reasons = Counter(reason.code for reason in decisions.pending.values())
        t0 = time.perf_counter()
        for job_id in decisions.admit:
            p.backlog.remove(job_id)
        remove_us = (time.perf_counter() - t0) * 1e6 / len(decisions.admit)
        results.append(SizeResult(
            p.waiting, len(p.snapshot.running), cluster.policy.max_running,
            len(decisions.admit), tuple(rounds[p.waiting]), tuple(back_to_back),
            dict(sorted(reasons.items())), len(decisions.preempt), p.add_us, remove_us))
    return results


def profile(cluster: Cluster, waiting: int, seed: int, top: int) -> str:
    snapshot = build_snapshot(cluster, waiting, seed)
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    QueuePolicy(cluster.policy).schedule(snapshot)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


# --- results ---------------------------------------------------------------------------------


def results_dict(results: list[SizeResult], args: argparse.Namespace) -> dict[str, Any]:
    by_size = {r.waiting: r for r in results}
    big, base = by_size.get(GOAL_SIZE), by_size.get(GOAL_BASE_SIZE)
    ratio = big.median_ms / base.median_ms if big and base and base.median_ms else None
    ratio_b2b = big.back_to_back_median_ms / base.back_to_back_median_ms \
        if big and base and base.back_to_back_median_ms else None
    goals: dict[str, Any] = {
        f"pass_ms_at_{GOAL_SIZE}_at_most": {
            "target": GOAL_PASS_MS, "value": num(big.median_ms) if big else None,
            "pass": big.median_ms <= GOAL_PASS_MS if big else None},
        f"ratio_{GOAL_SIZE}_vs_{GOAL_BASE_SIZE}_at_most": {
            "target": GOAL_RATIO, "value": num(ratio, 3),
            "pass": ratio <= GOAL_RATIO if ratio is not None else None},
    }
    return {
        "machine": {"cpu_count": os.cpu_count(), "cpu_model": _cpu_model(),
                    "python": platform.python_version(),
                    "implementation": platform.python_implementation(),
                    "platform": platform.platform()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "config": {"seed": args.seed, "repeat": args.repeat, "sizes": args.sizes,
                   "queues": N_QUEUES, "teams": N_TEAMS, "priority_levels": LEVELS,
                   "pools": len(CPU_POOLS) + len(GPU_POOLS), "free_pools": list(FREE_POOLS),
                   "admit_per_pass": ADMIT, "timed": "QueuePolicy(policy).schedule(snapshot)"},
        "pass_ms": {str(r.waiting): num(r.median_ms, 3) for r in results},
        "pass_min_ms": {str(r.waiting): num(r.min_ms, 3) for r in results},
        "pass_all_ms": {str(r.waiting): [num(t, 3) for t in r.times_ms] for r in results},
        "us_per_waiting_job": {str(r.waiting): num(r.median_ms * 1000 / r.waiting, 3)
                               for r in results},
        "admitted": {str(r.waiting): r.admitted for r in results},
        "backlog_add_us": {str(r.waiting): num(r.add_us, 3) for r in results},
        "backlog_remove_us": {str(r.waiting): num(r.remove_us, 3) for r in results},
        "running": results[0].running if results else None,
        "max_running": results[0].max_running if results else None,
        "pending_reasons": {str(r.waiting): r.reasons for r in results},
        "preempted": {str(r.waiting): r.preempted for r in results},
        "ratio_100k_vs_10k": num(ratio, 3),
        "back_to_back_pass_ms": {str(r.waiting): num(r.back_to_back_median_ms, 3)
                                 for r in results},
        "back_to_back_all_ms": {str(r.waiting): [num(t, 3) for t in r.back_to_back_ms]
                                for r in results},
        "back_to_back_ratio_100k_vs_10k": num(ratio_b2b, 3),
        "goals": goals,
    }


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def render(results: list[SizeResult], summary: dict[str, Any]) -> None:
    config = summary["config"]
    table = Table(title=f"Trainyard scheduler: one QueuePolicy pass, {config['queues']:,} "
                        f"queues, {config['teams']} teams, {config['repeat']} rounds",
                  caption=f"running: {summary['running']:,}; global limit: "
                          f"{summary['max_running']:,}")
    for col in ("waiting", "admitted", "preempted", "min ms", "median ms", "µs/waiting",
                "back to back ms", "add µs", "remove µs"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("pending reasons")
    for r in results:
        reasons = "\n".join(f"{code} {count:,}" for code, count in r.reasons.items())
        table.add_row(f"{r.waiting:,}", str(r.admitted), str(r.preempted), f"{r.min_ms:.2f}",
                      f"{r.median_ms:.2f}", f"{r.median_ms * 1000 / r.waiting:.2f}",
                      f"{r.back_to_back_median_ms:.2f}", f"{r.add_us:.2f}",
                      f"{r.remove_us:.2f}", reasons)
    console.print(table)
    ratio = summary["ratio_100k_vs_10k"]
    if ratio is not None:
        console.print(f"median pass at {GOAL_SIZE:,} / at {GOAL_BASE_SIZE:,}: {ratio:.2f}x "
                      f"(for {GOAL_SIZE // GOAL_BASE_SIZE}x the waiting jobs); back to back: "
                      f"{summary['back_to_back_ratio_100k_vs_10k']:.2f}x")
    console.print(goals_table(summary["goals"]))


def goals_table(goals: dict[str, Any]) -> Table:
    table = Table(title="Goals")
    for col in ("goal", "target", "measured", "result"):
        table.add_column(col, no_wrap=True)
    ms = goals[f"pass_ms_at_{GOAL_SIZE}_at_most"]
    table.add_row(f"median pass, {GOAL_SIZE:,} waiting", f"<= {ms['target']:g} ms",
                  "n/a" if ms["value"] is None else f"{ms['value']:.2f} ms",
                  verdict(ms["pass"]))
    ratio = goals[f"ratio_{GOAL_SIZE}_vs_{GOAL_BASE_SIZE}_at_most"]
    table.add_row(f"{GOAL_SIZE:,} vs {GOAL_BASE_SIZE:,} waiting", f"<= {ratio['target']:g}x",
                  "n/a" if ratio["value"] is None else f"{ratio['value']:.2f}x",
                  verdict(ratio["pass"]))
    return table


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of counts: {text}") \
            from exc
    if not sizes or any(not ADMIT <= s <= MAX_SIZE for s in sizes):
        raise argparse.ArgumentTypeError(f"each size must be {ADMIT} to {MAX_SIZE:,}")
    return sorted(set(sizes))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--repeat", type=int, default=9,
                   help=f"timed passes per size, 1 to {MAX_REPEAT}")
    p.add_argument("--sizes", type=_sizes, default=list(DEFAULT_SIZES),
                   help="waiting-job counts, comma-separated [default: 10000,100000]")
    p.add_argument("--seed", type=int, default=SEED, help="seed of the generated inputs")
    p.add_argument("--profile", action="store_true",
                   help="also profile one pass at the largest size and print the top functions")
    p.add_argument("--profile-top", type=int, default=20, help="functions --profile lists")
    p.add_argument("--json", type=Path, default=RESULTS, help="where to write the results")
    args = p.parse_args(argv)
    if not 1 <= args.repeat <= MAX_REPEAT:
        p.error(f"--repeat must be 1 to {MAX_REPEAT}")
    return args


def main() -> int:
    args = parse_args()
    cluster = build_cluster(args.seed)
    console.log(f"{', '.join(f'{s:,}' for s in args.sizes)} waiting jobs: {args.repeat} "
                "rounds of one pass each, then as many passes of each back to back")
    results = measure(cluster, args.sizes, args.repeat, args.seed)
    summary = results_dict(results, args)
    render(results, summary)
    write_json(summary, args.json)
    console.print(f"results: {args.json}")
    if args.profile:
        console.log(f"profiling one pass at {args.sizes[-1]:,} waiting jobs")
        print(profile(cluster, args.sizes[-1], args.seed, args.profile_top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
