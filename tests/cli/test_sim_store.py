"""`trainyard sim --from-store`: the service's own history replayed under the policy in force
and a candidate, beside what the store recorded; run as a user runs it, against a real
server.

The reproduction check: a store filled by a real sweep run through a real server (FIFO, two
jobs at once, as `make demo` runs it, so that some jobs wait) and by generated history
(a generated trace replayed under the same policy, its starts and ends written straight into
the store's tables, long before the sweep), replayed under the same policy, gives the
recorded mean wait within 10%, over the whole store and over the sweep alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert

from tests.liveserver import live_server, wait_for
from tests.serverproc import ServerProcess
from trainyard.auth.policy import LOCAL
from trainyard.client import Client, TrainSpec
from trainyard.domain.policy import default_policy
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.sim.cluster import submit
from trainyard.sim.policies import replay_for
from trainyard.sim.trace import generate_trace
from trainyard.store.db import open_database, sqlite_url
from trainyard.store.schema import jobs, runs

MAX_CONCURRENT = 2  # the demo's: fewer slots than jobs, so the queue shows
# Seconds each job sleeps: long beside the service's own reaction to an end (a pass, a
# launch; more on a loaded machine), which a replay does not model and the record counts
# as waiting.
SWEEP = {"T": ["4", "6", "3", "5", "4", "6"]}
GENERATED = 150
TOLERANCE = 0.10
CANDIDATE = """
max_running = 4
[pools.local]
max_jobs = 4
[queues.default]
pools = ["local"]
"""


def trainyard(address: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
    env.update({"COLUMNS": "200", "TRAINYARD_SERVER": address, "HOME": str(cwd)})
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def generated_history(url: str, ends_before: float) -> int:
    """A generated trace replayed under the server's own policy (FIFO on its local pool,
    MAX_CONCURRENT at once), written into the store as finished jobs: its last end an hour
    before `ends_before`. Returns how many jobs."""
    policy = default_policy({"local": PoolCapacity("local", max_jobs=MAX_CONCURRENT)},
                            MAX_CONCURRENT)
    trace = [replace(job, gpus=0, cpus=1.0, memory_mb=1024)
             for job in generate_trace(GENERATED, gpus=7, load=0.7, teams=3, seed=5)]
    accepted = submit(trace, policy)
    outcome = replay_for("fifo", policy, 1, []).run(
        accepted.pending, [job.duration for job in accepted.jobs], [""] * len(trace))
    finish = max(job.finish or 0.0 for job in outcome.jobs)
    base = ends_before - 3600.0 - finish
    db = open_database(url)
    try:
        with db.write() as conn:
            for job, played in zip(accepted.jobs, outcome.jobs, strict=True):
                assert played.finish is not None and played.first_start is not None
                job_id = f"gen{int(job.job_id):05d}"
                start, end = base + played.first_start, base + played.finish
                conn.execute(insert(jobs).values(
                    id=job_id, owner=job.user, name=job.name, command="sleep", kind="local",
                    hyperparameters={}, labels={}, cpus=job.cpus, memory_mb=job.memory_mb,
                    gpus=0, queue=job.queue, priority=0, state=JobState.SUCCEEDED.value,
                    attempt=1, executor="local", pool="local", team=job.team,
                    started_at=start, held_s=end - start,
                    submitted_at=base + job.submit_time, updated_at=end))
                conn.execute(insert(runs).values(
                    job_id=job_id, attempt=1, state=JobState.SUCCEEDED.value,
                    executor="local", pool="local", handle=f"trainyard-{job_id}-1",
                    gpu_ids="", exit_code=0, launched_at=start, started_at=start,
                    ended_at=end))
    finally:
        db.close()
    return len(accepted.jobs)


def replayed(address: str, tmp: Path, *args: str) -> dict[str, Any]:
    out = tmp / f"report-{len(list(tmp.glob('report-*')))}.json"
    done = trainyard(address, "sim", "--from-store", "--json", str(out), *args, cwd=tmp)
    assert done.returncode == 0, done.stderr
    assert "Against the record" in done.stdout
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def without_clock(figures: dict[str, Any]) -> dict[str, Any]:
    """A replay's figures but the wall-clock time it took."""
    return {key: value for key, value in figures.items() if key != "sim_seconds"}


