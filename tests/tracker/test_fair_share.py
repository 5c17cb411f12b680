"""Fair-share usage decays, outlives a restart, and follows a reloaded half-life."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.liveserver import make_server, wait_for
from trainyard.auth.policy import LOCAL
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.scheduler import RunningJob
from trainyard.server.assembly import TrainyardServer
from trainyard.store.db import Database
from trainyard.store.usage import UsageStore
from trainyard.tracker.fair_share import FairShareUsage

POLICY = """
max_running = 1
fair_share_half_life = "{half_life}"

[pools.cpu]
cpus = 2
max_jobs = 2

[queues.a]
pools = ["cpu"]

[queues.b]
pools = ["cpu"]
"""


def server(tmp_path: Path, database_url: str, half_life: str = "1h") -> TrainyardServer:
    return make_server(tmp_path, database_url, POLICY.format(half_life=half_life))


def submit(srv: TrainyardServer, name: str, queue: str, command: str = "true") -> str:
    return srv.service.train(LOCAL, JobSpec(name=name, command=command, queue=queue,
                                            resources=Resources(cpus=1)))[0]


def test_usage_is_saved_at_stop_and_read_back_at_start(tmp_path: Path,
                                                       database_url: str) -> None:
    first = server(tmp_path, database_url)
    first.start()
    job = submit(first, "used", "a", "sleep 0.5")
    wait_for(first, job, {JobState.SUCCEEDED})
    first.stop(grace=0)
    saved, at = _load(tmp_path, database_url)
    assert saved["a"] > 0 and at is not None and at <= time.time()


def _load(tmp_path: Path, database_url: str) -> tuple[dict[str, float], float | None]:
    srv = server(tmp_path, database_url)  # opens the store without starting
    try:
        return UsageStore(srv.db).load()
    finally:
        srv.db.close()


def test_after_a_restart_the_queue_that_used_more_still_waits_its_turn(
        tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture) -> None:
    # What an earlier run of the server left: queue a used far more than b.
    srv = server(tmp_path, database_url)
    UsageStore(srv.db).save({"a": 1000.0}, time.time())
    srv.db.close()
    srv = server(tmp_path, database_url)
    srv.start()
    try:
        blocker = submit(srv, "blocker", "b", "sleep 1")
        wait_for(srv, blocker, {JobState.RUNNING})
        from_a = submit(srv, "from-a", "a")  # submitted first...
        from_b = submit(srv, "from-b", "b")
        wait_for(srv, from_a, {JobState.SUCCEEDED})
        wait_for(srv, from_b, {JobState.SUCCEEDED})
        starts = {j: next(e.time for e in srv.jobs.events(j) if e.to_state is JobState.RUNNING)
                  for j in (from_a, from_b)}
        # ...but b used less, so its job had the slot first.
        assert starts[from_b] < starts[from_a]
        time.sleep(0.5)  # passes over an empty queue
        failed = [r for r in caplog.records if r.name.startswith("trainyard.tracker")
                  and r.levelno >= logging.ERROR]
        assert failed == []
    finally:
        srv.stop(grace=0)


def test_a_reloaded_half_life_applies_without_a_restart(tmp_path: Path,
                                                        database_url: str) -> None:
    srv = server(tmp_path, database_url, half_life="1h")
    srv.start()
    try:
        assert srv.fair_share_half_life() == 3600.0
        (tmp_path / "policy.toml").write_text(POLICY.format(half_life="10m"))
        srv.policy.reload()
        assert srv.fair_share_half_life() == 600.0
    finally:
        srv.stop(grace=0)


def test_unreadable_saved_usage_starts_fair_share_from_zero_and_says_so(
        tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture) -> None:
    srv = server(tmp_path, database_url)
    with srv.db.write() as conn:
        conn.execute(text("DROP TABLE queue_usage"))  # what a damaged store looks like
    srv.start()
    try:
        job = submit(srv, "runs", "a")
        wait_for(srv, job, {JobState.SUCCEEDED})  # the service runs all the same
    finally:
        srv.stop(grace=0)
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("trainyard")]
    assert any("fair-share usage; it starts from zero" in m for m in messages)
    assert any("could not save the fair-share usage" in m for m in messages)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_usage_halves_every_half_life_and_grows_by_what_runs(db: Database) -> None:
    clock = Clock(1000.0)
    usage = FairShareUsage(UsageStore(db), clock=clock, half_life=lambda: 100.0,
                           save_interval=1e9)
    usage.usage = {"a": 8.0}
    assert usage.advance([], 1100.0) == {"a": 4.0}
    one_cpu = RunningJob("j", "b", Resources(cpus=1), started_at=1100.0)
    grown = usage.advance([one_cpu], 1200.0)
    assert grown["a"] == 2.0 and 0 < grown["b"] < 100.0  # decayed as it accrued
    assert usage.at == 1200.0
    assert UsageStore(db).load() == ({}, None)  # not saved before the interval


def test_usage_is_saved_once_the_interval_passed_and_read_back_as_of_then(
        db: Database) -> None:
    clock = Clock(1000.0)
    first = FairShareUsage(UsageStore(db), clock=clock, half_life=lambda: 100.0,
                           save_interval=30.0)
    first.usage = {"a": 8.0}
    first.advance([], 1010.0)
    assert UsageStore(db).load() == ({}, None)
    first.advance([], 1030.0)
    saved, at = UsageStore(db).load()
    assert at == 1030.0 and saved["a"] == pytest.approx(8.0 * 0.5 ** 0.3)
    again = FairShareUsage(UsageStore(db), clock=Clock(2000.0), half_life=lambda: 100.0,
                           save_interval=30.0)
    again.load()
    assert (again.usage, again.at) == (saved, 1030.0)
    # Saved "later" than now (a clock that went back): taken as of now.
    UsageStore(db).save({"a": 1.0}, 5000.0)
    again.load()
    assert again.at == 2000.0


def test_without_a_store_usage_lives_in_memory_only() -> None:
    usage = FairShareUsage(None, clock=Clock(0.0), half_life=lambda: 0.0, save_interval=0.0)
    usage.load()
    usage.usage = {"a": 1.0}
    assert usage.advance([], 1.0) == {}  # no half-life: the past counts for nothing
    usage.save()
