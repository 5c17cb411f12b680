"""Metric curves of runs: a small chart in the terminal (one sparkline per run and metric,
on a scale shared by the runs), or a PNG drawn with matplotlib's Agg backend."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

BARS = "▁▂▃▄▅▆▇█"
WIDTH = 40

Curve = list[tuple[float, float]]  # (step, value)


def curves(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Curve]]:
    """metric -> run id -> points, from runs fetched with their series."""
    out: dict[str, dict[str, Curve]] = {}
    for run in runs:
        for series in run.get("series") or []:
            points = [(float(p["step"]) if p["has_step"] else float(i), float(p["value"]))
                      for i, p in enumerate(series["points"])]
            out.setdefault(series["key"], {})[run["run_id"]] = points
    return out


def _sample(values: list[float], width: int) -> list[float]:
    if len(values) <= width:
        return values
    return [values[int(i * len(values) / width)] for i in range(width - 1)] + [values[-1]]


def sparkline(values: list[float], low: float, high: float, width: int = WIDTH) -> str:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return ""
    span = high - low
    out = []
    for v in _sample(values, width):
        if not math.isfinite(v):
            out.append(" ")
            continue
        level = 0 if span <= 0 else int((v - low) / span * (len(BARS) - 1) + 0.5)
        out.append(BARS[max(0, min(len(BARS) - 1, level))])
    return "".join(out)


def chart_table(by_metric: dict[str, dict[str, Curve]], metrics: Sequence[str] = (),
                labels: dict[str, str] | None = None, width: int = WIDTH) -> Table | None:
    """One row per metric and run: the curve on the metric's scale (shared by the runs),
    and its first and last value."""
    keys = [k for k in (metrics or sorted(by_metric)) if k in by_metric]
    if not keys:
        return None
    table = Table("METRIC", "RUN", "CURVE", "FIRST", "LAST", title="metric curves",
                  show_edge=False)
    table.columns[2].no_wrap = True
    for key in keys:
        runs = by_metric[key]
        every = [v for pts in runs.values() for _, v in pts if math.isfinite(v)]
        low, high = (min(every), max(every)) if every else (0.0, 0.0)
        table.add_section()
        for i, (run_id, points) in enumerate(runs.items()):
            values = [v for _, v in points]
            head = escape(key) if i == 0 else (f"[dim]{low:.3g}..{high:.3g}[/]" if i == 1
                                              else "")
            table.add_row(head, escape((labels or {}).get(run_id, run_id)),
                          f"[cyan]{sparkline(values, low, high, width)}[/]",
                          f"{values[0]:.4g}" if values else "-",
                          f"{values[-1]:.4g}" if values else "-")
    return table


def write_png(by_metric: dict[str, dict[str, Curve]], path: Path,
              metrics: Sequence[str] = (), title: str = "") -> list[str]:
    """One panel per metric, one line per run; returns the metrics drawn."""
    try:
        import matplotlib
    except ImportError:
        raise ValueError("drawing a PNG needs matplotlib (in requirements.lock; "
                         "pip install matplotlib)") from None
    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    keys = [k for k in (metrics or sorted(by_metric)) if k in by_metric]
    if not keys:
        raise ValueError("the runs recorded no metric points to plot")
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    try:
        for ax, key in zip(axes.flat, keys, strict=False):
            for run_id, points in by_metric[key].items():
                ax.plot([s for s, _ in points], [v for _, v in points], marker=".",
                        label=run_id)
            ax.set_title(key)
            ax.set_xlabel("step")
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
        for ax in list(axes.flat)[len(keys):]:
            ax.set_visible(False)
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return keys
