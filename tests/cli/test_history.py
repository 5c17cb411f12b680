"""`trainyard history export`, run as a user's script runs it, against a real server: the
rows of the finished jobs that ran, the --since window, --output, bad values, and admins
alone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.liveserver import live_server, make_server, wait_for
from trainyard.auth.policy import LOCAL, Identity
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer
from trainyard.services.policy_file import load_policy
from trainyard.sim.trace import read_trace
from trainyard.store.jobs import JobStore

ADMIN = Identity(user="boss", admin=True)


def trainyard(srv: TrainyardServer, *args: str, token: str = "",
              cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
    env.update({"COLUMNS": "200", "TRAINYARD_SERVER": f"127.0.0.1:{srv.port}",
                "HOME": str(cwd or Path.cwd())})
    if token:
        env["TRAINYARD_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=60, cwd=cwd)


def old_job(jobs: JobStore, name: str, submitted: float, ran: float) -> str:
    """A job that ran `ran` seconds long ago, written as the tracker writes one."""
    job_id, _ = jobs.create(JobSpec(name=name, command="true"), owner="local", now=submitted)
    jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="admitted",
                    now=submitted + 5, executor="local", pool="local", attempt=1)
    jobs.mark_running(job_id, reason="started", now=submitted + 5)
    jobs.transition(job_id, JobState.RUNNING, JobState.SUCCEEDED, reason="ended",
                    now=submitted + 5 + ran)
    return job_id


def test_export_writes_the_finished_jobs_that_ran(tmp_path: Path) -> None:
    with live_server(tmp_path, "", max_concurrent=1) as srv:
        gang, _ = srv.service.train(LOCAL, JobSpec(
            name="gang", command="sleep 0.5", workers=2, queue="batch", priority=2,
            resources=Resources(cpus=0.5, memory_mb=256)))
        waits, _ = srv.service.train(LOCAL, JobSpec(name="cancelled", command="true"))
        wait_for(srv, gang, {JobState.RUNNING})
        srv.service.cancel(LOCAL, waits)  # before it ever ran: no run time, left out
        wait_for(srv, gang, {JobState.SUCCEEDED})
        wait_for(srv, waits, {JobState.CANCELLED})
        old = old_job(srv.jobs, "old", time.time() - 3 * 86400, 100.0)

        every = trainyard(srv, "history", "export", cwd=tmp_path)
        assert every.returncode == 0, every.stderr
        assert "exported 2 finished jobs" in every.stderr
        (tmp_path / "all.csv").write_text(every.stdout)
        trace = read_trace(tmp_path / "all.csv")
        assert [job.job_id for job in trace.jobs] == [old, gang]
        assert trace.jobs[0].submit_time == 0.0
        assert trace.jobs[0].duration == pytest.approx(100.0)
        row = trace.jobs[1]
        ran = srv.jobs.get(gang).held_s
        assert row.submit_time == pytest.approx(3 * 86400, abs=60)
        assert ran >= 0.5 and row.duration == pytest.approx(ran, abs=0.5)
        assert (row.name, row.user, row.queue, row.priority) == ("gang", "local", "batch", 2)
        assert (row.cpus, row.memory_mb, row.gpus) == (1.0, 512, 0)  # both workers'

        recent = trainyard(srv, "history", "export", "--since", "1d", "--output",
                           str(tmp_path / "recent.csv"), cwd=tmp_path)
        assert recent.returncode == 0 and recent.stdout == ""
        assert "exported 1 finished job submitted in the last 1d" in recent.stderr
        assert [j.job_id for j in read_trace(tmp_path / "recent.csv").jobs] == [gang]
        assert read_trace(tmp_path / "recent.csv").jobs[0].submit_time == 0.0

        # FIFO's pools and limit as a policy file, with every exported queue open on them.
        fifo = trainyard(srv, "history", "export", "--output", str(tmp_path / "t.csv"),
                         "--policy", str(tmp_path / "fifo.toml"), cwd=tmp_path)
        assert fifo.returncode == 0, fifo.stderr
        policy = load_policy(tmp_path / "fifo.toml")
        assert policy.max_running == 1
        assert [(p.name, p.executor, p.capacity.max_jobs, p.capacity.cpus)
                for p in policy.pools.values()] == [("local", "local", 1, None)]
        assert sorted(policy.queues) == ["batch", "default"]
        assert all(q.pools == ("local",) and q.access.admits("x", frozenset())
                   for q in policy.queues.values())
        named = trainyard(srv, "history", "export", "--policy", str(tmp_path / "p.yaml"),
                          cwd=tmp_path)
        assert named.returncode == 2 and "--policy" in named.stderr
        assert "name the file .toml" in named.stderr and "Traceback" not in named.stderr


@pytest.mark.parametrize(("since", "says"), [
    ("soon", "'soon' is not"), ("0", "must be longer than zero"), ("-3d", "is not")])
def test_a_bad_since_is_one_sentence_naming_the_option(tmp_path: Path, since: str,
                                                       says: str) -> None:
    with live_server(tmp_path, "") as srv:
        bad = trainyard(srv, "history", "export", "--since", since, cwd=tmp_path)
    assert bad.returncode == 2
    assert "--since" in bad.stderr and says in bad.stderr
    assert "Traceback" not in bad.stderr and bad.stdout == ""


def test_only_admins_export(tmp_path: Path) -> None:
    srv = make_server(tmp_path, "")
    admin = srv.access.bootstrap("boss").token
    srv.access.create_user(ADMIN, "ann", admin=False)
    ann = srv.access.create_token(ADMIN, "ann", expires_in=0, read_only=False).token
    srv.start()
    try:
        refused = trainyard(srv, "history", "export", token=ann, cwd=tmp_path)
        assert refused.returncode == 1 and refused.stdout == ""
        assert "error (PERMISSION_DENIED): ExportHistory is for admins, and 'ann' is not " \
               "one" in refused.stderr
        assert "Traceback" not in refused.stderr
        allowed = trainyard(srv, "history", "export", token=admin, cwd=tmp_path)
        assert allowed.returncode == 0, allowed.stderr
        assert allowed.stdout.splitlines() == [
            "job_id,submit_time,duration,num_gpus,team,user,queue,priority,name,cpus,"
            "memory_mb"]
    finally:
        srv.stop(grace=0)
