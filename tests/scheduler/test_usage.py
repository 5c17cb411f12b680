"""Usage per pool and per team and pool, added up as the queue policy's pass adds it."""

from __future__ import annotations

from trainyard.domain.pools import add
from trainyard.domain.spec import Resources
from trainyard.scheduler.model import RunningJob
from trainyard.scheduler.usage import Held, PoolUse, pool_use, team_use


def test_team_and_pool_use_add_up_in_order_from_zero() -> None:
    running = [
        RunningJob("a", "q", Resources(0.1, 100, 1), pool="gpu", team="vision"),
        RunningJob("b", "q", Resources(0.2, 200, 0), pool="gpu", team="vision"),
        RunningJob("c", "q", Resources(1.0, 50, 0), pool="cpu", team=""),
        RunningJob("d", "q", Resources(0.3, 10, 2), pool="gpu", team="nlp"),
    ]
    by_team = team_use(running)
    assert set(by_team) == {("vision", "gpu"), ("nlp", "gpu")}  # no team: counted for none
    # The very floats one add() after another gives (0.1 + 0.2 is not 0.3).
    assert by_team[("vision", "gpu")] == add(add(Resources(0.0, 0, 0), running[0].resources),
                                             running[1].resources)
    assert by_team[("vision", "gpu")].cpus == 0.1 + 0.2
    by_pool = pool_use(running)
    assert by_pool["cpu"] == PoolUse(Resources(1.0, 50, 0), 1)
    assert by_pool["gpu"].jobs == 3 and by_pool["gpu"].used.gpus == 3
    assert isinstance(by_pool["gpu"].used.memory_mb, int)


def test_records_count_as_held() -> None:
    held = [Held("vision", "local", Resources(2.0, 2048, 0))]
    assert team_use(held) == {("vision", "local"): Resources(2.0, 2048, 0)}
    assert pool_use([]) == {} and team_use([]) == {}
