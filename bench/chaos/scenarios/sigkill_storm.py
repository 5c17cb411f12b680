"""SIGKILL storm: the server is killed at random moments while a mixed workload runs (local
processes and containers, sweeps, jobs cancelled, jobs failing on purpose, and quota reclaim
preempting one team's borrowing jobs for the other's), and started again on the same store
each time, on SQLite and on PostgreSQL. Clients keep submitting, retrying an unanswered
submit with its request id. Quick: 4 kills, 60 jobs; full: 20 kills, 500 jobs."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

from benchlib import num, percentile

from chaos.checks import NO_ANSWER, GaveUp, Verdict, cancel, retried, submit, verify, wait_quiet
from chaos.servers import (
    Postgres,
    Server,
    add_users,
    find_pg_bindir,
    remove_containers,
    stop_jobs,
    wait_answering,
)
from chaos.workload import forever, mixed, spec
from trainyard.client import Client
from trainyard.client.errors import TrainyardError

# Two teams share pool "cpu" half and half, each may borrow the other's half: the vision
# team's backlog fills the pool, and each nlp job takes its quota back by preemption.
POLICY = """
max_running = 6
min_runtime = "0s"
reserve_after = "1h"
service_levels = false

[pools.cpu]
executor = "local"
cpus = 4
memory_mb = 4096
max_jobs = 4

[pools.box]
executor = "docker"
cpus = 2
memory_mb = 1024
max_jobs = 2

[queues.batch]
pools = ["cpu"]
preemptible = true

[queues.boxes]
pools = ["box"]

[teams.vision]
members = ["ann"]

[teams.vision.quota.cpu]
cpus = 2
borrow_cpus = 2

[teams.vision.quota.box]
cpus = 1
borrow_cpus = 1

[teams.nlp]
members = ["carol"]

[teams.nlp.quota.cpu]
cpus = 2
borrow_cpus = 2

