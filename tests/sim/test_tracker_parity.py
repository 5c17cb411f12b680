"""The replay builds the snapshot the live tracker builds, and so gets the same decisions.

A real server's tracker (SQLite, local processes, a frozen clock) takes jobs through
admission, borrowing, a reclaim by preemption and the victim's requeue; every pass it runs
is recorded. The replay then takes the same jobs through the same steps, and each of its
snapshots and the decisions QueuePolicy makes on them are compared with the tracker's."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from trainyard.auth.policy import LOCAL, Identity
from trainyard.domain.errors import TrainyardError
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState
from trainyard.scheduler import Decisions, Policy, Snapshot
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.services.policy_file import load_policy
from trainyard.sim.cluster import gpu_ids, submit
from trainyard.sim.policies import replay_for
from trainyard.sim.trace import TraceJob
from trainyard.tracker import TrackerConfig

POLICY = """
max_running = 10
min_runtime = "0s"

[pools.gpu]
gpus = 4
max_jobs = 8

[queues.xq]
pools = ["gpu"]

[queues.yq]
pools = ["gpu"]

[queues.hi]
pools = ["gpu"]
priority = 5

[teams.x]
members = ["ann"]
[teams.x.quota.gpu]
gpus = 2
borrow_gpus = 2

[teams.y]
members = ["bob"]
[teams.y.quota.gpu]
gpus = 2
borrow_gpus = 2
"""
ACTIVE = (JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING)


def view(snapshot: Snapshot, decisions: Decisions) -> dict[str, Any]:
    """What a pass saw and decided, with nothing that differs only by where it ran (the
    store's seq numbers: only their order counts)."""
    return {
        "pending": [(j.job_id, j.queue, j.priority, j.resources, j.kind, j.owner, j.team,
                     j.submitted_at) for j in sorted(snapshot.pending, key=lambda j: j.seq)],
        "running": [(r.job_id, r.queue, r.resources, r.pool, r.gpu_ids, r.team, r.started_at,
                     r.preempting, r.sweep) for r in snapshot.running],
        "now": snapshot.now,
        "usage": {queue: round(value, 6) for queue, value in snapshot.usage.items()},
        "admit": decisions.admit,
        "gpu_ids": decisions.gpu_ids,
        "pools": decisions.pools,
        "preempt": decisions.preempt,
        "reasons": {job: (r.code, r.message) for job, r in decisions.pending.items()},
    }


class Recorder:
    """The tracker's policy, keeping a view of every pass."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.passes: list[dict[str, Any]] = []

    def schedule(self, snapshot: Snapshot) -> Decisions:
        decisions = self.inner.schedule(snapshot)
        self.passes.append(view(snapshot, decisions))
        return decisions


def step(srv: TrainyardServer) -> None:
    srv.tracker.run_once()
    assert srv.tracker.wait_for_launches()


def test_the_replay_and_the_live_tracker_make_the_same_decisions(tmp_path: Path) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(POLICY)
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", policy_file=policy_file,
                                       tracker=TrackerConfig(cancel_grace=2.0)))
    recorder = Recorder(srv.tracker.policy)
    srv.tracker.policy = recorder
    clock = [time.time() + 100.0]
    srv.tracker.clock = lambda: clock[0]

    def train(name: str, queue: str, user: str) -> str:
        spec = JobSpec(name=name, command="sleep 600", queue=queue,
                       resources=Resources(cpus=1, gpus=1))
        return srv.service.train(Identity(user=user), spec)[0]

    try:
        # Pass A: x's three jobs start, one GPU borrowed from y's idle quota.
        xs = [train(f"x{i}", "xq", "ann") for i in (1, 2, 3)]
        step(srv)
        t_a = clock[0]
        tracked_a = recorder.passes[-1]
        # Pass B, 30 s later: y's jobs come; y2 (queue hi) takes the free GPU, and y1, within
        # y's quota, reclaims the borrowed one.
        clock[0] += 30.0
        ys = [train("y1", "yq", "bob"), train("y2", "hi", "bob")]
        after_a = len(recorder.passes)
        step(srv)
        t_b = clock[0]
        tracked_b = next(p for p in recorder.passes if p["now"] == t_b)
        assert list(tracked_b["preempt"]) == [xs[0]] and tracked_b["admit"] == (ys[1],)
        # Pass C: once the victim stopped and waits again, y1 starts.
        def requeued() -> list[dict[str, Any]]:
            return [p for p in recorder.passes[after_a:]
                    if xs[0] in [job[0] for job in p["pending"]]]

        deadline = time.monotonic() + 30
        while not requeued():
            assert time.monotonic() < deadline, srv.jobs.get(xs[0])
            time.sleep(0.05)
            step(srv)
        tracked_c = requeued()[0]
        assert tracked_c["admit"] == (ys[0],)
        records = [srv.jobs.get(job_id) for job_id in xs + ys]
    finally:
        for job in srv.jobs.in_states(ACTIVE):
            with contextlib.suppress(TrainyardError):
                srv.service.cancel(LOCAL, job.id)
        deadline = time.monotonic() + 30
        while srv.jobs.in_states(ACTIVE) and time.monotonic() < deadline:
            step(srv)
            time.sleep(0.05)
        srv.tracker.stop()
        srv.db.close()

    # The same jobs and steps through the replay.
    policy = load_policy(policy_file)
    trace = [TraceJob(r.id, r.submitted_at, 600.0, r.spec.resources.gpus,
                      team="x" if r.owner == "ann" else "y", user=r.owner,
                      queue=r.spec.queue, priority=r.spec.priority, name=r.spec.name,
                      cpus=r.spec.resources.cpus, memory_mb=r.spec.resources.memory_mb)
             for r in records]
    submitted = submit(trace, policy)
    assert [j.team for j in submitted.pending] == [r.team for r in records]
    replay = replay_for("default", policy, len(gpu_ids(policy)), ["x", "y"], exhaustive=True)

    def sim_pass(now: float) -> dict[str, Any]:
        replay.account_usage(now)
        snapshot = replay.snapshot(now)
        decisions = replay.policy.schedule(snapshot)
        seen = view(snapshot, decisions)
        replay.apply(decisions, now)
        return seen

    for pending in submitted.pending[:3]:
        replay.submit(pending, 600.0, pending.team)
    assert sim_pass(t_a) == tracked_a
    for pending in submitted.pending[3:]:
        replay.submit(pending, 600.0, pending.team)
    assert sim_pass(t_b) == tracked_b
    assert sim_pass(t_b) == tracked_c  # the victim stopped at once: the next pass is C
