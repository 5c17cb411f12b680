"""Every write boundary: the server kills itself right after its Nth committed write of a job
(TRAINYARD_FAULT=after-job-write:N: a submit, a state move, a stop asked, a message
recorded), is started again without the fault, and the job must still end as its command
decides, each attempt run once. N walks over every write of three lives: a plain job, a job
preempted by a quota reclaim and requeued (with the job it was preempted for), and a job
cancelled while it runs; the walk of a life ends at the first N that its writes never
reach. Quick: every other N."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from chaos.checks import FINAL, NO_ANSWER, GaveUp, Verdict, cancel, verify
from chaos.servers import Server, add_users, stop_jobs
from chaos.workload import EXPECT, MARKER, RAN, RUN, forever, spec
from trainyard.client import Client, Resources, TrainSpec
from trainyard.client.errors import TrainyardError

MAX_WRITES = 40  # no life here has more; the walk stops there regardless
LIFE_TIMEOUT_S = 90.0

# One CPU, promised to nlp; vision may borrow it while nlp leaves it idle, and gives it back
# by preemption when an nlp job comes.
POLICY = """
max_running = 2
min_runtime = "0s"
reserve_after = "1h"
service_levels = false

[pools.cpu]
executor = "local"
cpus = 1
memory_mb = 1024
max_jobs = 1

[queues.batch]
pools = ["cpu"]
preemptible = true

[teams.vision]
members = ["ann"]

[teams.vision.quota.cpu]
cpus = 0
borrow_cpus = 1

[teams.nlp]
members = ["carol"]

[teams.nlp.quota.cpu]
cpus = 1
"""
# Ends at once once it has a checkpoint: its first attempt waits to be preempted.
RESUMES = (f'echo x >> "$CHECKPOINT_PATH/{MARKER}" && echo x >> {RAN} && '
           'if [ -f "$CHECKPOINT_PATH/step" ]; then exit 0; fi; '
           'echo 1 > "$CHECKPOINT_PATH/step"; sleep 120')

T = TypeVar("T")


class Life:
    """One run of one life against a server armed at N; restarts it (unarmed) once dead."""

    def __init__(self, workdir: Path, writes: int, with_teams: bool) -> None:
        args = ["--max-concurrent", "1"]
        if with_teams:
            policy = workdir / "policy.toml"
            workdir.mkdir(parents=True, exist_ok=True)
            policy.write_text(POLICY)
            args = ["--policy", str(policy)]
        self.server = Server(workdir, args=args)
        self.writes = writes
        self.crashes = 0
        self.admin = self.server.bootstrap() if with_teams else ""
        self.server.start(fault=f"after-job-write:{writes}")
        self.tokens = add_users(self.server, self.admin, ["ann", "carol"]) if with_teams \
            else {}
        self.run_id = f"life-{writes}"
        self.acknowledged: set[str] = set()
        self.deadline = time.monotonic() + LIFE_TIMEOUT_S

    def client(self, user: str = "") -> Client:
        return self.server.client(self.tokens.get(user, self.admin))

    def call(self, fn: Callable[[], T]) -> T:
        """`fn()`, restarting the server (without the fault) if it died."""
        while True:
            try:
                return fn()
            except TrainyardError as exc:
                if exc.code not in NO_ANSWER:
                    raise
                if time.monotonic() > self.deadline:
                    raise GaveUp(f"no answer at N={self.writes}: {exc}") from exc
                if not self.server.alive:
                    self.crashes += 1
                    self.server.start()
                time.sleep(0.1)

    def submit(self, client: Client, job: TrainSpec) -> str:
        job_id = self.call(lambda: client.train(job).job_id)
        self.acknowledged.add(job_id)
        return job_id

    def wait(self, client: Client, job_id: str, states: frozenset[str]) -> str:
        while True:
            state = self.call(lambda: client.status(job_id).state)
            if state in states:
                return state
            if time.monotonic() > self.deadline:
                raise GaveUp(f"{job_id} stayed {state} at N={self.writes}")
            time.sleep(0.1)

    def verdict(self) -> Verdict:
        # A crash after the last write is noticed only when the server is asked again.
        with self.client() as client:
            self.call(lambda: client.list_jobs(page_size=1))
            return verify(client, self.server.data_dir, self.acknowledged)

    def close(self) -> None:
        self.server.kill()
        stop_jobs(self.server.data_dir)


def plain(life: Life) -> None:
    with life.client() as client:
        job_id = life.submit(client, spec("plain", life.run_id, seconds=0.3,
                                          request_id=f"{life.run_id}-plain"))
        life.wait(client, job_id, FINAL)


def cancelled(life: Life) -> None:
    with life.client() as client:
        job_id = life.submit(client, forever(life.run_id, 0, queue="default"))
        life.wait(client, job_id, frozenset({"RUNNING"}))
        cancel(client, job_id, life.call)
        life.wait(client, job_id, FINAL)


def preempted(life: Life) -> None:
    labels = {RUN: life.run_id, EXPECT: "SUCCEEDED"}
    borrower = TrainSpec(name="borrower", command=RESUMES, queue="batch",
                         resources=Resources(cpus=1, memory_mb=256), labels=labels,
                         client_request_id=f"{life.run_id}-borrower")
    owner = spec("owner", life.run_id, seconds=0.3, queue="batch",
                 request_id=f"{life.run_id}-owner")
    with life.client("ann") as ann, life.client("carol") as carol:
        borrowing = life.submit(ann, borrower)
        life.wait(ann, borrowing, frozenset({"RUNNING"}) | FINAL)
        owning = life.submit(carol, owner)
        life.wait(carol, owning, FINAL)
        life.wait(ann, borrowing, FINAL)


LIVES: dict[str, tuple[Callable[[Life], None], bool]] = {
    "plain": (plain, False), "preempted": (preempted, True), "cancelled": (cancelled, False)}


def walk(workdir: Path, name: str, step: int) -> tuple[Verdict, dict[str, Any]]:
    drive, with_teams = LIVES[name]
    total = Verdict()
    crashed_at: list[int] = []
    writes = 0
    for writes in range(1, MAX_WRITES + 1, step):
        life = Life(workdir / f"{name}-{writes}", writes, with_teams)
        try:
            drive(life)
            verdict = life.verdict()
        finally:
            life.close()
        for i, text in enumerate(verdict.problems):
            verdict.problems[i] = f"{name} N={writes}: {text}"
        total.add(verdict)
        if not life.crashes:
            break  # this life has fewer writes than N: every boundary was walked
        crashed_at.append(writes)
    return total, {"crashes": len(crashed_at), "writes": writes - 1,
                   "preemptions": total.preemptions}


def run(workdir: Path, quick: bool) -> dict[str, Any]:
    total = Verdict()
    lives: dict[str, Any] = {}
    for name in LIVES:
        verdict, figures = walk(workdir, name, 2 if quick else 1)
        total.add(verdict)
        lives[name] = figures
    return {**total.figures(), "crashes": sum(f["crashes"] for f in lives.values()),
            "lives": lives}
