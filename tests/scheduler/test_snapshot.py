"""The scheduler's input as the tracker and the replay both build it."""

from __future__ import annotations

import pytest

from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import Resources
from trainyard.scheduler.attained import held_service
from trainyard.scheduler.model import Decisions, PendingJob
from trainyard.scheduler.snapshot import Feed, active_job

TWO_GPUS = Resources(1.0, 0, 2)


def test_a_job_still_launching_counts_as_started_now() -> None:
    launching = active_job("j", "a", TWO_GPUS, "gpu", ("0", "1"), "vision", None, 500.0,
                           attained=held_service(TWO_GPUS, 60.0), priority=2)
    assert launching.started_at == 500.0 and launching.attained == 120.0
    assert (launching.queue, launching.pool, launching.gpu_ids, launching.team,
            launching.priority) == ("a", "gpu", ("0", "1"), "vision", 2)
    running = active_job("j", "a", TWO_GPUS, "gpu", ("0", "1"), "", 100.0, 500.0,
                         preempting=True, sweep="s1")
    assert running.started_at == 100.0 and running.preempting and running.sweep == "s1"


def test_usage_is_decayed_from_one_accounting_to_the_next() -> None:
    run = active_job("r", "a", TWO_GPUS, "gpu", ("0", "1"), "", 0.0, 0.0)
    first = Feed().accounted([run], 100.0, 3600.0)
    assert first.usage == {"a": 0.0} and first.usage_at == 100.0  # nothing ran before
    later = first.accounted([run], 110.0, 3600.0)
    assert later.usage["a"] == pytest.approx(20.0, rel=1e-3)  # 2 GPUs for 10 s
    assert later.accounted([run], 50.0, 3600.0).usage == later.usage  # clock went back
    assert first.usage == {"a": 0.0}  # each step is a new feed


def test_a_snapshot_carries_the_usage_and_the_last_passs_claims() -> None:
    pools = {"gpu": PoolCapacity("gpu", max_jobs=4, gpu_ids=("0", "1"))}
    pending = [PendingJob("w", "a", 0, 1)]
    feed = Feed(usage={"a": 3.0}, usage_at=10.0)
    first = feed.snapshot(pending, [], 10.0, pools=pools, unavailable={"docker": "away"},
                          sweep_limits={"s": 1}, sweep_titles={"s": "pipeline 'etl'"})
    assert (first.pending, first.running, first.now, first.pools) == (pending, [], 10.0, pools)
    assert first.usage == {"a": 3.0} and first.reclaiming == {}
    assert first.unavailable == {"docker": "away"} and first.sweep_limits == {"s": 1}
    assert first.sweep_titles == {"s": "pipeline 'etl'"}
    decided = Decisions(admit=(), pending={}, reclaiming={"w": "gpu"})
    second = feed.after(decided).snapshot(pending, [], 11.0)
    assert second.reclaiming == {"w": "gpu"} and second.usage == {"a": 3.0}
    assert second.pools == {} and second.sweep_limits == {}
