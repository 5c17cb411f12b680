"""Pools: named compute behind one executor, with a declared capacity."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.kinds import JobKind
from trainyard.domain.spec import JobSpec, Resources, total_resources


@dataclass(frozen=True)
class PoolCapacity:
    """What a pool can hold at once. None means the pool does not count that resource."""

    name: str
    max_jobs: int
    cpus: float | None = None
    memory_mb: int | None = None
    gpu_ids: tuple[str, ...] = ()  # device ids handed to jobs, each to one job at a time
    # A pool of several machines: its largest node's, which one worker must fit in.
    node_cpus: float | None = None
    node_memory_mb: int | None = None
    node_gpus: int | None = None

    @property
    def gpus(self) -> int:
        return len(self.gpu_ids)


@dataclass(frozen=True)
class SlurmPool:
    """How a pool of executor "slurm" reaches its cluster and stages its jobs' files."""

    partition: str
    account: str = ""
    qos: str = ""
    staging: str = "pull"  # "pull": the runtime fetches and pushes; "shared": host paths
    cache_dir: str = "/var/tmp/trainyard/{node}"  # node-local; {node}: the node's name
    cache_mb: int = 20480
    python: str = "python3"
    service_address: str = ""  # host:port the jobs reach the service at; "": the server's
    spread: bool = False  # one worker per node when possible
    grace_s: float | None = None  # None: the server's cancel grace


# The Kubeflow resources a Kubernetes pool may create, and the framework each serves.
RESOURCE_KINDS: tuple[str, ...] = ("PyTorchJob", "TFJob", "TrainJob")
RESOURCE_FRAMEWORK = {"PyTorchJob": "pytorch", "TFJob": "tensorflow", "TrainJob": "pytorch"}


# A pool whose jobs Kueue admits counts its GPUs in Kueue; Trainyard's own count of them
# (it counts every pool's GPUs by id) is set beyond what its jobs could hold at once.
KUEUE_GPU_IDS = 8192


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # or "Exists"
    value: str = ""
    effect: str = ""  # "", NoSchedule, PreferNoSchedule or NoExecute
    seconds: int | None = None  # tolerationSeconds, NoExecute only


@dataclass(frozen=True)
class KubernetesPool:
    """How a pool of executor "kubernetes" reaches its cluster and what it creates there."""

    kinds: tuple[str, ...] = ("PyTorchJob",)  # RESOURCE_KINDS; the first unless --framework
    kubeconfig: str = ""  # "": in_cluster, else the default kubeconfig ($KUBECONFIG)
    context: str = ""  # "": the kubeconfig's current context
    in_cluster: bool = False  # the service runs in a pod: its service account's credentials
    namespace: str = "default"  # jobs of no team
    team_namespace: str = ""  # each team's, "{team}" replaced (trainyard-{team}); "": namespace
    image_pull_policy: str = "IfNotPresent"
    service_account: str = ""
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    token_delivery: str = "secret"  # "secret": a Secret owned by the resource; "env": inline
    admission: str = "trainyard"  # "kueue": created suspended, for Kueue to admit
    queue_name: str = ""  # the Kueue LocalQueue, with admission "kueue"
    runtime_ref: str = ""  # TrainJob: the (Cluster)TrainingRuntime it runs against
    runtime_kind: str = "ClusterTrainingRuntime"  # or "TrainingRuntime" (in the namespace)
    chief: bool = False  # TFJob: the first worker is the Chief
    cleanup: str = "delete"  # "delete": once final in Trainyard; "keep": the operator's TTL
    ttl_s: int = 3600  # with cleanup "keep": ttlSecondsAfterFinished
    python: str = "python3"  # the image's Python, for the job runtime
    cache_dir: str = "/var/tmp/trainyard"  # inside the container, for the staged files
    cache_mb: int = 20480
    service_address: str = ""  # host:port the pods reach the service at; "": the server's
    grace_s: float | None = None  # None: the server's cancel grace

    def namespace_of(self, team: str) -> str:
        """The namespace of a team's jobs: the template with the team's name as a DNS label
        (lowercased; characters a label cannot hold become '-')."""
        if not (team and self.team_namespace):
            return self.namespace
        room = 63 - len(self.team_namespace) + len("{team}")
        label = re.sub(r"[^a-z0-9-]+", "-", team.lower()).strip("-")[:room].strip("-")
        return self.team_namespace.replace("{team}", label or "team")

    def kind_for(self, framework: str) -> str | None:
        """The resource a job of `framework` becomes ("" or "none": the pool's first), or
        None when the pool creates none for it."""
        if framework in ("", "none"):
            return self.kinds[0]
        return next((k for k in self.kinds if RESOURCE_FRAMEWORK[k] == framework), None)


