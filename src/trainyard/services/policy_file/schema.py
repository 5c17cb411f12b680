"""The policy file's schema as pydantic models, strict on input: an unknown key is an error, and
each value has exactly the type it is documented with (true is not a number, 1.5 is not an
integer). What a type cannot say (names, references to declared pools and teams, durations,
device ids, quotas that must fit their pools) is said by validators that raise the problems
of `problems`.

A reference is checked against every name the file declares, even one whose entry is itself
broken, so that one mistake is not also reported wherever the name is used: validate with
`context=declared(data)`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Self

from pydantic import (
    BeforeValidator,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticKnownError

from trainyard.domain.budgets import Budget
from trainyard.domain.kinds import KINDS, JobKind
from trainyard.domain.notice import NOTICE_SIGNALS, NoticeSignal
from trainyard.domain.policy import Policy, Pool, Queue, Quota, Team
from trainyard.domain.pools import KUEUE_GPU_IDS, PoolCapacity, SlurmPool
from trainyard.domain.retry import MAX_ATTEMPTS_LIMIT, MAX_DURATION_S
from trainyard.domain.spec import NAME_RE
from trainyard.services.policy_file.capacity import quota_problems
from trainyard.services.policy_file.fields import (
    NonNegativeInt,
    NonNegativeNumber,
    PositiveInt,
    PositiveNumber,
    Table,
    not_null,
    one_of,
    seconds,
)
from trainyard.services.policy_file.kubernetes_table import KubernetesModel
from trainyard.services.policy_file.limits_table import LimitsModel
from trainyard.services.policy_file.problems import (
    KeyPath,
    problem,
    problem_at,
    problems_of,
    raise_all,
)

# Device ids go into CUDA_VISIBLE_DEVICES and Docker requests: numbers, UUIDs, MIG ids.
_GPU_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:./_-]{0,127}$")


def declared(data: object) -> dict[str, frozenset[str]]:
    """The names of the pools and teams a parsed file declares, by kind: the context that
    validating a `PolicyModel` needs."""
    def names(section: str) -> frozenset[str]:
        entries = data.get(section) if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            return frozenset()
        return frozenset(name for name in entries if isinstance(name, str))
    return {"pool": names("pools"), "team": names("teams")}


def _declared(info: ValidationInfo, kind: str) -> frozenset[str]:
    if not isinstance(info.context, dict) or kind not in info.context:
        raise TypeError("validate a policy with context=declared(data)")
    names: frozenset[str] = info.context[kind]
    return names


def _undeclared(loc: KeyPath, name: str, kind: str, known: frozenset[str]) -> InitErrorDetails:
    return problem_at(loc, "undeclared", name, kind=kind,
                      declared=", ".join(sorted(known)) or "none")


def _names(kind: str | None = None, at_least_one: bool = False) -> BeforeValidator:
    """A list of names, each of a declared `kind` when given. A name listed twice, or one that
    is not declared, is reported where it is written, and left out."""
    def check(value: object, info: ValidationInfo) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise PydanticKnownError("list_type")
        known = _declared(info, kind) if kind else frozenset()
        names: list[str] = []
        found: list[InitErrorDetails] = []
        for index, name in enumerate(value):
            if not isinstance(name, str) or not NAME_RE.match(name):
                found.append(problem_at((index,), "not_a_name", name))
            elif name in names:
                found.append(problem_at((index,), "listed_twice", name))
            elif kind and name not in known:
                found.append(_undeclared((index,), name, kind, known))
            else:
                names.append(name)
        if at_least_one and not value:
            raise problem("no_pool_named")
        raise_all(found)
        return tuple(names)
    return BeforeValidator(check)


def _device_ids(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise PydanticKnownError("list_type")
    ids: list[str] = []
    found: list[InitErrorDetails] = []
    for index, item in enumerate(value):
        # YAML users write [0, 1]; the ids are strings either way.
        gpu = str(item) if isinstance(item, int) and not isinstance(item, bool) else item
        if not isinstance(gpu, str) or not _GPU_ID.match(gpu):
            found.append(problem_at((index,), "not_a_device_id", item))
        elif gpu in ids:
            found.append(problem_at((index,), "listed_twice", gpu))
        else:
            ids.append(gpu)
    raise_all(found)
    return tuple(ids)


def _kind(value: object) -> str:
    if value not in KINDS:
        raise problem("not_a_kind", kinds=", ".join(KINDS))
    return str(value)


def _entries(kind: str, at_least_one: bool = False, declared_only: bool = False
             ) -> WrapValidator:
    """A table of named entries: pools, queues, teams, a team's quotas by pool. Each key must
    be a name (an entry is still checked when its name is not one, unless its key is not
    even a string), and with `declared_only` a declared one of `kind`."""
    def check(value: object, handler: ValidatorFunctionWrapHandler,
              info: ValidationInfo) -> object:
        if not isinstance(value, dict):
            return handler(value)
        known = _declared(info, kind) if declared_only else None
        found: list[InitErrorDetails | ErrorDetails] = []
        if at_least_one and not value:
            found.append(problem_at((), "none_declared", value, kind=kind))
        for name in value:
            if not isinstance(name, str) or not NAME_RE.match(name):
                found.append(problem_at((str(name),), "not_a_name", name))
            if known is not None and isinstance(name, str) and name not in known:
                found.append(_undeclared((name,), name, kind, known))
        entries = None
        try:
            entries = handler({name: v for name, v in value.items() if isinstance(name, str)})
        except ValidationError as exc:
            found.extend(problems_of(exc))
        # Entry by entry, as written: an entry's name before what is inside it.
        order = {str(name): index for index, name in enumerate(value)}
        found.sort(key=lambda error: order.get(str(error["loc"][0]), -1) if error["loc"] else -1)
        raise_all(found)
        return entries
    return WrapValidator(check)


Names = Annotated[tuple[str, ...], _names()]


class QuotaModel(Table):
    """A team's share of one pool; a resource left out is not counted."""

    cpus: Annotated[NonNegativeNumber | None, not_null("float_type")] = None
    memory_mb: Annotated[NonNegativeInt | None, not_null("int_type")] = None
    gpus: Annotated[NonNegativeInt | None, not_null("int_type")] = None
    borrow_cpus: NonNegativeNumber = 0.0
    borrow_memory_mb: NonNegativeInt = 0
    borrow_gpus: NonNegativeInt = 0

    def quota(self) -> Quota:
        return Quota(self.cpus, self.memory_mb, self.gpus, self.borrow_cpus,
                     self.borrow_memory_mb, self.borrow_gpus)