def off(report: dict[str, Any], policy: str = "current") -> float:
    recorded = report["recorded"]["mean_wait"]
    return abs(report["policies"][policy]["mean_wait"] - recorded) / recorded


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_the_replay_of_the_policy_in_force_reproduces_the_recorded_wait(
        tmp_path: Path, dialect: str, request: pytest.FixtureRequest) -> None:
    data = tmp_path / "data"
    url = sqlite_url(data) if dialect == "sqlite" else \
        request.getfixturevalue("pg_url")
    generated = generated_history(url, ends_before=time.time())
    server = ServerProcess(data, database_url="" if dialect == "sqlite" else url,
                           max_concurrent=MAX_CONCURRENT).start()
    try:
        with Client(server.address, timeout=30) as client:
            _, swept = client.sweep(TrainSpec(name="grid", command="sleep $T"), grid=SWEEP)
            for job_id in swept:
                assert client.wait(job_id).state == "SUCCEEDED"
        whole = replayed(server.address, tmp_path)
        sweep = replayed(server.address, tmp_path, "--since", "30m")
        candidate = tmp_path / "candidate.toml"
        candidate.write_text(CANDIDATE)
        both = replayed(server.address, tmp_path, "--since", "30m", "--config",
                        str(candidate))
    finally:
        server.stop()

    assert whole["recorded"]["jobs"] == generated + len(swept)
    assert whole["policy_in_force"] == {"source": "FIFO (no policy file)",
                                        "scheduler": "fifo", "max_running": MAX_CONCURRENT}
    print(f"{dialect}: recorded mean wait {whole['recorded']['mean_wait']:.1f} s, replayed "
          f"{whole['policies']['current']['mean_wait']:.1f} s over {generated} generated "
          f"and {len(swept)} swept jobs; the sweep alone: recorded "
          f"{sweep['recorded']['mean_wait']:.3f} s, replayed "
          f"{sweep['policies']['current']['mean_wait']:.3f} s")
    assert off(whole) <= TOLERANCE
    # Some of the sweep's jobs waited, and the replay says how long, launches included.
    assert sweep["recorded"]["jobs"] == len(swept)
    assert sweep["recorded"]["mean_wait"] > 1.0
    assert off(sweep) <= TOLERANCE
    # Side by side: four at once make the sweep's jobs wait less; the record is the same.
    assert set(both["policies"]) == {"current", "candidate"}
    assert both["recorded"] == sweep["recorded"]
    assert without_clock(both["policies"]["current"]) == \
        without_clock(sweep["policies"]["current"])
    assert both["policies"]["candidate"]["mean_wait"] < sweep["policies"]["current"][
        "mean_wait"] / 2
    assert both["clusters"]["candidate"]["scheduler"] == "default"
    for figures in both["policies"].values():
        assert {"mean_jct", "median_jct", "p95_jct", "mean_wait", "median_wait", "p95_wait",
                "jain", "preemptions", "utilization", "teams"} <= set(figures)


POLICY = """
max_running = 2
[pools.local]
max_jobs = 2
gpus = 2
[queues.default]
pools = ["local"]
[queues.batch]
pools = ["local"]
priority = -1
"""


