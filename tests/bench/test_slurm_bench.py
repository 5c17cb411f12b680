"""bench/slurm.py's arithmetic, by hand-computed cases."""

from __future__ import annotations

from pathlib import Path

import pytest
import slurm


def test_ratio_is_none_without_a_base() -> None:
    assert slurm.ratio(3.0, 2.0) == 1.5
    assert slurm.ratio(3.0, 0.0) is None
    assert slurm.ratio(None, 2.0) is None
    assert slurm.ratio(3.0, None) is None


def test_goals_at_most_and_at_least_include_the_target() -> None:
    assert slurm.goal_met("at_most", 1.2, 1.2) is True
    assert slurm.goal_met("at_most", 1.2, 1.21) is False
    assert slurm.goal_met("at_least", 0.9, 0.9) is True
    assert slurm.goal_met("at_least", 0.9, 0.89) is False
    assert slurm.goal_met("at_least", 0.9, None) is None


def test_latencies_pair_submits_with_stamps_and_sort() -> None:
    submits = {"a": 10.0, "b": 20.0, "c": 30.0}
    stamps = {"a": 10.5, "b": 20.1}  # c never started
    assert slurm.latencies_ms(submits, stamps) == pytest.approx([100.0, 500.0])
    assert slurm.rate(10, 4.0) == 2.5
    assert slurm.rate(10, 0.0) == 0.0


def test_a_stamp_is_read_only_once_written(tmp_path: Path) -> None:
    stamp = tmp_path / "s"
    assert slurm.read_stamp(stamp) is None
    stamp.write_text("")
    assert slurm.read_stamp(stamp) is None
    stamp.write_text("1712345678.123456789\n")
    assert slurm.read_stamp(stamp) == 1712345678.123456789
    assert str(stamp) in slurm.stamp_command(stamp)