class BudgetModel(Table):
    """GPU- and CPU-hours in a rolling period (domain.budgets.Budget): a team's or a queue's
    `budget = { gpu_hours = 1000, period = "7d" }`."""

    KEYS = ("gpu_hours", "cpu_hours", "period")

    gpu_hours: Annotated[NonNegativeNumber | None, not_null("float_type")] = None
    cpu_hours: Annotated[NonNegativeNumber | None, not_null("float_type")] = None
    period: Annotated[float, Field(gt=0, le=MAX_DURATION_S, allow_inf_nan=False),
                      seconds(positive=True)]

    @model_validator(mode="after")
    def _some_limit(self) -> Self:
        if self.gpu_hours is None and self.cpu_hours is None:
            raise problem("no_budget_limit")
        return self

    def budget(self) -> Budget:
        return Budget(self.period, self.gpu_hours, self.cpu_hours)


Budgeted = Annotated[BudgetModel | None, not_null("model_type")]


class TeamModel(Table):
    members: Names = ()
    quota: Annotated[dict[str, QuotaModel], _entries("pool", declared_only=True)] = Field(
        default_factory=dict)
    budget: Budgeted = None

    def team(self, name: str) -> Team:
        return Team(name, members=frozenset(self.members),
                    quotas={pool: quota.quota() for pool, quota in self.quota.items()},
                    budget=self.budget.budget() if self.budget is not None else None)


def _staging(value: object) -> object:
    if isinstance(value, str) and value not in STAGING_MODES:
        raise problem("not_a_staging")
    return value


STAGING_MODES = ("pull", "shared")
# A cluster pool's default (Slurm, Kubernetes): the cluster's own limits decide the rest.
SLURM_MAX_JOBS = 1000
SLURM_KEYS = ("partition", "account", "qos", "staging", "cache_dir", "cache_mb", "python",
              "service_address", "spread", "grace")


def _kueue_capacity(data: dict[str, Any]) -> list[InitErrorDetails | ErrorDetails]:
    """A pool whose jobs Kueue admits declares no capacity: Trainyard would admit too."""
    table = data.get("kubernetes")
    if not (isinstance(table, dict) and table.get("admission") == "kueue"):
        return []
    return [problem_at((key,), "kueue_capacity", data[key])
            for key in ("cpus", "memory_mb", "gpus", "gpu_ids") if key in data]


