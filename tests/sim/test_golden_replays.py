"""Every policy's replay of the Philly trace (a queue per team, and one queue) and of a
generated trace is the golden record's (tests/golden): each job starts and ends at the same
second and is preempted as often, and every summary figure is the same."""

from __future__ import annotations

import pytest

from tests.golden import record, replays


@pytest.fixture(scope="module")
def golden() -> dict[str, dict[str, object]]:
    data: dict[str, dict[str, object]] = record.read(record.REPLAYS)
    return data


@pytest.mark.parametrize("name", list(replays.RECORDS))
def test_replays_are_the_golden_records(name: str, golden: dict[str, dict[str, object]]
                                        ) -> None:
    if name.startswith("philly") and not replays.PHILLY.exists():
        # Data, not a component CI installs: a checkout without it replays the rest.
        pytest.skip(f"no Philly trace at {replays.PHILLY}")
    now = record.normal(replays.RECORDS[name]())
    assert set(now) == set(golden[name])
    for policy, result in now.items():
        expected = golden[name][policy]
        assert isinstance(expected, dict)
        assert result["summary"] == expected["summary"], f"{name}/{policy}: summary differs"
        assert result["jobs"] == expected["jobs"], f"{name}/{policy}: a job's times differ"
