"""The peer benchmark's table (rich) and chart (PNG), from its results dict."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from benchlib import verdict
from rich.console import Console
from rich.table import Table

console = Console(width=None if sys.stdout.isatty() else 140)

# (key, label, unit) in the order the table shows them; the limit column's key, if any.
ROWS: list[tuple[str, str, str, str]] = [
    ("submit_per_s", "1. submit throughput, all at once", "jobs/s", ""),
    ("submit_system_cpu_ms", "1.   CPU per submit, the system's processes", "ms", ""),
    ("submit_client_cpu_ms", "1.   CPU per submit, the submitting client", "ms", ""),
    ("start_p50_ms", "1. submit->start p50, idle system", "ms", "fork_exec_start_p50_ms"),
    ("start_p99_ms", "1. submit->start p99, idle system", "ms", "fork_exec_start_p99_ms"),
    ("queued_start_p50_ms", "1. submit->start p50, among them", "ms", ""),
    ("queued_start_p99_ms", "1. submit->start p99, among them", "ms", ""),
    ("e2e_jobs_per_s", "1. end-to-end, until all finished", "jobs/s",
     "fork_exec_e2e_jobs_per_s"),
    ("e2e_finished_jobs", "1.   jobs finished by then", "jobs", ""),
    ("train_makespan_s", "2. makespan of the training jobs", "s", "train_makespan_ideal_s"),
    ("train_finished_jobs", "2.   jobs finished by then", "jobs", ""),
    ("train_jobs_per_s", "2.   training jobs finished per second", "jobs/s", ""),
    ("cpu_utilisation_pct", "2. machine CPU utilisation", "%", ""),
    ("slots_busy_pct", "2. slots busy with a job", "%", ""),
    ("idle_gap_p50_ms", "2. idle between consecutive jobs, p50", "ms", ""),
    ("idle_gap_p99_ms", "2. idle between consecutive jobs, p99", "ms", ""),
    ("burst_wait_p50_ms", "3. burst: submit->start p50", "ms", ""),
    ("burst_wait_max_ms", "3. burst: submit->start max", "ms", ""),
    ("burst_first_start_after_free_ms", "3. burst: first start after a slot frees", "ms", ""),
    ("burst_last_start_after_free_ms", "3. burst: last start after the last frees", "ms", ""),
    ("docker_start_p50_ms", "container submit->RUNNING p50", "ms", "docker_run_start_p50_ms"),
]
PEERS = ("slurm", "ray")
LABELS = {"trainyard": "Trainyard", "slurm": "Slurm", "ray": "Ray Jobs"}


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return str(value)


def _x(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}x"


def _cells(results: dict[str, Any], key: str, unit: str, limit_key: str,
           capped_mark: str) -> list[str]:
    """One figure's row after its label: each system's value (marked where the workload
    hit its time cap), the limit, and the ratios (none for counts of jobs)."""
    systems = results["systems"]
    cells = []
    for name in ("trainyard", *PEERS):
        figures = systems.get(name, {})
        capped = (key.startswith("e2e") and figures.get("e2e_capped")) or \
            (key.startswith("train") and figures.get("train_capped"))
        cells.append(_fmt(figures.get(key)) + (capped_mark if capped else ""))
    cells.append(_fmt(systems.get("limits", {}).get(limit_key)) if limit_key else "")
    cells += ["" if unit == "jobs" else _x(results["ratios"].get(f"{key}_vs_{p}"))
              for p in PEERS]
    return cells


def render(results: dict[str, Any]) -> None:
    systems = results["systems"]
    lim = systems.get("limits", {})
    m = results["machine"]
    table = Table(title=f"Trainyard beside Slurm and Ray Jobs: {m['cpu_count']} CPUs "
                        f"({m['cpu_model']}), {results['date']}",
                  caption="ratio: Trainyard / peer; a '*' marks a figure cut off at the "
                          "workload's time cap")
    for col in ("figure", "unit", "Trainyard", "Slurm", "Ray Jobs", "limit", "T/Slurm",
                "T/Ray"):
        table.add_column(col, justify="left" if col == "figure" else "right", no_wrap=True)
    for key, label, unit, limit_key in ROWS:
        table.add_row(label, unit, *_cells(results, key, unit, limit_key, "*"))
    console.print(table)

    limits = Table(title="Physical limits, same run")
    for col in ("limit", "value"):
        limits.add_column(col, justify="left" if col == "limit" else "right")
    for key, value in lim.items():
        limits.add_row(key, _fmt(value))
    console.print(limits)

    goals = Table(title="Goals")
    for col in ("goal", "target", "measured", "result"):
        goals.add_column(col, no_wrap=True)
    for goal in results["goals"].values():
        unit = goal["unit"]
        sign = ">=" if goal.get("at_least") else "<="
        target = "-" if goal["target"] is None else f"{sign} {goal['target']:g} {unit}"
        value = "-" if goal["value"] is None else f"{goal['value']:.2f} {unit}"
        goals.add_row(goal["text"], target, value, verdict(goal["pass"]))
    console.print(goals)
    for goal in results["goals"].values():
        if "why" in goal:
            console.print(f"[red]missed[/] {goal['text']}: {goal['why']}")
    for name, figures in systems.items():
        for what in ("error", "not_measured", "first_error", "docker_not_measured"):
            if what in figures:
                console.print(f"[yellow]{LABELS.get(name, name)}: {what}: {figures[what]}[/]")


def chart(results: dict[str, Any], path: Path) -> None:
    """Four panels: rates, start latency, CPU utilisation over the training workload, and
    the idle gaps between consecutive training jobs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = results["systems"]
    names = [n for n in ("trainyard", *PEERS) if "submit_per_s" in systems.get(n, {})]
    labels = [LABELS[n] for n in names]
    colors = {"trainyard": "tab:green", "slurm": "tab:blue", "ray": "tab:orange"}
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    m = results["machine"]
    fig.suptitle(f"Trainyard, Slurm and Ray Jobs on {m['cpu_count']} CPUs, {results['date']}")

    ax = axes[0][0]
    width = 0.38
    for i, key in enumerate(("submit_per_s", "e2e_jobs_per_s")):
        values = [systems[n].get(key) or 0 for n in names]
        ax.bar([x + i * width for x in range(len(names))], values, width,
               label="submits/s" if i == 0 else "end-to-end jobs/s",
               color=["tab:gray", "tab:purple"][i])
    ax.set_xticks([x + width / 2 for x in range(len(names))], labels)
    ax.set_yscale("log")
    ax.set_title("500 trivial jobs (log scale; higher is better)")
    ax.legend()

    ax = axes[0][1]
    for n in names:
        samples = results["curves"].get(n, {}).get("start_ms", [])
        if samples:
            ax.plot(samples, [i / len(samples) for i in range(1, len(samples) + 1)],
                    label=LABELS[n], color=colors[n], drawstyle="steps-post")
    fork = systems["limits"].get("fork_exec_start_p50_ms")
    if fork:
        ax.axvline(fork, color="black", linestyle=":", label="fork/exec p50")
    ax.set_xscale("log")
    ax.set_xlabel("submit -> start, ms (log)")
    ax.set_ylabel("share of jobs")
    ax.set_title("Start latency on an idle system")
    ax.legend()

    ax = axes[1][0]
    for n in names:
        curve = results["curves"].get(n, {}).get("cpu", [])
        if curve:
            ax.plot([t for t, _ in curve], [u * 100 for _, u in curve], label=LABELS[n],
                    color=colors[n], linewidth=1)
    ax.set_ylim(0, 105)
    ax.set_xlabel("seconds since the first submit")
    ax.set_ylabel("machine CPU busy, %")
    ax.set_title("200 training jobs, 2 at a time")
    ax.legend()

    ax = axes[1][1]
    data = [results["curves"].get(n, {}).get("gaps_ms", []) or [math.nan] for n in names]
    ax.boxplot(data, showfliers=False)
    ax.set_xticks(range(1, len(names) + 1), labels)
    ax.set_yscale("log")
    goal = results["goals"].get("idle_gap", {}).get("target")  # the goal the run judged
    if goal is not None:
        ax.axhline(goal, color="black", linestyle=":", label=f"goal: {goal:g} ms")
    ax.set_ylabel("ms (log)")
    ax.set_title("Idle slot between consecutive training jobs")
    ax.legend()

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(results: dict[str, Any]) -> str:
    """The figures and goals as Markdown tables, for bench/README.md."""
    lines = ["| figure | unit | Trainyard | Slurm | Ray Jobs | limit | T/Slurm | T/Ray |",
             "|---|---|---|---|---|---|---|---|"]
    for key, label, unit, limit_key in ROWS:
        cells = _cells(results, key, unit, limit_key, " *")
        lines.append(f"| {label} | {unit} | " + " | ".join(cells) + " |")
    lines += ["", "| goal | target | measured | result |", "|---|---|---|---|"]
    for goal in results["goals"].values():
        unit = goal["unit"]
        sign = "≥" if goal.get("at_least") else "≤"
        target = "-" if goal["target"] is None else f"{sign} {goal['target']:g} {unit}"
        value = "-" if goal["value"] is None else f"{goal['value']:.2f} {unit}"
        result = {True: "met", False: "**missed**", None: "not measured"}[goal["pass"]]
        lines.append(f"| {goal['text']} | {target} | {value} | {result} |")
    lines.append("")
    lines += [f"- **{g['text']}**, missed: {g['why']}." for g in results["goals"].values()
              if "why" in g]
    return "\n".join(lines)