class PoolModel(Table):
    KEYS = ("executor", "cpus", "memory_mb", "gpus", "gpu_ids", "max_jobs", *SLURM_KEYS,
            "kubernetes")

    executor: Annotated[str, BeforeValidator(_kind)] = JobKind.LOCAL
    max_jobs: Annotated[PositiveInt | None, not_null("int_type")] = None
    cpus: Annotated[PositiveNumber | None, not_null("float_type")] = None
    memory_mb: Annotated[PositiveInt | None, not_null("int_type")] = None
    gpus: NonNegativeInt = 0  # device ids "0".."n-1"
    gpu_ids: Annotated[tuple[str, ...] | None, BeforeValidator(_device_ids)] = None
    # executor = "slurm" only (SlurmPool): left out, the capacity keys are the controller's
    partition: Annotated[str | None, not_null("string_type")] = None
    account: str = ""
    qos: str = ""
    staging: Annotated[str, BeforeValidator(_staging)] = "pull"
    cache_dir: str = "/var/tmp/trainyard/{node}"
    cache_mb: PositiveInt = 20480
    python: str = "python3"
    service_address: str = ""
    spread: bool = False
    grace: Annotated[NonNegativeNumber | None, not_null("float_type"),
                     seconds(positive=False)] = None
    # executor = "kubernetes" only: its cluster and resources (kubernetes_table)
    kubernetes: Annotated[KubernetesModel | None, not_null("model_type")] = None

    @model_validator(mode="wrap")
    @classmethod
    def _executor_keys(cls, data: Any, handler: Callable[[Any], PoolModel]) -> PoolModel:
        """The Slurm keys belong to Slurm pools; a Slurm pool needs its partition, any other
        its max_jobs. Checked on the keys as written, beside the values' own problems."""
        if not isinstance(data, dict):
            return handler(data)
        found: list[InitErrorDetails | ErrorDetails] = []
        executor = data.get("executor")
        if executor == JobKind.SLURM:
            if "partition" not in data:
                found.append(problem_at(("partition",), "slurm_required", None))
        else:
            found += [problem_at((key,), "slurm_only", data[key])
                      for key in SLURM_KEYS if key in data]
        if executor != JobKind.KUBERNETES and "kubernetes" in data:
            found.append(problem_at(("kubernetes",), "kubernetes_only", data["kubernetes"]))
        if executor == JobKind.KUBERNETES:
            found += _kueue_capacity(data)
        elif executor != JobKind.SLURM and "max_jobs" not in data:
            found.append(problem_at(("max_jobs",), "no_max_jobs", None))
        try:
            model = handler(data)
        except ValidationError as exc:
            found.extend(problems_of(exc))
            model = None
        raise_all(found)
        assert model is not None
        return model

    @model_validator(mode="wrap")
    @classmethod
    def _one_gpu_declaration(cls, data: Any, handler: Callable[[Any], PoolModel]
                             ) -> PoolModel:
        """gpus or gpu_ids: given both, the pool has no GPUs, and neither value is read."""
        if not (isinstance(data, dict) and "gpus" in data and "gpu_ids" in data):
            return handler(data)
        found: list[InitErrorDetails | ErrorDetails] = []
        try:
            handler({key: value for key, value in data.items() if key not in ("gpus", "gpu_ids")})
        except ValidationError as exc:
            found.extend(problems_of(exc))
        found.append(problem_at(("gpu_ids",), "gpus_twice", data["gpu_ids"]))
        raise_all(found)
        raise AssertionError("unreachable")

    @property
    def gpu_key(self) -> str:
        """The key that declares its GPUs."""
        return "gpu_ids" if self.gpu_ids is not None else "gpus"

    @property
    def gpu_count(self) -> int:
        return len(self.gpu_ids) if self.gpu_ids is not None else self.gpus

    def pool(self, name: str) -> Pool:
        gpu_ids = self.gpu_ids if self.gpu_ids is not None else tuple(
            str(i) for i in range(self.gpus))
        slurm = None
        if self.executor == JobKind.SLURM:
            assert self.partition is not None
            slurm = SlurmPool(partition=self.partition, account=self.account, qos=self.qos,
                              staging=self.staging, cache_dir=self.cache_dir,
                              cache_mb=self.cache_mb, python=self.python,
                              service_address=self.service_address, spread=self.spread,
                              grace_s=self.grace)
        kubernetes = None
        if self.executor == JobKind.KUBERNETES:
            kubernetes = (self.kubernetes or KubernetesModel()).pool()
            if kubernetes.admission == "kueue":
                gpu_ids = tuple(str(i) for i in range(KUEUE_GPU_IDS))
        max_jobs = self.max_jobs if self.max_jobs is not None else SLURM_MAX_JOBS
        return Pool(PoolCapacity(name, max_jobs=max_jobs, cpus=self.cpus,
                                 memory_mb=self.memory_mb, gpu_ids=gpu_ids),
                    executor=self.executor, slurm=slurm, kubernetes=kubernetes)


