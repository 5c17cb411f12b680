"""What the queue policy's tests build on: three pools (two running commands, one running
containers), four open queues, and one pass of QueuePolicy over some jobs."""

from __future__ import annotations

from functools import partial

from tests.factories import waiting
from trainyard.domain.policy import Policy, Pool, Queue, Quota, Team
from trainyard.domain.pools import PoolCapacity
from trainyard.scheduler.model import Decisions, PendingJob, RunningJob, Snapshot
from trainyard.scheduler.queues import QueuePolicy

GPU = Pool(PoolCapacity("gpu", max_jobs=16, cpus=32, memory_mb=65536,
                        gpu_ids=tuple(f"g{i}" for i in range(8))), executor="local")
CPU = Pool(PoolCapacity("cpu", max_jobs=8, cpus=8, memory_mb=16384), executor="local")
BOX = Pool(PoolCapacity("box", max_jobs=4, cpus=4, memory_mb=8192), executor="docker")


def policy(**overrides: object) -> Policy:
    base: dict[str, object] = {
        "pools": {"gpu": GPU, "cpu": CPU, "box": BOX},
        "queues": {
            "urgent": Queue("urgent", pools=("gpu", "cpu"), priority=10),
            "a": Queue("a", pools=("gpu", "cpu")),
            "b": Queue("b", pools=("gpu", "cpu")),
            "box": Queue("box", pools=("box",)),
        },
        "teams": {},
        "max_running": 100,
        "reserve_after_s": 600.0,
    }
    base.update(overrides)
    return Policy(**base)  # type: ignore[arg-type]


# A job numbered n: "j<n>", submitted n-th, of user "u".
job = partial(waiting, owner="u")


def run(p: Policy, pending: list[PendingJob], running: list[RunningJob] | None = None,
        now: float = 0.0, usage: dict[str, float] | None = None) -> Decisions:
    return QueuePolicy(p).schedule(Snapshot(pending, running or [], now=now,
                                            usage=usage or {}))


def quota_policy() -> Policy:
    teams = {
        "vision": Team("vision", frozenset({"ann"}),
                       {"gpu": Quota(gpus=4, borrow_gpus=4)}),
        "nlp": Team("nlp", frozenset({"bob"}), {"gpu": Quota(gpus=4, borrow_gpus=0)}),
    }
    return policy(teams=teams)


# Who is in which team, as the policy lists its members; no quotas.
TEAMS = {"vision": Team("vision", frozenset({"ann"})), "nlp": Team("nlp", frozenset({"bob"}))}