[teams.nlp.quota.box]
cpus = 1
borrow_cpus = 1
"""
QUIET_TIMEOUT_S = 600.0
CONTAINER_SHARE = 0.15
NLP_EVERY = 8  # every 8th job is the other team's
SWEEP_EVERY = 40  # a sweep of three jobs instead of one job
CANCEL_EVERY = 50  # a job that runs until cancelled, cancelled a few submits later


class Storm:
    def __init__(self, workdir: Path, database_url: str, kills: int, jobs: int,
                 seed: int) -> None:
        policy = workdir / "policy.toml"
        workdir.mkdir(parents=True, exist_ok=True)
        policy.write_text(POLICY)
        self.server = Server(workdir, database_url=database_url, args=[
            "--policy", str(policy), "--docker", "--docker-gpu-ids", "none"])
        self.kills = kills
        self.jobs = jobs
        self.rng = random.Random(seed)
        self.run_id = f"storm-{seed}"
        self.mean_gap_s = 5.5 if jobs > 100 else 3.0
        self.acknowledged: set[str] = set()
        self.unanswered: list[str] = []
        self.recovery_s: list[float] = []
        self.sweeps = 0
        self.sweeps_unanswered = 0
        self.cancels = 0
        self.done = threading.Event()
        self.error: BaseException | None = None

    def submitter(self, tokens: dict[str, str]) -> None:
        ann = self.server.client(tokens["ann"])
        carol = self.server.client(tokens["carol"])
        to_cancel: list[str] = []
        pause = self.kills * self.mean_gap_s * 0.8 / self.jobs
        try:
            index = 0
            while index < self.jobs:
                client = carol if index % NLP_EVERY == NLP_EVERY - 1 else ann
                if index % SWEEP_EVERY == SWEEP_EVERY - 1:
                    self.sweep(ann, index)
                    index += 3
                    continue
                if index % CANCEL_EVERY == CANCEL_EVERY - 1:
                    job = forever(self.run_id, index, queue="batch")
                    to_cancel.append(submit(client, job, refused=self.unanswered))
                else:
                    job = mixed(self.run_id, index, self.rng, queue="batch",
                                container_queue="boxes", container_share=CONTAINER_SHARE)
                    self.acknowledged.add(submit(client, job, refused=self.unanswered))
                if len(to_cancel) > 0 and index % CANCEL_EVERY == 5:
                    self.cancel(ann, to_cancel)
                index += 1
                time.sleep(pause * self.rng.uniform(0.5, 1.5))
            self.cancel(ann, to_cancel)
        except BaseException as exc:  # reported by run(); the storm stops
            self.error = exc
        finally:
            self.done.set()
            ann.close()
            carol.close()

    def sweep(self, client: Client, index: int) -> None:
        template = spec(f"sweep-{index}", self.run_id, seconds=0.5, queue="batch")
        try:
            _, ids = client.sweep(template, grid={"lr": ["0.1", "0.01", "0.001"]})
        except TrainyardError as exc:
            if exc.code not in NO_ANSWER:
                raise
            self.sweeps_unanswered += 1  # no request id: not retried; its jobs, if any,
            return  # are checked all the same
        self.acknowledged.update(ids)
        self.sweeps += 1

    def cancel(self, client: Client, job_ids: list[str]) -> None:
        while job_ids:
            job_id = job_ids.pop()
            self.acknowledged.add(job_id)
            cancel(client, job_id, lambda call: retried(call, refused=self.unanswered))
            self.cancels += 1

    def killer(self) -> None:
        for _ in range(self.kills):
            # Once submitting is over the kills go on, while the jobs run.
            time.sleep(self.rng.uniform(0.4, 1.6) * self.mean_gap_s)
            self.server.kill()
            time.sleep(self.rng.uniform(0.0, 0.5))
            began = time.monotonic()
            self.server.start()
            wait_answering(self.server, self.admin)
            self.recovery_s.append(time.monotonic() - began)

    def run(self) -> dict[str, Any]:
        self.admin = self.server.bootstrap()
        self.server.start()
        tokens = add_users(self.server, self.admin, ["ann", "carol"])
        submitting = threading.Thread(target=self.submitter, args=(tokens,), daemon=True)
        submitting.start()
        self.killer()
        submitting.join(timeout=QUIET_TIMEOUT_S)
        if self.error is not None:
            raise self.error
        if submitting.is_alive():
            raise GaveUp("the submits did not finish")
        with self.server.client(self.admin, timeout=20) as admin:
            quiet_s = wait_quiet(admin, QUIET_TIMEOUT_S)
            verdict: Verdict = verify(admin, self.server.data_dir, self.acknowledged)
        return {**verdict.figures(), "kills": self.kills, "restarts": self.server.starts - 1,
                "recovery_s_p50": num(percentile(self.recovery_s, 50)),
                "recovery_s_max": num(max(self.recovery_s, default=float("nan"))),
                "quiet_after_s": num(quiet_s), "preemptions": verdict.preemptions,
                "submit_retries": len(self.unanswered),
                "sweeps": self.sweeps, "sweeps_unanswered": self.sweeps_unanswered,
                "cancels": self.cancels}

    def close(self) -> None:
        self.server.kill()
        stop_jobs(self.server.data_dir)
        remove_containers(self.server.data_dir)


def storm(workdir: Path, database: str, kills: int, jobs: int, seed: int) -> dict[str, Any]:
    pg = None
    try:
        url = ""
        if database == "postgresql":
            bindir = find_pg_bindir()
            if bindir is None:
                return {"error": "PostgreSQL is not installed (initdb not found)"}
            pg = Postgres(bindir).create()
            url = pg.url
        run = Storm(workdir, url, kills, jobs, seed)
        try:
            return run.run()
        finally:
            run.close()
    finally:
        if pg is not None:
            pg.destroy()


def run(workdir: Path, quick: bool) -> dict[str, Any]:
    kills, jobs = (4, 60) if quick else (20, 500)
    per_store = {database: storm(workdir / database, database, kills, jobs, seed)
                 for seed, database in enumerate(("sqlite", "postgresql"), start=1)}
    total: dict[str, Any] = {}
    for key in ("jobs", "lost", "duplicated", "stuck", "wrong_state", "unexecuted", "kills",
                "restarts"):
        total[key] = sum(int(result.get(key, 0)) for result in per_store.values())
    errors = [f"{db}: {r['error']}" for db, r in per_store.items() if "error" in r]
    if errors:
        total["error"] = "; ".join(errors)
    return {**total, **per_store}
