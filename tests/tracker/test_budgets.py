"""Budgets over time on a real server whose tracker the test steps, with the tracker's clock
under the test's control, real processes and the real store: a job waits for BUDGET with the
sentence, keeps waiting across a restart, and starts once old use leaves the window."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.liveserver import make_server
from tests.tracker.passes import run_to_end, step
from trainyard.auth.policy import Identity
from trainyard.domain.budgets import TEAM, BudgetScope
from trainyard.domain.reasons import ReasonCode
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer

POLICY = """
max_running = 4

[pools.gpu]
gpus = 4
cpus = 8
max_jobs = 4

[queues.train]
pools = ["gpu"]

[teams.nlp]
members = ["ann"]
budget = { gpu_hours = 2, period = "1d" }
"""
ANN = Identity(user="ann")
HOUR, DAY = 3600.0, 86400.0
T0 = 1_800_000_000.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextmanager
def stepped(tmp_path: Path, database_url: str, clock: Clock) -> Iterator[TrainyardServer]:
    """The server, not started: its tracker's clock is the test's, and the test steps it."""
    srv = make_server(tmp_path, database_url, POLICY)
    srv.tracker.clock = clock
    try:
        yield srv
    finally:
        srv.tracker.stop()
        srv.db.close()


def submit(srv: TrainyardServer, gpus: int, time_limit_s: float = 0.0) -> str:
    return srv.service.train(ANN, JobSpec(name="b", command="true", queue="train",
                                          resources=Resources(cpus=1, gpus=gpus),
                                          time_limit_s=time_limit_s))[0]


def test_a_job_waits_for_the_budget_across_a_restart_and_starts_when_use_ages_out(
        tmp_path: Path, database_url: str) -> None:
    clock = Clock(T0)
    with stepped(tmp_path, database_url, clock) as srv:
        first = submit(srv, gpus=2)
        step(srv)
        assert srv.jobs.get(first).state in (JobState.LAUNCHING, JobState.RUNNING)
        clock.now = T0 + HOUR  # it ran an hour on 2 GPUs: the 2 GPU-hours of the day
        assert run_to_end(srv, first) is JobState.SUCCEEDED
        later = submit(srv, gpus=1, time_limit_s=HOUR)
        waiting = submit(srv, gpus=1)
        step(srv)
        job = srv.jobs.get(waiting)
        assert (job.state, job.pending_code) == (JobState.WAITING, ReasonCode.BUDGET)
        assert job.pending_message == (
            "team 'nlp' has used 2 of its 2 GPU-hours in the last day; it starts when use "
            "older than the window leaves it")
        assert srv.jobs.get(later).pending_code == ReasonCode.BUDGET
    with stepped(tmp_path, database_url, clock) as srv:  # a restart: the store remembers
        clock.now = T0 + DAY + 0.25 * HOUR  # a quarter of the hour has left the window
        srv.tracker.recover()
        step(srv)
        held = srv.jobs.get(later)
        assert held.pending_code == ReasonCode.BUDGET
        assert held.pending_message == (
            "team 'nlp' has used 1.5 of its 2 GPU-hours in the last day; this job may use 1 "
            "(1 GPU for its 1 h time limit), more than the 0.5 left")
        # The job of no time limit starts while anything is left.
        assert srv.jobs.get(waiting).state is not JobState.WAITING
        assert run_to_end(srv, waiting) is JobState.SUCCEEDED
        overview = srv.service.queues(ANN)
        assert overview.budget_use[BudgetScope(TEAM, "nlp")].gpu_hours == 1.5
        clock.now = T0 + DAY + 0.5 * HOUR  # half of it has: 1 GPU-hour left
        step(srv)
        assert srv.jobs.get(later).state is not JobState.WAITING
        assert run_to_end(srv, later) is JobState.SUCCEEDED
