"""The policies benchmark's deep-backlog figures on a small generated backlog: a replay's
time is split into its passes and what one costs, each against fifo's."""

from __future__ import annotations

import pytest
from policies import deep, deep_trace, pass_ratios


def test_the_deep_backlog_splits_each_replay_into_passes_and_their_cost() -> None:
    results = deep(deep_trace(150, 16, 12.0), 16, ["default"])
    assert list(results) == ["fifo", "default"]
    for summary in results.values():
        assert summary["passes"] > 0
        assert summary["ms_per_pass"] * summary["passes"] / 1000 == pytest.approx(
            summary["sim_seconds"], rel=1e-4)
    ratios = pass_ratios(results)
    assert ratios["fifo"] == (1.0, 1.0)
    passes, per_pass = ratios["default"]
    assert passes == results["default"]["passes"] / results["fifo"]["passes"]
    # The default policy's own wake-ups and preemptions make it pass more often than fifo.
    assert passes > 1
    assert per_pass == pytest.approx(
        results["default"]["ms_per_pass"] / results["fifo"]["ms_per_pass"])
