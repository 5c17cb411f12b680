"""Fault points are inert unless TRAINYARD_FAULT names them."""

import pytest

from trainyard.store import faults


def test_a_fault_point_is_armed_only_by_its_own_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(faults.FAULT_ENV, raising=False)
    assert not faults.armed(faults.INSIDE_REQUEUE)
    faults.crash_at(faults.INSIDE_REQUEUE)  # nothing armed: the process lives on
    monkeypatch.setenv(faults.FAULT_ENV, faults.REQUEUE_IN_TWO_WRITES)
    assert faults.armed(faults.REQUEUE_IN_TWO_WRITES)
    assert not faults.armed(faults.INSIDE_REQUEUE)
    faults.crash_at(faults.INSIDE_REQUEUE)  # another point: still alive
