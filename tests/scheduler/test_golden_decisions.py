"""Every decision and reason on 3,000 random snapshots is the golden record's
(tests/golden): a refactoring of the scheduler changes none of them."""

from __future__ import annotations

from tests.golden import record, snapshots


def test_decisions_and_reasons_are_the_golden_records() -> None:
    golden = record.read(record.DECISIONS)
    assert len(golden) == record.CASES
    for index, case in enumerate(snapshots.cases(record.CASES)):
        assert record.normal(case) == golden[index], f"snapshot {index} decided otherwise"
