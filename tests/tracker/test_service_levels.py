"""The live service orders a team's jobs by the service they attained: a new job preempts
the team's job that has run longest, which resumes once there is room, and the time each
attempt ran is kept."""

from __future__ import annotations

import time
from pathlib import Path

from sqlalchemy import update

from tests.liveserver import live_server, wait_for
from trainyard.auth.policy import LOCAL, Identity
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import ACTIVE_STATES, JobState
from trainyard.scheduler import Decisions, Policy, Snapshot
from trainyard.scheduler.attained import FIRST_LEVEL_S
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.store.schema import jobs

POLICY = """
max_running = 4
min_runtime = "0s"

[pools.cpu]
cpus = 2
max_jobs = 2

[queues.train]
pools = ["cpu"]

[teams.vision]
members = ["ann"]
[teams.vision.quota.cpu]
cpus = 2
"""

ANN = Identity(user="ann")
STEP = ('if [ -f "$CHECKPOINT_PATH/step" ]; then echo "resumed from $(cat '
        '"$CHECKPOINT_PATH/step")"; exit 0; fi; echo 1 > "$CHECKPOINT_PATH/step"; sleep 30')


def submit(srv: TrainyardServer, name: str, command: str) -> str:
    return srv.service.train(ANN, JobSpec(name=name, command=command, queue="train",
                                          resources=Resources(cpus=1)))[0]


def states(srv: TrainyardServer, job_id: str) -> list[JobState]:
    return [e.to_state for e in srv.jobs.events(job_id)]


def test_a_new_job_preempts_the_teams_longest_served_job_which_resumes_later(
        tmp_path: Path, database_url: str) -> None:
    with live_server(tmp_path, database_url, POLICY) as srv:
        served, fresh = submit(srv, "served", STEP), submit(srv, "fresh", "sleep 30")
        for job_id in (served, fresh):
            wait_for(srv, job_id, {JobState.RUNNING})
        # As if `served` had already run for more than an hour in earlier attempts.
        earlier = FIRST_LEVEL_S + 60
        with srv.jobs.db.write() as conn:
            conn.execute(update(jobs).where(jobs.c.id == served).values(held_s=earlier))
        time.sleep(0.3)  # its checkpoint is written
        new = submit(srv, "new", "sleep 0.5")
        wait_for(srv, new, {JobState.SUCCEEDED})
        assert JobState.PREEMPTED in states(srv, served)
        assert JobState.PREEMPTED not in states(srv, fresh)  # level 0, as the new job
        why = next(e.reason for e in srv.jobs.events(served)
                   if e.to_state is JobState.PREEMPTED)
        assert "has run less" in why, why
        # It comes back as attempt 2, resumes from its checkpoint, and its time in attempt
        # 1 is added to what it had.
        wait_for(srv, served, {JobState.SUCCEEDED}, timeout=60)
        job = srv.jobs.get(served)
        assert job.attempt == 2
        assert "resumed from 1" in srv.workspace.attempt(served, 2).log_path.read_text()
        times = {to: [e.time for e in srv.jobs.events(served) if e.to_state is to]
                 for to in (JobState.RUNNING, JobState.PREEMPTED, JobState.SUCCEEDED)}
        ran = (times[JobState.PREEMPTED][0] - times[JobState.RUNNING][0]) + \
            (times[JobState.SUCCEEDED][0] - times[JobState.RUNNING][1])
        assert ran > 0.3
        assert abs(job.held_s - earlier - ran) < 0.1, (job.held_s, earlier, ran)


class Recorder:
    """The tracker's policy, keeping what each pass saw and decided."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.passes: list[tuple[Snapshot, Decisions]] = []

    def schedule(self, snapshot: Snapshot) -> Decisions:
        decisions = self.inner.schedule(snapshot)
        self.passes.append((snapshot, decisions))
        return decisions


def test_a_job_still_launching_has_run_for_no_time(tmp_path: Path) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(POLICY)
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", policy_file=policy_file))
    recorder = Recorder(srv.tracker.policy)
    srv.tracker.policy = recorder
    try:
        launching = [submit(srv, f"l{i}", "sleep 30") for i in range(2)]
        for i, job_id in enumerate(launching):  # as a launch cut short leaves them
            srv.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING,
                                reason="admitted", attempt=1, executor="local", pool="cpu",
                                handle=f"h{i}", gpu_ids="")
        waiting = submit(srv, "w", "true")
        srv.tracker.run_once(reconcile=False)
        snapshot, decisions = recorder.passes[-1]
        assert {run.job_id: run.started_at for run in snapshot.running} == \
            {job_id: snapshot.now for job_id in launching}
        # Not taken for jobs that have run since the epoch: nothing to preempt for service.
        assert decisions.preempt == {} and decisions.pending[waiting].code != "RECLAIMING"
    finally:
        srv.stop(grace=0)


def test_a_relaunched_job_has_not_started_its_new_attempt(tmp_path: Path) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(POLICY)
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", policy_file=policy_file))
    try:
        job_id = submit(srv, "again", "sleep 30")
        srv.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                            attempt=1, executor="local", pool="cpu", handle="h1", gpu_ids="")
        srv.jobs.transition(job_id, JobState.LAUNCHING, JobState.RUNNING, reason="started",
                            now=100.0, started_at=100.0)
        srv.jobs.transition(job_id, JobState.RUNNING, JobState.PREEMPTED, reason="stopped",
                            now=160.0, preempt_requested=False)
        srv.jobs.transition(job_id, JobState.PREEMPTED, JobState.WAITING, reason="requeued")
        assert srv.tracker.admission.launch(srv.jobs.get(job_id), (), "cpu")
        # LAUNCHING again: its old attempt's start would count that attempt twice.
        relaunched = srv.jobs.get(job_id)
        assert relaunched.attempt == 2 and relaunched.held_s == 60.0
        assert relaunched.started_at is None or relaunched.started_at > 160.0
        assert srv.tracker.wait_for_launches()
    finally:
        for job in srv.jobs.in_states(ACTIVE_STATES):
            srv.service.cancel(LOCAL, job.id)
        srv.stop(grace=0)