def check_placement(spec: JobSpec, kind: str, pools: Mapping[str, PoolCapacity]) -> None:
    """Reject at submit a job of `kind` that no pool of this server could ever run. Without
    a policy file each kind has one pool, named after it."""
    pool = pools.get(kind)
    if pool is None:
        if kind == JobKind.DOCKER:
            raise InvalidArgument("image", "container images need the Docker executor, which "
                                  "this server does not run (start it with --docker); give a "
                                  "command instead")
        raise InvalidArgument("command", "this server runs no local processes; give an image")
    problem = never_fits(pool, spec.resources, spec.workers)
    if problem is not None:
        raise InvalidArgument(*problem)


def never_fits(pool: PoolCapacity, res: Resources, workers: int = 1) -> tuple[str, str] | None:
    """(field, problem) if the job, `workers` times `res` at once, is larger than the whole
    pool; None if it can fit."""
    total = total_resources(res, workers)
    checks: tuple[tuple[str, float, float, float | None, str], ...] = (
        # field, one worker's, the whole job's, the pool's, unit
        ("resources.cpus", res.cpus, total.cpus, pool.cpus, "CPUs"),
        ("resources.memory_mb", res.memory_mb, total.memory_mb, pool.memory_mb, "MiB"),
        ("resources.gpus", res.gpus, total.gpus, pool.gpus, "GPUs"),
    )
    nodes: tuple[tuple[str, float, float | None, str], ...] = (
        ("resources.cpus", res.cpus, pool.node_cpus, "CPUs"),
        ("resources.memory_mb", res.memory_mb, pool.node_memory_mb, "MiB"),
        ("resources.gpus", res.gpus, pool.node_gpus, "GPUs"),
    )
    for field_name, each, largest, unit in nodes:
        if largest is not None and each > largest:
            asked = f"{each} MiB" if unit == "MiB" else _number(each)
            return field_name, f"{asked} is more than the {_number(largest)} {unit} of the " \
                f"largest node of pool {pool.name!r}"
    for field_name, each, need, have, unit in checks:
        if have is None or need <= have:
            continue
        where = f"the {_number(have)} {unit} of pool {pool.name!r}"
        if workers == 1 or each > have:  # one worker alone is already too large
            asked = f"{each} MiB" if unit == "MiB" else _number(each)
            return field_name, f"{asked} is more than {where}"
        return "workers", f"{workers} workers × {_number(each)} {unit} ({field_name}) = " \
            f"{_number(need)} {unit} is more than {where}"
    return None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def shortfall(pool: PoolCapacity, need: Resources, used: Resources, jobs: int) -> str | None:
    """Why a job needing `need` does not fit next to what already uses the pool, as a phrase,
    or None when it fits."""
    if jobs + 1 > pool.max_jobs:
        return f"all {pool.max_jobs} job slots of pool {pool.name!r} are in use"
    if pool.cpus is not None and used.cpus + need.cpus > pool.cpus + 1e-9:
        return (f"pool {pool.name!r} has {max(0.0, pool.cpus - used.cpus):g} of {pool.cpus:g} "
                f"CPUs free and the job needs {need.cpus:g}")
    if pool.memory_mb is not None and used.memory_mb + need.memory_mb > pool.memory_mb:
        return (f"pool {pool.name!r} has {max(0, pool.memory_mb - used.memory_mb)} of "
                f"{pool.memory_mb} MiB free and the job needs {need.memory_mb} MiB")
    if used.gpus + need.gpus > pool.gpus:
        return (f"pool {pool.name!r} has {max(0, pool.gpus - used.gpus)} of {pool.gpus} GPUs "
                f"free and the job needs {need.gpus}")
    return None


def allocate_gpus(pool: PoolCapacity, taken: set[str], count: int) -> tuple[str, ...] | None:
    """`count` free device ids of the pool in its declared order, or None if too few are free."""
    if count == 0:
        return ()
    free = []
    for gpu in pool.gpu_ids:  # the first `count` free: a large pool is not read to its end
        if gpu not in taken:
            free.append(gpu)
            if len(free) == count:
                return tuple(free)
    return None


def add(a: Resources, b: Resources) -> Resources:
    return Resources(a.cpus + b.cpus, a.memory_mb + b.memory_mb, a.gpus + b.gpus)
