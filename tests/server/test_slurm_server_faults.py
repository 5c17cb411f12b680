"""The service through the real two-node Slurm cluster when the cluster fails under it: a
node's slurmd killed mid-job, slurmctld killed and restarted mid-run, a controller that cannot
be reached when the server starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.server.slurmserver import slurm_policy, slurm_server, wait_state
from tests.services.conftest import ROOT
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.testbed.slurm_cluster import SlurmCluster, free_port

FINAL = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
NODE = re.compile(r"node=(n\d)")


def _until(ready, what, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = ready()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what() if callable(what) else what} not within {timeout:g} s")
        time.sleep(0.2)


def test_a_node_lost_mid_job_requeues_it_to_resume_on_the_other_node(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    # Attempt 1 counts to 1, saves that and waits; a later attempt finds it and ends.
    command = ('echo "node=$SLURMD_NODENAME"; n=0; '
               'if [ -f "$CHECKPOINT_PATH/step" ]; then n=$(cat "$CHECKPOINT_PATH/step"); '
               'echo "found step=$n"; fi; '
               'n=$((n+1)); echo $n > "$CHECKPOINT_PATH/step"; '
               f"{sys.executable} -c 'from trainyard import runtime; runtime.checkpoint_saved()'; "
               'if [ "$n" -ge 2 ]; then echo "done at step=$n"; exit 0; fi; sleep 120')
    killed = ""
    try:
        with slurm_server(tmp_path, slurm_cluster, monkeypatch) as srv:
            job_id, _ = srv.service.train(ROOT, JobSpec(name="resumes", command=command))
            wait_state(srv, job_id, {JobState.RUNNING})
            first = srv.workspace.attempt(job_id, 1)
            _until(lambda: (first.checkpoint_dir / "step").is_file()
                   and (first.checkpoint_dir / "step").read_text().strip() == "1",
                   "the checkpoint on the host")
            found = _until(lambda: NODE.search(first.log_path.read_text()), "the node in the log")
            killed = found.group(1)
            slurm_cluster.kill_node(killed)
            _until(lambda: srv.jobs.get(job_id).attempt >= 2, "attempt 2", timeout=60)
            assert wait_state(srv, job_id, FINAL) is JobState.SUCCEEDED, \
                srv.jobs.get(job_id).message
            job = srv.jobs.get(job_id)
            assert job.attempt == 2
            second = srv.workspace.attempt(job_id, 2).log_path.read_text()
            other = ({"n1", "n2"} - {killed}).pop()
            assert f"node={other}" in second, second
            assert "found step=1" in second and "done at step=2" in second, second
            reasons = [e.reason for e in srv.jobs.events(job_id)]
            assert any(f"node {killed} failed" in r for r in reasons), reasons
    finally:
        if killed:
            slurm_cluster.start_node(killed)
            slurm_cluster.wait_idle(timeout=60)


def test_a_controller_away_and_back_keeps_the_running_job_and_holds_the_new_one(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    with slurm_server(tmp_path, slurm_cluster, monkeypatch) as srv:
        running, _ = srv.service.train(ROOT, JobSpec(name="survives",
                                                     command="echo started; sleep 15"))
        wait_state(srv, running, {JobState.RUNNING})
        log = srv.workspace.attempt(running, 1).log_path
        _until(lambda: "started" in log.read_text(), lambda: "the job's first line",
               timeout=30)
        # slurmctld saves its job state every few seconds; a SIGKILL keeps what it saved, and
        # one before the save of the job's start would forget that it started.
        time.sleep(6)
        slurm_cluster.kill_controller()
        try:
            waiting, _ = srv.service.train(ROOT, JobSpec(name="meanwhile", command="true"))
            # Waits with the reason, or, admitted before the tracker saw the controller go,
            # stays LAUNCHING until it answers: never failed for the controller's absence.
            _until(lambda: srv.jobs.get(waiting).pending_code == "POOL_UNAVAILABLE" or
                   srv.jobs.get(waiting).state is JobState.LAUNCHING,
                   lambda: f"POOL_UNAVAILABLE ({srv.jobs.get(waiting)})", timeout=10)
            assert srv.jobs.get(waiting).state in (JobState.WAITING, JobState.LAUNCHING)
            assert srv.jobs.get(running).state is JobState.RUNNING
        finally:
            slurm_cluster.start_controller()  # recovers its jobs from its saved state
        assert wait_state(srv, running, FINAL) is JobState.SUCCEEDED, srv.jobs.get(running).message
        assert wait_state(srv, waiting, FINAL) is JobState.SUCCEEDED, srv.jobs.get(waiting).message
        assert srv.jobs.get(running).attempt == 1


def test_a_pool_whose_controller_cannot_be_reached_stops_the_server_at_start(
        tmp_path: Path, slurm_cluster: SlurmCluster) -> None:
    conf = slurm_cluster.conf.read_text()
    conf = re.sub(r"^SlurmctldPort=\d+$", f"SlurmctldPort={free_port()}", conf, flags=re.M)
    conf = re.sub(r"^MessageTimeout=\d+$", "MessageTimeout=1", conf, flags=re.M)
    (tmp_path / "slurm.conf").write_text(conf)
    policy = tmp_path / "policy.toml"
    policy.write_text(slurm_policy(slurm_cluster, tmp_path / "nodes"))
    env = {**os.environ, "SLURM_CONF": str(tmp_path / "slurm.conf"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve()
                                                           .parents[2] / "src"),
                                                       os.environ.get("PYTHONPATH")]))}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "trainyard.cli.main", "server", "--policy",
                           str(policy), "--port", "0", "--data-dir", str(tmp_path / "data")],
                          env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    took = time.monotonic() - started
    out = done.stdout + done.stderr
    print(f"exited {done.returncode} in {took:.1f}s: {out}")
    assert done.returncode == 1, out
    assert "Traceback" not in out, out
    assert "hpc" in out and "controller" in out, out
    assert "listening" not in out.lower(), out
    assert took < 30, took


def test_a_restarted_service_adopts_its_running_slurm_job_and_sees_it_through(
        tmp_path: Path, slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.liveserver import FAST
    from trainyard.server.assembly import ServerConfig, TrainyardServer

    monkeypatch.setenv("SLURM_CONF", slurm_cluster.env["SLURM_CONF"])
    policy = tmp_path / "policy.toml"
    policy.write_text(slurm_policy(slurm_cluster, tmp_path / "nodes"))
    # The same port both times: the job's runtime keeps reaching the service where it was.
    config = ServerConfig(data_dir=tmp_path / "data", port=free_port(), policy_file=policy,
                          tracker=FAST)
    first = TrainyardServer(config)
    first.start()
    job_id, _ = first.service.train(ROOT, JobSpec(
        name="outlives", command="echo before; sleep 6; echo after"))
    log = first.workspace.attempt(job_id, 1).log_path
    try:
        wait_state(first, job_id, {JobState.RUNNING})
        _until(lambda: "before" in log.read_text(), lambda: "the job's first line", timeout=30)
    finally:
        first.stop(grace=0)  # as a crash would leave it: the Slurm job runs on
    second = TrainyardServer(config)
    second.start()
    try:
        assert wait_state(second, job_id, FINAL) is JobState.SUCCEEDED, \
            second.jobs.get(job_id).message
        assert second.jobs.get(job_id).attempt == 1  # adopted, not run again
        assert "after" in log.read_text()  # the runtime's pushes reached the new service
    finally:
        second.stop(grace=0)
