"""What users would feel, from a replay's outcome: completion times, queueing delay,
utilization, preemptions, each team's share of the GPUs over time, and fairness.

Definitions (all times in seconds):
- JCT: finish - submit. Queueing delay (wait): the part of it the job was not running:
  before its first start and after each preemption until it ran again.
- makespan: the last finish - the first submit.
- utilization: GPU-seconds held by jobs / (GPUs x makespan); restart overheads count as
  held.
- shares: time is cut into windows of `window` seconds from the first submit; a team's
  share in a window is the GPU-seconds it held there / (GPUs x window).
- fair share: at each instant, the teams' demands (GPUs of their running and waiting jobs)
  are met by max-min fair water-filling of the cluster's GPUs, weighted by each team's GPU
  quota when the policy gives every team one, equally otherwise: no team gets more than it
  asks for, and what one leaves goes to the others in proportion to their weights.
- Jain's index: only instants with contention count, those where the teams together ask
  for more GPUs than the cluster has. In each window, each team with a fair share there
  gets x = GPU-seconds it held / GPU-seconds of its fair share, over the window's contended
  instants, and J = (sum x)^2 / (n * sum x^2) over those n teams (1 when all got the same
  fraction of their fair share, 1/n when one team got everything). The index reported is
  the mean of the windows' J weighted by their contended seconds; 1.0 when there was no
  contention at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainyard.sim.engine import Outcome, ReplayJob

DEFAULT_WINDOW_S = 3600.0


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks; NaN for no values."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def water_fill(demands: Sequence[float], weights: Sequence[float],
               capacity: float) -> list[float]:
    """Max-min fair allocation of `capacity` to demands, weighted."""
    alloc = [0.0] * len(demands)
    active = [i for i, d in enumerate(demands) if d > 0 and weights[i] > 0]
    left = float(capacity)
    while active and left > 1e-12:
        per_weight = left / sum(weights[i] for i in active)
        satisfied = [i for i in active if demands[i] - alloc[i] <= per_weight * weights[i]]
        if not satisfied:
            for i in active:
                alloc[i] += per_weight * weights[i]
            break
        for i in satisfied:
            left -= demands[i] - alloc[i]
            alloc[i] = float(demands[i])
        active = [i for i in active if i not in satisfied]
    return alloc


def jain(values: Sequence[float]) -> float:
    total = sum(values)
    squares = sum(v * v for v in values)
    return 1.0 if squares == 0 else total * total / (len(values) * squares)


@dataclass(frozen=True)
class Timeline:
    """The outcome's timeline cut into windows."""

    starts: list[float]  # each window's start, from the first submit
    utilization: list[float]  # GPUs held / GPUs, averaged over each window
    shares: dict[str, list[float]]  # team -> its share of the GPUs in each window
    jain: float
    contended_s: float
    fair_ratio: dict[str, float]  # team -> held / fair share over all contended instants