class QueueModel(Table):
    pools: Annotated[tuple[str, ...], _names("pool", at_least_one=True)]  # by preference
    priority: int = 0
    max_running: Annotated[PositiveInt | None, not_null("int_type")] = None
    users: Names = ()
    teams: Annotated[tuple[str, ...], _names("team")] = ()
    weight: PositiveNumber = 1.0
    preemptible: Annotated[bool | None, not_null("bool_type")] = None
    max_attempts: Annotated[int | None, Field(ge=1, le=MAX_ATTEMPTS_LIMIT),
                            not_null("int_type")] = None
    time_limit: Annotated[float | None, Field(gt=0, le=MAX_DURATION_S, allow_inf_nan=False),
                          seconds(positive=True), not_null("float_type")] = None
    max_time_limit: Annotated[float | None, Field(gt=0, le=MAX_DURATION_S,
                                                  allow_inf_nan=False),
                              seconds(positive=True), not_null("float_type")] = None
    budget: Budgeted = None
    preempt_notice: Annotated[str, one_of(NOTICE_SIGNALS)] = NoticeSignal.TERM.value
    preempt_grace: Annotated[float | None, Field(ge=0, le=MAX_DURATION_S, allow_inf_nan=False),
                             seconds(positive=False), not_null("float_type")] = None

    @model_validator(mode="after")
    def _limit_within_longest(self) -> Self:
        if self.time_limit is not None and self.max_time_limit is not None and \
                self.time_limit > self.max_time_limit:
            raise_all([problem_at(("time_limit",), "time_limit_over_max", self.time_limit)])
        return self

    def queue(self, name: str) -> Queue:
        return Queue(name, pools=self.pools, priority=self.priority,
                     max_running=self.max_running, users=frozenset(self.users),
                     teams=frozenset(self.teams), weight=self.weight,
                     preemptible=self.preemptible, max_attempts=self.max_attempts,
                     time_limit_s=self.time_limit, max_time_limit_s=self.max_time_limit,
                     budget=self.budget.budget() if self.budget is not None else None,
                     preempt_notice=NoticeSignal(self.preempt_notice),
                     preempt_grace_s=self.preempt_grace)


Duration = Annotated[NonNegativeNumber, seconds(positive=False)]
PositiveDuration = Annotated[PositiveNumber, seconds(positive=True)]


class PolicyModel(Table):
    KEYS = ("max_running", "fair_share_half_life", "reserve_after", "min_runtime",
            "service_levels", "limits", "pools", "queues", "teams")

    max_running: PositiveInt = 4  # over all pools
    fair_share_half_life: PositiveDuration = 3600.0
    reserve_after: Duration = 600.0
    min_runtime: Duration = 300.0
    service_levels: bool = True
    pools: Annotated[dict[str, PoolModel], _entries("pool", at_least_one=True)] = Field(
        default_factory=dict, validate_default=True)
    teams: Annotated[dict[str, TeamModel], _entries("team")] = Field(default_factory=dict)
    queues: Annotated[dict[str, QueueModel], _entries("queue", at_least_one=True)] = Field(
        default_factory=dict, validate_default=True)
    limits: LimitsModel = Field(default_factory=LimitsModel)

    @model_validator(mode="after")
    def _quotas_fit(self) -> Self:
        raise_all(quota_problems(self.pools, self.teams))
        return self

    def policy(self) -> Policy:
        return Policy(
            pools={name: pool.pool(name) for name, pool in self.pools.items()},
            queues={name: queue.queue(name) for name, queue in self.queues.items()},
            teams={name: team.team(name) for name, team in self.teams.items()},
            max_running=self.max_running, fair_share_half_life_s=self.fair_share_half_life,
            reserve_after_s=self.reserve_after, min_runtime_s=self.min_runtime,
            service_levels=self.service_levels, limits=self.limits.limits())


def keys_at(table: KeyPath) -> tuple[str, ...]:
    """The keys the table at a key path takes."""
    model: type[Table]
    match table:
        case ():
            model = PolicyModel
        case ("pools", _):
            model = PoolModel
        case ("queues", _):
            model = QueueModel
        case ("teams", _):
            model = TeamModel
        case ("teams", _, "quota", _):
            model = QuotaModel
        case ("limits",):
            model = LimitsModel
        case ("teams" | "queues", _, "budget"):
            model = BudgetModel
        case _:
            return ()
    return model.documented_keys()

