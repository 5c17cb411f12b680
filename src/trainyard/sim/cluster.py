"""The cluster a trace is replayed on: a declared policy, or one generated for `--gpus N`,
and what the service would make of each trace job at submit."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from trainyard.domain import policy as cfg
from trainyard.domain.errors import TrainyardError
from trainyard.domain.kinds import JobKind, kind_for
from trainyard.domain.pools import PoolCapacity
from trainyard.domain.spec import JobSpec
from trainyard.scheduler.model import PendingJob
from trainyard.sim.trace import TraceJob

GPU_POOL = "gpu"
# Queues that a generated policy ranks above the rest: the default Alibaba QoS queues.
GENERATED_PRIORITIES: Mapping[str, int] = {"ls": 2, "burstable": 1}
SIM_IMAGE = "trainyard/sim"  # what a trace job "runs" when its queue's pools run containers


@dataclass(frozen=True)
class Cluster:
    policy: cfg.Policy
    generated: bool = False  # made by generated_policy, not read from a file

    @property
    def gpus(self) -> int:
        """The distinct GPU ids of all pools: pools may hand out the same host's devices."""
        return len(gpu_ids(self.policy))

    @property
    def team_quotas(self) -> dict[str, int]:
        """Each team's nominal GPUs over all pools."""
        return {name: sum(q.gpus or 0 for q in team.quotas.values())
                for name, team in self.policy.teams.items()}


def gpu_ids(policy: cfg.Policy) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for pool in policy.pools.values():
        for gpu in pool.capacity.gpu_ids:
            seen.setdefault(gpu)
    return tuple(seen)


def generated_policy(jobs: Sequence[TraceJob], gpus: int) -> cfg.Policy:
    """What `--gpus N` replays under: one local pool `gpu` of N GPUs (ids "0".."N-1") that
    counts neither CPUs nor memory, and holds as many jobs as the trace has; one queue for
    each queue of the trace, open to all, on that pool, priority 0 (2 for `ls` and 1 for
    `burstable`, the Alibaba QoS queues), weight 1; one team for each team of the trace,
    owning an equal share of the GPUs (N // teams, the first N % teams teams by name one
    more) and free to borrow all the rest while others leave it idle. No global limit beyond
    the number of jobs; the service's defaults for fair-share half-life (1 h), reserve_after
    (10 min) and min_runtime (5 min)."""
    if gpus < 1:
        raise ValueError("a cluster needs at least one GPU")
    capacity = PoolCapacity(GPU_POOL, max_jobs=max(1, len(jobs)),
                            gpu_ids=tuple(str(i) for i in range(gpus)))
    queues = {name: cfg.Queue(name, pools=(GPU_POOL,),
                              priority=GENERATED_PRIORITIES.get(name, 0))
              for name in sorted({job.queue for job in jobs})}
    names = sorted({job.team for job in jobs if job.team})
    teams = {}
    for index, name in enumerate(names):
        owned = gpus // len(names) + (1 if index < gpus % len(names) else 0)
        teams[name] = cfg.Team(name, quotas={GPU_POOL: cfg.Quota(
            gpus=owned, borrow_gpus=gpus - owned)})
    return cfg.Policy(pools={GPU_POOL: cfg.Pool(capacity)}, queues=queues, teams=teams,
                      max_running=max(1, len(jobs)))


def without_quotas(policy: cfg.Policy) -> cfg.Policy:
    """The same pools and queues with no teams: no quotas, so no borrowing or reclaim."""
    return replace(policy, teams={})


def executor_pools(policy: cfg.Policy) -> dict[str, PoolCapacity]:
    """The policy's pools merged by executor, as a server without a policy file has them
    (FifoPolicy knows pools by executor): job slots, CPUs and memory added up (a resource
    one pool does not count is not counted), GPU ids the distinct ones."""
    merged: dict[str, PoolCapacity] = {}
    for pool in policy.pools.values():
        cap = pool.capacity
        have = merged.get(pool.executor)
        if have is None:
            merged[pool.executor] = replace(cap, name=pool.executor)
            continue
        ids = dict.fromkeys(have.gpu_ids + cap.gpu_ids)
        merged[pool.executor] = PoolCapacity(
            pool.executor, max_jobs=have.max_jobs + cap.max_jobs,
            cpus=None if have.cpus is None or cap.cpus is None else have.cpus + cap.cpus,
            memory_mb=None if have.memory_mb is None or cap.memory_mb is None
            else have.memory_mb + cap.memory_mb,
            gpu_ids=tuple(ids))
    return merged


@dataclass(frozen=True)
class Submitted:
    """The trace jobs the service accepts, as the scheduler sees them, and the rest."""

    jobs: tuple[TraceJob, ...]
    pending: tuple[PendingJob, ...]  # the same order; seq is the index
    refused: Mapping[str, int] = field(default_factory=dict)  # reason -> jobs
    examples: Mapping[str, str] = field(default_factory=dict)  # reason -> a job id


def submit(jobs: Iterable[TraceJob], policy: cfg.Policy) -> Submitted:
    """Each job as the service's submit check would take it: refused if the policy has no
    such queue, the queue is closed to its user and team, or no pool of the queue could
    ever hold it; otherwise drawing on the team the service would choose (its trace team
    where the policy declares it). A job runs as a container when its queue's first pool
    runs containers, else as a command."""
    accepted: list[TraceJob] = []
    pending: list[PendingJob] = []
    refused: dict[str, int] = {}
    examples: dict[str, str] = {}
    for job in jobs:
        spec = JobSpec(name=job.name or job.job_id, command="sim", image=_image(policy, job),
                       queue=job.queue, priority=job.priority, resources=job.resources)
        teams = frozenset({job.team}) if job.team else frozenset()
        kind = kind_for(spec.image)
        try:
            team = cfg.check_submission(policy, spec, job.user, kind, teams)
        except TrainyardError as exc:
            reason = str(exc)
            refused[reason] = refused.get(reason, 0) + 1
            examples.setdefault(reason, job.job_id)
            continue
        pending.append(PendingJob(
            job_id=job.job_id, queue=job.queue, priority=job.priority, seq=len(pending),
            resources=job.resources, kind=kind,
            owner=job.user, team=team, submitted_at=job.submit_time))
        accepted.append(job)
    return Submitted(tuple(accepted), tuple(pending), refused, examples)


def _image(policy: cfg.Policy, job: TraceJob) -> str:
    queue = policy.queues.get(job.queue)
    if queue is None or not queue.pools or queue.pools[0] not in policy.pools:
        return ""
    return SIM_IMAGE if policy.pools[queue.pools[0]].executor == JobKind.DOCKER else ""
