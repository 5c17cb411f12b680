"""The queueing policy an administrator declares: pools, queues, teams and their quotas, and
global limits. Pure data; `trainyard.services.policy_file` reads it from TOML or YAML, and the
scheduler decides by it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from trainyard.domain.access import QueueAccess
from trainyard.domain.budgets import Budget
from trainyard.domain.errors import InvalidArgument, PermissionDenied
from trainyard.domain.kinds import JobKind, kind_in
from trainyard.domain.limits import SubmitLimits
from trainyard.domain.notice import DEFAULT_NOTICE, NoticeRule, NoticeSignal
from trainyard.domain.pools import KubernetesPool, PoolCapacity, SlurmPool, never_fits
from trainyard.domain.retry import DEFAULT_MAX_ATTEMPTS
from trainyard.domain.spec import JobSpec
from trainyard.quantities import describe_duration


@dataclass(frozen=True)
class Pool:
    capacity: PoolCapacity  # its name, CPUs, memory, GPU ids and maximum jobs
    executor: str = JobKind.LOCAL  # domain.kinds.KINDS: which jobs it can run
    slurm: SlurmPool | None = None  # for executor "slurm": its cluster's partition and more
    kubernetes: KubernetesPool | None = None  # for executor "kubernetes"

    @property
    def name(self) -> str:
        return self.capacity.name


@dataclass(frozen=True)
class Queue:
    name: str
    pools: tuple[str, ...]  # where its jobs may run, in order of preference
    priority: int = 0  # higher runs first
    max_running: int | None = None  # None: only the global limit
    users: frozenset[str] = frozenset()  # with teams: who may submit; both empty: everyone
    teams: frozenset[str] = frozenset()
    weight: float = 1.0  # share among queues of equal priority
    # Whether its jobs may be preempted to return borrowed quota; None: when priority <= 0.
    preemptible: bool | None = None
    # What its jobs get when they do not say (domain.retry): attempts, and each attempt's
    # time limit; and the longest time limit it allows (a job without one gets it).
    max_attempts: int | None = None
    time_limit_s: float | None = None
    max_time_limit_s: float | None = None
    # GPU- and CPU-hours all its jobs together may use in a rolling period (domain.budgets).
    budget: Budget | None = None
    # What its jobs get before they are preempted (domain.notice): the notice's signal, and
    # the grace to checkpoint in (None: the server's cancel grace).
    preempt_notice: NoticeSignal = NoticeSignal.TERM
    preempt_grace_s: float | None = None

    @property
    def notice(self) -> NoticeRule:
        return NoticeRule(self.preempt_notice, self.preempt_grace_s)

    @property
    def access(self) -> QueueAccess:
        return QueueAccess(self.users, self.teams)

    @property
    def may_preempt(self) -> bool:
        return self.preemptible if self.preemptible is not None else self.priority <= 0


@dataclass(frozen=True)
class Quota:
    """A team's share of one pool: what it is owed, and how much more it may borrow from
    quota its owners leave idle. A resource the quota does not name (None) is not counted."""

    cpus: float | None = None
    memory_mb: int | None = None
    gpus: int | None = None
    borrow_cpus: float = 0.0
    borrow_memory_mb: int = 0
    borrow_gpus: int = 0


@dataclass(frozen=True)
class Team:
    name: str
    members: frozenset[str] = frozenset()
    quotas: Mapping[str, Quota] = field(default_factory=dict)  # by pool name
    # GPU- and CPU-hours its jobs may use in a rolling period, in every queue.
    budget: Budget | None = None


def job_kind(policy: Policy, queue_name: str, image: str, code: bool = False) -> str:
    """A job's kind: the executor of the first pool of its queue that runs its shape (an
    image: docker or kubernetes; a command: local or slurm). A queue the policy does not
    list runs by kind_for()."""
    queue = policy.queues.get(queue_name)
    executors = [policy.pools[p].executor for p in queue.pools if p in policy.pools] \
        if queue is not None else []
    return kind_in(executors, image, code)


@dataclass(frozen=True)
class Policy:
    pools: Mapping[str, Pool]
    queues: Mapping[str, Queue]
    teams: Mapping[str, Team] = field(default_factory=dict)
    max_running: int = 4  # across all pools
    # Usage older than this counts half as much in fair share between queues.
    fair_share_half_life_s: float = 3600.0
    # A job waiting longer than this gets capacity reserved, so small jobs cannot starve it.
    reserve_after_s: float = 600.0
    # A job that has run for less than this is not preempted: no thrash.
    min_runtime_s: float = 300.0
    # Inside a queue and priority, jobs that attained less service go first, and a team's
    # more-served running jobs are preempted for its less-served ones (scheduler.attained).
    service_levels: bool = True
    # Users every queue takes jobs from, whatever its rules: the admins of the merged view
    # (services.policy), so that admission takes what submit took.
    admins: frozenset[str] = frozenset()
    # Caps on waiting jobs and on submit rate, per user and per team (the `[limits]` table).
    limits: SubmitLimits = field(default_factory=SubmitLimits)

    def notice_for(self, queue_name: str) -> NoticeRule:
        """The notice a job of this queue gets before it is preempted; a queue the policy
        does not list gets the default (TERM, the server's grace)."""
        queue = self.queues.get(queue_name)
        return queue.notice if queue is not None else DEFAULT_NOTICE

    def teams_of(self, user: str) -> frozenset[str]:
        """Every team that lists the user."""
        return frozenset(name for name, team in self.teams.items() if user in team.members)

    def takes(self, queue: Queue, user: str, teams: frozenset[str] | None = None) -> bool:
        """Whether `queue` takes jobs from `user`: the one rule, at submit and at admission.
        `teams`: the user's teams, where the caller has them already (teams_of)."""
        if user in self.admins:
            return True
        return queue.access.admits(user, self.teams_of(user) if teams is None else teams)

    def check_takes(self, queue_name: str, user: str, teams: frozenset[str] = frozenset()
                    ) -> None:
        """PermissionDenied unless the queue takes jobs from `user` (also a member of
        `teams`, beyond those the policy lists). A queue the policy does not list is open:
        without a policy file any name is a queue."""
        queue = self.queues.get(queue_name)
        if queue is None or self.takes(queue, user, teams | self.teams_of(user)):
            return
        raise PermissionDenied(f"queue {queue_name!r} is not open to {user!r}: it takes jobs "
                               f"from {queue.access.principals()}")


def default_policy(pools: Mapping[str, PoolCapacity], max_running: int) -> Policy:
    """What a server without a policy file runs: one open queue, `default`, on every pool."""
    return Policy(
        pools={name: Pool(cap, executor=name) for name, cap in pools.items()},
        queues={"default": Queue("default", pools=tuple(pools))},
        max_running=max_running,
    )


def check_submission(policy: Policy, spec: JobSpec, user: str, kind: str,
                     user_teams: frozenset[str] = frozenset()) -> str:
    """Refuse at submit what this policy could never run, or may not take from this user;
    return the team whose quota the job draws on ("" for none). `user_teams`: teams the
    user belongs to beyond those the policy lists (a trace's own team, in a replay)."""
    queue = policy.queues.get(spec.queue)
    if queue is None:
        raise InvalidArgument("queue", f"{spec.queue!r} is not a queue of this server; its "
                              f"queues are {', '.join(sorted(policy.queues))}")
    policy.check_takes(queue.name, user, user_teams)
    teams = user_teams | policy.teams_of(user)
    pools = [policy.pools[p] for p in queue.pools
             if p in policy.pools and policy.pools[p].executor == kind]
    if not pools:
        field_name, what = ("image", "containers") if spec.image else ("command", "commands")
        raise InvalidArgument(field_name, f"queue {queue.name!r} runs no {what}: its pools are "
                              f"{', '.join(queue.pools)}")
    if kind == JobKind.KUBERNETES:
        pools = _kubernetes_pools_for(queue, pools, spec)
    problems = [never_fits(pool.capacity, spec.resources, spec.workers) for pool in pools]
    if all(problem is not None for problem in problems):
        field_name, problem = next(p for p in problems if p is not None)
        raise InvalidArgument(field_name, problem + f"; no pool of queue {queue.name!r} "
                              "that runs this job is large enough")
    candidates = sorted(teams & queue.teams) if queue.teams else \
        sorted(t for t in teams if t in policy.teams)
    return candidates[0] if candidates else ""


def _kubernetes_pools_for(queue: Queue, pools: list[Pool], spec: JobSpec) -> list[Pool]:
    """The queue's Kubernetes pools that create a resource for the job's framework; the job
    runs its command under the job runtime, so it needs one."""
    if not spec.command:
        raise InvalidArgument("command", "a Kubernetes pool runs the job's command under the "
                              "job runtime (python3 -m trainyard.runtime run -- COMMAND): give "
                              "the command the image should run")
    fitting = [p for p in pools if p.kubernetes is None or
               p.kubernetes.kind_for(spec.framework) is not None]
    if not fitting:
        kinds = sorted({k for p in pools if p.kubernetes for k in p.kubernetes.kinds})
        raise InvalidArgument("framework", f"no pool of queue {queue.name!r} creates a "
                              f"resource for framework {spec.framework!r}: they create "
                              f"{', '.join(kinds)}")
    return fitting


def with_queue_defaults(spec: JobSpec, queue: Queue | None) -> JobSpec:
    """The spec with what its queue gives a job that does not say: attempts (else
    DEFAULT_MAX_ATTEMPTS) and a time limit, held to the queue's longest. Stored so, a job
    keeps them when the policy changes."""
    max_attempts = spec.max_attempts or (queue and queue.max_attempts) or DEFAULT_MAX_ATTEMPTS
    limit = spec.time_limit_s or (queue and queue.time_limit_s) or 0.0
    longest = queue.max_time_limit_s if queue is not None else None
    if queue is not None and longest is not None:
        if spec.time_limit_s > longest:
            raise InvalidArgument("time_limit", f"{describe_duration(spec.time_limit_s)} is "
                                  f"longer than queue {queue.name!r} allows (at most "
                                  f"{describe_duration(longest)})")
        limit = limit or longest
    if (max_attempts, limit) == (spec.max_attempts, spec.time_limit_s):
        return spec
    return replace(spec, max_attempts=max_attempts, time_limit_s=limit)
