"""PNG plots of a comparison, drawn with matplotlib's Agg canvas (no display, no pyplot):
the CDF of job completion times, utilization over time, and each team's share over time."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from trainyard.sim.engine import Outcome

HOUR = 3600.0
DAY = 86400.0


def write_plots(outcomes: Mapping[str, Outcome], summaries: Mapping[str, Mapping[str, Any]],
                directory: Path) -> list[Path]:
    """jct_cdf.png, utilization.png and team_shares.png in `directory` (made if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    return [_jct_cdf(outcomes, directory / "jct_cdf.png"),
            _utilization(summaries, directory / "utilization.png"),
            _team_shares(summaries, directory / "team_shares.png")]


def _save(figure: Figure, path: Path) -> Path:
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=110)
    return path


def _jct_cdf(outcomes: Mapping[str, Outcome], path: Path) -> Path:
    figure = Figure(figsize=(8, 5), layout="constrained")
    axes = figure.add_subplot()
    for name, outcome in outcomes.items():
        jct = sorted(job.finish - job.pending.submitted_at for job in outcome.jobs
                     if job.finish is not None)
        if not jct:
            continue
        axes.step([max(v / HOUR, 1e-3) for v in jct],
                  [(i + 1) / len(jct) for i in range(len(jct))], where="post", label=name)
    axes.set_xscale("log")
    axes.set_xlabel("job completion time (hours, log scale)")
    axes.set_ylabel("fraction of jobs")
    axes.set_title("CDF of job completion time")
    axes.grid(True, alpha=0.3)
    axes.legend()
    return _save(figure, path)


def _utilization(summaries: Mapping[str, Mapping[str, Any]], path: Path) -> Path:
    figure = Figure(figsize=(10, 5), layout="constrained")
    axes = figure.add_subplot()
    for name, summary in summaries.items():
        line = summary["timeline"]
        start = line["start"][0] if line["start"] else 0.0
        axes.plot([(t - start) / DAY for t in line["start"]], line["utilization"],
                  label=f"{name} ({summary['utilization']:.0%})", linewidth=1)
    axes.set_xlabel("days from the first submit")
    axes.set_ylabel(f"GPUs held / GPUs, per {summary_window(summaries):g} s window")
    axes.set_ylim(0, 1.05)
    axes.set_title("GPU utilization over time")
    axes.grid(True, alpha=0.3)
    axes.legend()
    return _save(figure, path)


def _team_shares(summaries: Mapping[str, Mapping[str, Any]], path: Path) -> Path:
    count = max(1, len(summaries))
    figure = Figure(figsize=(10, 2.6 * count), layout="constrained")
    for i, (name, summary) in enumerate(summaries.items(), start=1):
        axes = figure.add_subplot(count, 1, i)
        line = summary["timeline"]
        start = line["start"][0] if line["start"] else 0.0
        days = [(t - start) / DAY for t in line["start"]]
        shares = line["team_shares"]
        if shares:
            axes.stackplot(days, *shares.values(),
                           labels=[team or "(no team)" for team in shares], step="post")
        axes.set_ylim(0, 1.05)
        axes.set_ylabel("share of GPUs")
        axes.set_title(f"{name}: Jain's index {summary['jain']:.3f}", fontsize=10)
        axes.grid(True, alpha=0.3)
        if i == 1:
            axes.legend(loc="upper right", fontsize=8)
    figure.supxlabel("days from the first submit")
    return _save(figure, path)


def summary_window(summaries: Mapping[str, Mapping[str, Any]]) -> float:
    for summary in summaries.values():
        return float(summary["timeline"]["window_s"])
    return 0.0
