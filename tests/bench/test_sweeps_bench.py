"""The sweep benchmark in a tiny configuration: it runs end to end on a real server and
writes its figures as its text says."""

from __future__ import annotations

import json
from pathlib import Path

from sweeps import compare, main


def test_compare_follows_its_definition() -> None:
    base = {"cpu_hours": 0.02, "best_test_accuracy": 0.97}
    assert compare(base, {"cpu_hours": 0.008, "best_test_accuracy": 0.968}) == {
        "cpu_ratio": 0.4, "best_gap_points": 0.2, "cpu_pass": True, "best_pass": True}
    assert compare(base, {"cpu_hours": 0.012, "best_test_accuracy": 0.96}) == {
        "cpu_ratio": 0.6, "best_gap_points": 1.0, "cpu_pass": False, "best_pass": False}


def test_a_tiny_run_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "sweeps.json"
    assert main(["--trials", "3", "--epochs", "2", "--rules", "asha", "--json",
                 str(out)]) == 0
    report = json.loads(out.read_text())
    assert set(report["sweeps"]) == {"none", "asha"}
    for run in report["sweeps"].values():
        assert run["trials"] == 3 and run["failed"] == 0
        assert run["succeeded"] + run["stopped_early"] == 3
        assert run["cpu_hours"] > 0 and 0 < run["best_test_accuracy"] <= 1
    assert report["sweeps"]["none"]["stopped_early"] == 0
    assert set(report["goals"]) == {"asha_cpu_ratio_at_most", "asha_best_gap_points_at_most"}
