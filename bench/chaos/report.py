"""The runner's table, and the results file each run merges its scenarios into."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchlib import commit, write_json
from rich.console import Console
from rich.table import Table

RESULTS = Path(__file__).resolve().parent.parent / "results" / "chaos.json"
HEADLINE = ("jobs", "lost", "duplicated", "stuck")
GOAL_ZERO = ("lost", "duplicated", "stuck", "wrong_state", "internal_errors")

console = Console(width=None if sys.stdout.isatty() else 120)


def passed(result: dict[str, Any]) -> bool:
    return "error" not in result and all(not result.get(key) for key in GOAL_ZERO)


def _figures(result: dict[str, Any]) -> str:
    """The scenario's own figures, one line: scalars only (lists and maps stay in the JSON)."""
    skip = {*HEADLINE, "problems", "error", "quick", "seconds"}
    return ", ".join(f"{key} {value}" for key, value in result.items()
                     if key not in skip and isinstance(value, (int, float, str)))


def table(results: dict[str, dict[str, Any]]) -> Table:
    out = Table(title="Fault suite")
    for column in ("scenario", *HEADLINE, "verdict", "figures"):
        out.add_column(column, overflow="fold")
    for name, result in results.items():
        verdict = "[green]pass[/]" if passed(result) else "[red]miss[/]"
        out.add_row(name, *(str(result.get(key, "")) for key in HEADLINE), verdict,
                    result.get("error") or _figures(result))
    return out


def merge(results: dict[str, dict[str, Any]], path: Path = RESULTS) -> dict[str, Any]:
    """Write these scenarios' results, keeping the entries of scenarios not run now."""
    try:
        stored: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        stored = {}
    scenarios = dict(stored.get("scenarios", {}))
    version = commit()
    for name, result in results.items():
        scenarios[name] = {**result, "commit": version}
    merged = {**stored, "scenarios": dict(sorted(scenarios.items()))}
    write_json(merged, path)
    return merged
