"""Preemption with notice for a remote job, through a real Slurm cluster: the job borrows
its pool from another team, which takes it back; the tracker gives notice, the job runtime
service tells the job's runtime agent in its reply, the agent writes the notice file and
sends the queue's signal; the job saves its checkpoint, which the agent uploads, and it is
stopped at once (scancel), long before its grace's end, and resumes from that checkpoint."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.liveserver import wait_until
from tests.server.slurmserver import slurm_server, wait_state
from tests.tracker.test_preemption_notice import RECLAIMED
from trainyard.auth.policy import Identity
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer
from trainyard.store.runs import RunStore
from trainyard.testbed.slurm_cluster import SlurmCluster

FINAL = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
ANN = Identity(user="ann")  # borrows the pool
BOB = Identity(user="bob")  # whose team's quota it is
HEARTBEAT_S = 0.3
GRACE_S = 600  # far longer than the test: a stop before it is the notice at work

# The pool holds one job (the cluster holds more): a job of bob's team takes back the CPU
# ann's job borrowed, as on the service's own host.
QUOTAS = {"top": 'min_runtime = "0s"', "pool": "cpus = 1",
          "tail": RECLAIMED.replace("{pool}", "hpc")}

# Attempt 1 waits for its notice, says what it heard and whether its notice file is there,
# saves its step and says so, then waits to be stopped (or, on a notice that ignores it,
# waits on). The next attempt finds the step and ends.
JOB = '''
import signal, sys, time
from trainyard import runtime
state = runtime.checkpoint_path() / "step"
if state.exists():
    print("resumed from step", state.read_text(), flush=True)
    sys.exit(0)
heard = []
signal.signal(signal.SIGUSR1, lambda signum, _: heard.append(signum))
if sys.argv[1] == "listen":
    signal.signal(signal.SIGTERM, lambda signum, _: heard.append(signum))
print("training", flush=True)
step = 0
while not heard and step < 3000:
    step += 1
    if step % 5 == 0:  # output: the agent pushes it, and hears any notice, within 0.2 s
        print("step", step, flush=True)
    time.sleep(0.1)
name = signal.Signals(heard[0]).name if heard else "nothing"
print(f"heard {name}, notice file {runtime.preemption_requested()}", flush=True)
state.write_text(str(step))
runtime.checkpoint_saved()
print("checkpoint saved", flush=True)
if heard[0] == signal.SIGTERM:
    sys.exit(143)  # saved on TERM: ends as TERM's default would
signal.signal(signal.SIGTERM, signal.SIG_DFL)
time.sleep(300)  # until the stop
'''


def _train(srv: TrainyardServer, tmp_path: Path, mode: str) -> str:
    # The agent hears its notice in its next reply: a job that prints nothing gets one a
    # heartbeat, which comes this often here (HEARTBEAT_INTERVAL_S by default).
    srv.services.runtime.heartbeat_interval_s = HEARTBEAT_S
    script = tmp_path / "job.py"
    script.write_text(JOB)
    job_id, _ = srv.service.train(ANN, JobSpec(
        name="borrower", command=f"exec {sys.executable} {script} {mode}", queue="training",
        resources=Resources(cpus=1)))
    assert srv.jobs.get(job_id).kind == "slurm"
    wait_state(srv, job_id, {JobState.RUNNING})
    log = srv.workspace.attempt(job_id, 1).log_path
    wait_until(lambda: log.is_file() and "training" in log.read_text(), timeout=60,
               what="the job's first step")
    return job_id


def _reclaim(srv: TrainyardServer) -> str:
    urgent, _ = srv.service.train(BOB, JobSpec(name="fix", command="sleep 0.5",
                                               queue="urgent", resources=Resources(cpus=1)))
    return urgent


# Pull staging: the agent uploads the checkpoint, and the service notes it. Shared: every
# node sees the attempt's files, and the tracker reads its checkpoint counter there.
@pytest.mark.parametrize(("notice", "staging"), [("SIGUSR1", "pull"), ("TERM", "pull"),
                                                 ("SIGUSR1", "shared")])
def test_a_remote_job_hears_its_notice_saves_and_is_stopped_before_its_grace(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch,
        notice: str, staging: str) -> None:
    policy = {**QUOTAS, "tail": QUOTAS["tail"].format(notice=notice, grace=f"{GRACE_S}s")}
    with slurm_server(tmp_path, slurm_cluster, monkeypatch, staging, policy=policy) as srv:
        job_id = _train(srv, tmp_path, "listen")
        urgent = _reclaim(srv)
        assert wait_state(srv, urgent, FINAL, timeout=120) is JobState.SUCCEEDED
        assert wait_state(srv, job_id, FINAL, timeout=120) is JobState.SUCCEEDED, \
            srv.jobs.get(job_id).message
        job = srv.jobs.get(job_id)
        assert job.attempt == 2 and job.preemptions == 1
        first_log = srv.workspace.attempt(job_id, 1).log_path.read_text()
        heard = {"SIGUSR1": "SIGUSR1", "TERM": "SIGTERM"}[notice]
        # The agent heard the notice in its service's reply: the file, then the signal.
        assert f"[trainyard runtime] preemption notice given ({heard}, {GRACE_S} s grace)" \
            in first_log, first_log
        assert f"heard {heard}, notice file True" in first_log, first_log
        assert "checkpoint saved" in first_log
        # As the job asked (SIGUSR1: it goes on), or at its exit (TERM: it ends on it).
        assert ("[trainyard runtime] checkpoint uploaded" in first_log) is (staging == "pull")
        second_log = srv.workspace.attempt(job_id, 2).log_path.read_text()
        assert "resumed from step" in second_log, second_log

        first = RunStore(srv.db).get(job_id, 1)
        assert first is not None and first.state is JobState.PREEMPTED
        assert first.notice_at is not None and first.checkpoint_at is not None
        assert first.started_at is not None and first.ended_at is not None
        assert first.checkpoint_at > first.notice_at  # the upload after the notice
        assert first.ended_at < first.notice_at + GRACE_S  # stopped once it saved
        # What it lost: from its checkpoint to the stop, not its whole run.
        assert 0 <= first.work_lost_s <= first.ended_at - first.checkpoint_at
        assert first.work_lost_s < first.ended_at - first.started_at
        assert job.work_lost_s == pytest.approx(first.work_lost_s)


def test_a_remote_job_that_ignores_its_notice_is_stopped_at_its_graces_end(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = {**QUOTAS, "tail": QUOTAS["tail"].format(notice="none", grace="5s")}
    with slurm_server(tmp_path, slurm_cluster, monkeypatch, policy=policy) as srv:
        job_id = _train(srv, tmp_path, "ignore")
        _reclaim(srv)
        wait_until(lambda: srv.jobs.get(job_id).preemptions == 1, timeout=120,
                   what="the job's preemption")
        first_log = srv.workspace.attempt(job_id, 1).log_path.read_text()
        assert "[trainyard runtime] preemption notice given (the notice file only, 5 s " \
            "grace)" in first_log, first_log
        assert "heard" not in first_log  # no signal came: it never stopped to listen
        first = RunStore(srv.db).get(job_id, 1)
        assert first is not None and first.state is JobState.PREEMPTED
        assert first.notice_at is not None and first.ended_at is not None
        assert first.started_at is not None and first.checkpoint_at is None
        assert first.ended_at >= first.notice_at + 5.0  # its whole grace, no sooner
        assert first.work_lost_s == pytest.approx(first.ended_at - first.started_at)