def test_under_a_policy_file_its_text_and_scheduler_are_replayed(tmp_path: Path) -> None:
    with live_server(tmp_path, "", policy=POLICY) as srv:
        ids = [srv.service.train(LOCAL, JobSpec(name=f"j{i}", command="sleep 0.3",
                                                queue="batch" if i % 2 else "default"))[0]
               for i in range(4)]
        for job_id in ids:
            wait_for(srv, job_id, {JobState.SUCCEEDED})
        address = f"127.0.0.1:{srv.port}"
        report = replayed(address, tmp_path, "--config", str(tmp_path / "policy.toml"),
                          "--plots", str(tmp_path / "plots"))
        exported = srv.services.history.in_force()
        wrote = trainyard(address, "history", "export", "--output", str(tmp_path / "t.csv"),
                          "--policy", str(tmp_path / "in-force.toml"), cwd=tmp_path)
        assert wrote.returncode == 0, wrote.stderr
    # The trace and the policy exported replay offline as the server's history does.
    offline = trainyard("", "sim", str(tmp_path / "t.csv"), "--config",
                        str(tmp_path / "in-force.toml"), "--policies", "default", "--json",
                        str(tmp_path / "offline.json"), cwd=tmp_path)
    assert offline.returncode == 0, offline.stderr
    assert (tmp_path / "in-force.toml").read_text() == POLICY
    alone = json.loads((tmp_path / "offline.json").read_text())["policies"]["default"]
    assert without_clock(alone) == without_clock(report["policies"]["current"])
    assert report["policy_in_force"]["scheduler"] == "default"
    assert report["policy_in_force"]["source"].endswith("policy.toml")
    assert exported.text == POLICY and exported.format == "toml"
    assert report["cluster"]["pools"]["local"]["gpus"] == 2
    # The same policy as the candidate replays the same.
    current, candidate = report["policies"]["current"], report["policies"]["candidate"]
    assert without_clock(current) == without_clock(candidate)
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "jct_cdf.png", "team_shares.png", "utilization.png"]


def test_a_queue_closed_to_others_takes_the_admins_jobs_in_the_replay_too(
        tmp_path: Path) -> None:
    closed = POLICY.replace('priority = -1', 'priority = -1\nusers = ["ann"]')
    with live_server(tmp_path, "", policy=closed) as srv:
        ids = [srv.service.train(LOCAL, JobSpec(name=f"j{i}", command="true",
                                                queue="batch"))[0] for i in range(2)]
        for job_id in ids:
            wait_for(srv, job_id, {JobState.SUCCEEDED})
        assert srv.services.history.in_force().admins == ("local",)
        report = replayed(f"127.0.0.1:{srv.port}", tmp_path, "--config",
                          str(tmp_path / "policy.toml"))
    # The single user is an admin, whose jobs the queue took: so does each replay.
    assert report["trace"]["refused"] == {} and report["trace"]["refused_by_candidate"] == {}
    assert report["recorded"]["jobs"] == report["policies"]["current"]["jobs"] == \
        report["policies"]["candidate"]["jobs"] == 2


def test_mistakes_are_sentences_naming_the_option(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[pools.local]\nmax_jobs = 0\n[queues.default]\npools = ['local']\n")
    with live_server(tmp_path, "") as srv:
        address = f"127.0.0.1:{srv.port}"
        empty = trainyard(address, "sim", "--from-store", cwd=tmp_path)
        job_id, _ = srv.service.train(LOCAL, JobSpec(name="one", command="true"))
        wait_for(srv, job_id, {JobState.SUCCEEDED})
        time.sleep(1.5)  # submitted more than a second ago
        late = trainyard(address, "sim", "--from-store", "--since", "1s", cwd=tmp_path)
        broken = trainyard(address, "sim", "--from-store", "--config", str(bad), cwd=tmp_path)
        both = trainyard(address, "sim", "trace.csv", "--from-store", cwd=tmp_path)
        gpus = trainyard(address, "sim", "--from-store", "--gpus", "4", cwd=tmp_path)
        since = trainyard(address, "sim", "--from-store", "--since", "later", cwd=tmp_path)
        alone = trainyard(address, "sim", "t.csv", "--since", "1d", "--gpus", "4", cwd=tmp_path)
        nothing = trainyard(address, "sim", "--gpus", "4", cwd=tmp_path)
    assert empty.returncode == 1
    assert "error: the server has no finished jobs to replay" in empty.stderr
    assert late.returncode == 1
    assert "no finished jobs within --since" in late.stderr
    assert broken.returncode == 1 and "bad.toml" in broken.stderr
    assert "max_jobs" in broken.stderr
    assert both.returncode == 1 and "either a TRACE or --from-store" in both.stderr
    assert gpus.returncode == 1 and "--gpus does not apply with --from-store" in gpus.stderr
    assert since.returncode == 2 and "--since" in since.stderr
    assert alone.returncode == 1 and "--since needs --from-store" in alone.stderr
    assert nothing.returncode == 2 and "Missing argument 'trace'" in nothing.stderr
    for done in (empty, broken, both, gpus, since, alone, nothing):
        assert "Traceback" not in done.stderr