def timeline(outcome: Outcome, weights: Mapping[str, float], window: float,
             start: float, end: float) -> Timeline:
    teams = outcome.teams
    gpus = outcome.total_gpus
    n_windows = max(1, math.ceil((end - start) / window)) if end > start else 1
    held_s = [[0.0] * len(teams) for _ in range(n_windows)]
    fair_s = [[0.0] * len(teams) for _ in range(n_windows)]
    got_s = [[0.0] * len(teams) for _ in range(n_windows)]
    contended = [0.0] * n_windows
    w = [weights.get(team, 1.0) for team in teams]
    points = outcome.timeline
    for i, (t, held, demand) in enumerate(points):
        t_next = points[i + 1][0] if i + 1 < len(points) else end
        if t_next <= t:
            continue
        busy = sum(demand) > gpus
        fair = water_fill(demand, w, gpus) if busy else None
        at = t
        while at < t_next:
            k = min(n_windows - 1, int((at - start) // window))
            upto = min(t_next, start + (k + 1) * window) if k < n_windows - 1 else t_next
            dt = upto - at
            row = held_s[k]
            for j, h in enumerate(held):
                row[j] += h * dt
            if fair is not None:
                contended[k] += dt
                for j, h in enumerate(held):
                    got_s[k][j] += h * dt
                    fair_s[k][j] += fair[j] * dt
            at = upto
    starts = [start + k * window for k in range(n_windows)]
    lengths = [min(window, end - s) if end > s else window for s in starts]
    utilization = [sum(row) / (gpus * length) if length > 0 else 0.0
                   for row, length in zip(held_s, lengths, strict=True)]
    shares = {team: [held_s[k][j] / (gpus * lengths[k]) if lengths[k] > 0 else 0.0
                     for k in range(n_windows)] for j, team in enumerate(teams)}
    weighted = 0.0
    for k in range(n_windows):
        if contended[k] <= 0:
            continue
        ratios = [got_s[k][j] / fair_s[k][j] for j in range(len(teams)) if fair_s[k][j] > 0]
        if ratios:
            weighted += jain(ratios) * contended[k]
    total_contended = sum(contended)
    index = weighted / total_contended if total_contended > 0 else 1.0
    ratio = {}
    for j, team in enumerate(teams):
        fair_total = sum(fair_s[k][j] for k in range(n_windows))
        ratio[team] = sum(got_s[k][j] for k in range(n_windows)) / fair_total \
            if fair_total > 0 else math.nan
    return Timeline(starts, utilization, shares, index, total_contended, ratio)


def _stats(jobs: Sequence[ReplayJob], prefix: str = "") -> dict[str, Any]:
    done = [job for job in jobs if job.finish is not None]
    jct = sorted(job.finish - job.pending.submitted_at for job in done
                 if job.finish is not None)
    wait = sorted(job.finish - job.pending.submitted_at - job.held for job in done
                  if job.finish is not None)
    return {
        "jobs": len(done),
        "mean_jct": sum(jct) / len(jct) if jct else math.nan,
        "median_jct": percentile(jct, 50),
        "p95_jct": percentile(jct, 95),
        "p99_jct": percentile(jct, 99),
        "mean_wait": sum(wait) / len(wait) if wait else math.nan,
        "median_wait": percentile(wait, 50),
        "p95_wait": percentile(wait, 95),
        "p99_wait": percentile(wait, 99),
        "preemptions": sum(job.preemptions for job in jobs),
        "gpu_seconds": sum(job.pending.resources.gpus * job.held for job in jobs),
    }


def gpu_hours_lost(jobs: Sequence[ReplayJob]) -> float:
    """The GPU-hours of running that preemptions threw away (past the jobs' checkpoints)."""
    return sum(job.pending.resources.gpus * job.lost for job in jobs) / 3600.0


def summarize(outcome: Outcome, weights: Mapping[str, float],
              window: float = DEFAULT_WINDOW_S, *, work_lost: bool = False) -> dict[str, Any]:
    """One policy's figures, in the shape of the JSON report's entries; with `work_lost`
    (a replay that models checkpoints) also the GPU-hours preemptions lost, in all and by
    team."""
    jobs = outcome.jobs
    start = min((job.pending.submitted_at for job in jobs), default=0.0)
    end = max((job.finish for job in jobs if job.finish is not None), default=start)
    makespan = end - start
    line = timeline(outcome, weights, window, start, end)
    summary = _stats(jobs)
    gpus = outcome.total_gpus
    summary.update({
        "makespan": makespan,
        "utilization": summary["gpu_seconds"] / (gpus * makespan) if makespan > 0 else 0.0,
        "jain": line.jain,
        "contended_seconds": line.contended_s,
        "unfinished": outcome.unfinished,
        "completed": outcome.completed,
        "simulated_until": outcome.until,
        "passes": outcome.passes,
        "events": outcome.events,
        "sim_seconds": outcome.seconds,
    })
    by_team: dict[str, list[ReplayJob]] = {}
    for job in jobs:
        by_team.setdefault(job.team, []).append(job)
    teams = {}
    for team in sorted(by_team):
        figures = _stats(by_team[team])
        figures["share"] = figures["gpu_seconds"] / (gpus * makespan) if makespan > 0 \
            else 0.0
        figures["fair_share_ratio"] = line.fair_ratio.get(team, math.nan)
        if work_lost:
            figures["gpu_hours_lost"] = gpu_hours_lost(by_team[team])
        teams[team] = figures
    if work_lost:
        summary["gpu_hours_lost"] = gpu_hours_lost(jobs)
    summary["teams"] = teams
    summary["timeline"] = {"window_s": window, "start": line.starts,
                           "utilization": line.utilization, "team_shares": line.shares}
    return summary
