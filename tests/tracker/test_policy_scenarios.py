"""The live service under a declared policy, on the local executor: two teams, three queues."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.liveserver import live_server, wait_for
from trainyard.auth.policy import Identity
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer

POLICY = """
max_running = 8
min_runtime = "0s"

[pools.cpu]
cpus = 4
max_jobs = 4

[queues.sweeps]
pools = ["cpu"]
teams = ["vision"]

[queues.urgent]
pools = ["cpu"]
priority = 10
teams = ["nlp"]

[queues.batch]
pools = ["cpu"]
max_running = 1

[teams.vision]
members = ["ann"]
[teams.vision.quota.cpu]
cpus = 2
borrow_cpus = 2

[teams.nlp]
members = ["bob"]
[teams.nlp.quota.cpu]
cpus = 2
"""

ANN = Identity(user="ann")
BOB = Identity(user="bob")


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    with live_server(tmp_path, database_url, POLICY) as srv:
        yield srv


def started(srv: TrainyardServer, job_id: str) -> list[float]:
    return [e.time for e in srv.jobs.events(job_id) if e.to_state is JobState.RUNNING]


def test_a_sweep_delays_the_other_teams_urgent_job_by_at_most_one_slot(
        server: TrainyardServer) -> None:
    sweep = [server.service.train(ANN, JobSpec(name=f"s{i}", command="sleep 1", queue="sweeps",
                                               resources=Resources(cpus=1)))[0]
             for i in range(8)]
    wait_for(server, sweep[3], {JobState.RUNNING})  # the pool is full: 2 owned, 2 borrowed
    urgent, _ = server.service.train(BOB, JobSpec(name="fix", command="true", queue="urgent",
                                                  resources=Resources(cpus=1)))
    record = server.jobs.get(urgent)
    assert record.team == "nlp"
    wait_for(server, urgent, {JobState.SUCCEEDED})
    urgent_start = started(server, urgent)[0]
    # Between the urgent job's submit and its start, at most the one sweep job a pass already
    # under way when it was submitted could launch; every slot freed after goes to it.
    overtook = [j for j in sweep if any(record.submitted_at < t < urgent_start
                                        for t in started(server, j))]
    assert len(overtook) <= 1


def test_borrowed_quota_is_reclaimed_and_the_preempted_job_resumes(
        server: TrainyardServer) -> None:
    step = ('if [ -f "$CHECKPOINT_PATH/step" ]; then echo "resumed from $(cat '
            '"$CHECKPOINT_PATH/step")"; fi; echo 1 > "$CHECKPOINT_PATH/step"; sleep 4')
    sweep = [server.service.train(ANN, JobSpec(name=f"s{i}", command=step, queue="sweeps",
                                               resources=Resources(cpus=1)))[0]
             for i in range(4)]
    for job_id in sweep:
        wait_for(server, job_id, {JobState.RUNNING})  # 2 owned + 2 borrowed from nlp
    time.sleep(0.3)  # the checkpoints are written
    mine, _ = server.service.train(BOB, JobSpec(name="nlp", command="sleep 0.5", queue="urgent",
                                                resources=Resources(cpus=1)))
    wait_for(server, mine, {JobState.RUNNING, JobState.SUCCEEDED})
    preempted = [j for j in sweep
                 if JobState.PREEMPTED in {e.to_state for e in server.jobs.events(j)}]
    assert len(preempted) == 1  # one borrowed CPU comes back, no more
    victim = preempted[0]
    assert "borrowed quota" in server.jobs.events(victim)[-2].reason or \
        any("preempted" in e.reason for e in server.jobs.events(victim))
    # Once capacity frees, it runs again as attempt 2 and resumes from its checkpoint.
    wait_for(server, victim, {JobState.SUCCEEDED}, timeout=60)
    job = server.jobs.get(victim)
    assert job.attempt == 2
    log = server.workspace.attempt(victim, 2).log_path.read_text()
    assert "resumed from 1" in log
    assert [e.to_state for e in server.jobs.events(victim)].count(JobState.PREEMPTED) == 1


def test_a_job_behind_its_queue_limit_hears_how_many_are_ahead(
        server: TrainyardServer) -> None:
    def submit(name: str, priority: int, command: str = "true") -> str:
        return server.service.train(ANN, JobSpec(name=name, command=command, queue="batch",
                                                 priority=priority))[0]

    running = submit("long", 0, "sleep 30")
    wait_for(server, running, {JobState.RUNNING})
    low = submit("low", 0)
    high = [submit(f"high{i}", 5) for i in range(2)]
    deadline = time.monotonic() + 10
    while any(server.jobs.get(j).pending_code != "QUEUE_LIMIT" for j in [low, *high]):
        assert time.monotonic() < deadline, [server.jobs.get(j) for j in [low, *high]]
        time.sleep(0.05)
    status = server.service.status(ANN, low)
    assert status.queue_position == 3
    assert status.pending_message == ("queue 'batch' is at its limit of 1 running jobs; "
                                      "2 jobs of higher priority are ahead.")
    first = server.service.status(ANN, high[0])
    assert first.queue_position == 1 and first.pending_message.endswith("running jobs")


ONE_QUEUE = """
max_running = 8
min_runtime = "0s"

[pools.cpu]
cpus = 2
max_jobs = 2

[queues.shared]
pools = ["cpu"]

[teams.vision]
members = ["ann"]
[teams.vision.quota.cpu]
cpus = 1
borrow_cpus = 1

[teams.nlp]
members = ["bob"]
[teams.nlp.quota.cpu]
cpus = 1
"""


def test_in_one_queue_quota_taken_back_goes_to_its_owner_not_back_to_the_borrower(
        tmp_path: Path, database_url: str) -> None:
    with live_server(tmp_path, database_url, ONE_QUEUE) as srv:
        borrowed = [srv.service.train(ANN, JobSpec(name=f"v{i}", command="sleep 3", queue="shared",
                                                   resources=Resources(cpus=1)))[0]
                    for i in range(2)]
        for job_id in borrowed:
            wait_for(srv, job_id, {JobState.RUNNING})
        mine, _ = srv.service.train(BOB, JobSpec(name="n", command="sleep 1", queue="shared",
                                                 resources=Resources(cpus=1)))
        wait_for(srv, mine, {JobState.RUNNING, JobState.SUCCEEDED})
        for job_id in borrowed:
            wait_for(srv, job_id, {JobState.SUCCEEDED}, timeout=60)
        preemptions = {j: [e.to_state for e in srv.jobs.events(j)].count(JobState.PREEMPTED)
                       for j in borrowed}
        # One borrowed CPU came back once: the requeued borrower, ahead of nlp's job in the
        # queue, did not take it again.
        assert sorted(preemptions.values()) == [0, 1]
        victim = next(j for j, n in preemptions.items() if n)
        restarted = [e.time for e in srv.jobs.events(victim) if e.to_state is JobState.RUNNING]
        ended = next(e.time for e in srv.jobs.events(mine) if e.to_state is JobState.SUCCEEDED)
        assert len(restarted) == 2 and restarted[1] >= ended - 0.5
