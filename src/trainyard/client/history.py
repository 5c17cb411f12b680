"""The service's history as the SDK gives it: the policy in force, and the finished jobs
that ran, read a page at a time as they are iterated (`Client.export_history`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from google.protobuf.timestamp_pb2 import Timestamp

from trainyard.client.messages import state_name
from trainyard.v1 import training_pb2 as pb


@dataclass(frozen=True)
class HistoryJob:
    job_id: str
    name: str
    owner: str
    team: str
    queue: str
    priority: int
    cpus: float  # the whole job's: every worker's together
    memory_mb: int
    gpus: int
    state: str  # SUCCEEDED, FAILED or CANCELLED
    submitted_at: float  # seconds since the epoch
    ended_at: float
    ran_s: float  # in all its attempts
    launch_s: float  # its attempts' time from LAUNCHING to RUNNING, together
    attempts: int

    @property
    def wait_s(self) -> float:
        """The time between its submit and its end that it was not running."""
        return max(0.0, self.ended_at - self.submitted_at - self.ran_s)

    @property
    def jct_s(self) -> float:
        return self.ended_at - self.submitted_at


@dataclass(frozen=True)
class PoolInForce:
    name: str
    executor: str
    cpus: float | None  # None: not counted
    memory_mb: int | None
    gpu_ids: tuple[str, ...]
    max_jobs: int


@dataclass(frozen=True)
class PolicyInForce:
    source: str  # the policy file; "" when the server runs FIFO without one
    text: str  # the file's text
    format: str  # "toml" or "yaml"; "" without a file
    max_running: int
    pools: tuple[PoolInForce, ...]
    admins: tuple[str, ...] = ()  # whom every queue takes jobs from, whatever its rules


@dataclass(frozen=True)
class History:
    policy: PolicyInForce
    total: int  # finished jobs in the window
    first_submit: float | None  # the first one's submit, seconds since the epoch
    jobs: Iterator[HistoryJob]  # in submit order (the store's), a page at a time


def _seconds(ts: Timestamp) -> float:
    return float(ts.ToNanoseconds()) / 1e9


def _job(job: pb.HistoryJob) -> HistoryJob:
    res = job.resources
    return HistoryJob(job.job_id, job.name, job.owner, job.team, job.queue, job.priority,
                      res.cpus, res.memory_mb, res.gpus, state_name(job.state),
                      _seconds(job.submitted_at), _seconds(job.ended_at), job.ran_seconds,
                      job.launch_seconds, job.attempts)


def _policy(policy: pb.PolicyInForce) -> PolicyInForce:
    pools = tuple(PoolInForce(
        p.name, p.executor, p.cpus if p.HasField("cpus") else None,
        p.memory_mb if p.HasField("memory_mb") else None, tuple(p.gpu_ids), p.max_jobs)
        for p in policy.pools)
    return PolicyInForce(policy.source, policy.text, policy.format, policy.max_running, pools,
                         tuple(policy.admins))


def read_history(page: Callable[[str], pb.HistoryPage]) -> History:
    """The first page read now (it carries the policy); the others as `jobs` reaches them."""
    first = page("")

    def jobs() -> Iterator[HistoryJob]:
        current = first
        while True:
            yield from (_job(job) for job in current.jobs)
            if not current.next_page_token:
                return
            current = page(current.next_page_token)

    return History(_policy(first.policy), first.total,
                   _seconds(first.first_submit) if first.HasField("first_submit") else None,
                   jobs())
