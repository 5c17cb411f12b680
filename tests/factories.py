"""The scheduler's jobs for tests, built one way: a waiting job and a running one with the
domain's defaults, each field a keyword. Test modules fix their own defaults with
functools.partial rather than writing the constructor out again."""

from __future__ import annotations

from trainyard.domain.kinds import JobKind
from trainyard.domain.spec import Resources
from trainyard.scheduler.model import PendingJob, RunningJob

DEFAULT = Resources()


def waiting(job: str | int, queue: str = "a", *, seq: int | None = None, priority: int = 0,
            cpus: float = DEFAULT.cpus, memory_mb: int = DEFAULT.memory_mb,
            gpus: int = DEFAULT.gpus, kind: str = JobKind.LOCAL, owner: str = "",
            team: str = "", submitted_at: float = 0.0, sweep: str = "",
            attained: float = 0.0) -> PendingJob:
    """A waiting job. `job` is its id, or a number n: the id "j<n>", submitted n-th."""
    if isinstance(job, int):
        job_id, order = f"j{job}", job
    else:
        job_id, order = job, 0
    return PendingJob(job_id, queue, priority, order if seq is None else seq,
                      Resources(cpus, memory_mb, gpus), kind, owner, team, submitted_at,
                      sweep, attained)


def running(job_id: str, queue: str = "a", *, cpus: float = DEFAULT.cpus,
            memory_mb: int = DEFAULT.memory_mb, gpus: int = DEFAULT.gpus,
            pool: str = JobKind.LOCAL, gpu_ids: tuple[str, ...] = (), team: str = "",
            started_at: float = 0.0, preempting: bool = False, sweep: str = "",
            attained: float = 0.0, priority: int = 0) -> RunningJob:
    """A job that holds its allocation in `pool`."""
    return RunningJob(job_id, queue, Resources(cpus, memory_mb, gpus), pool, gpu_ids, team,
                      started_at, preempting, sweep, attained, priority)
