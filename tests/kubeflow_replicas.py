"""The replicas of a Kubeflow job as local processes, for the test-side operator
(tests/kubeflow_operator.py): which replicas a PyTorchJob, TFJob or TrainJob asks for, the
variables the real operators inject into each, the processes themselves, and the status
shapes the operators write back. Test equipment, not product."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trainyard.testbed.slurm_cluster import free_port

DEFAULT_GRACE_S = 30.0  # a pod's terminationGracePeriodSeconds when its template has none
LOOPBACK = "127.0.0.1"  # what the master's Service resolves to here: every replica is local


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    replica_specs: str  # the spec field of the replica types ("" for TrainJob)
    container: str  # the container the operator injects into

    @property
    def trainer(self) -> bool:
        return self.kind == "TrainJob"


PYTORCH = Kind("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", "pytorchReplicaSpecs",
               "pytorch")
TENSORFLOW = Kind("kubeflow.org", "v1", "tfjobs", "TFJob", "tfReplicaSpecs", "tensorflow")
TRAINJOB = Kind("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", "", "node")
KINDS = (PYTORCH, TENSORFLOW, TRAINJOB)
# The order the operators rank replica types in: the coordinator first.
TYPE_ORDER = ("Master", "Chief", "PS", "Worker", "Evaluator")


class PlanError(Exception):
    """The job cannot be run as asked: the reason and message of its Failed condition."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class ReplicaPlan:
    """One replica to run: its type and index, its fake node, its argv and full env."""

    replica_type: str  # Master, Worker, Chief, ... ; "node" for TrainJob
    index: int  # within its type
    rank: int  # across the job
    node_name: str
    argv: list[str]
    env: dict[str, str]
    grace_s: float

    @property
    def name(self) -> str:
        return f"{self.replica_type}-{self.index}"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def resolve_env(entries: list[dict[str, Any]], node_name: str) -> dict[str, str]:
    """A container's `env`: values, and the one field reference a local process can
    resolve (spec.nodeName); a Secret cannot be read here (no core API)."""
    env: dict[str, str] = {}
    for entry in entries:
        name = entry["name"]
        source = entry.get("valueFrom")
        if source is None:
            env[name] = str(entry.get("value", ""))
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            raise PlanError("CreateContainerConfigError",
                            f"env {name}: cannot read secret {ref.get('name', '')!r} "
                            f"key {ref.get('key', '')!r}: this cluster serves no Secrets")
        elif source.get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
            env[name] = node_name
        else:
            raise PlanError("CreateContainerConfigError",
                            f"env {name}: cannot resolve {json.dumps(source)}")
    return env


def _container(pod_spec: Mapping[str, Any], name: str) -> dict[str, Any]:
    containers: list[dict[str, Any]] = pod_spec.get("containers") or []
    found = next((c for c in containers if c.get("name") == name), None)
    if found is None:
        raise PlanError("CreateContainerConfigError", f"no container named {name!r}")
    return found


def _argv(container: Mapping[str, Any]) -> list[str]:
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    if not argv:
        raise PlanError("CreateContainerError",
                        "the container has no command (an image's entrypoint cannot run here)")
    return argv


def plan_v1(kind: Kind, obj: Mapping[str, Any]) -> list[ReplicaPlan]:
    """The replicas of a PyTorchJob or TFJob, with what training-operator v1 injects."""
    specs: dict[str, Any] = obj["spec"].get(kind.replica_specs) or {}
    types = sorted(specs, key=lambda t: TYPE_ORDER.index(t) if t in TYPE_ORDER else 99)
    counted = [(t, i) for t in types for i in range(int(specs[t].get("replicas", 1)))]
    ports = {key: free_port() for key in counted}
    master_port = ports[counted[0]] if counted else free_port()
    tf_cluster: dict[str, list[str]] = {}
    for replica_type, index in counted:
        tf_cluster.setdefault(replica_type.lower(), []).append(
            f"{LOOPBACK}:{ports[(replica_type, index)]}")
    plans = []
    for rank, (replica_type, index) in enumerate(counted):
        pod_spec = specs[replica_type]["template"]["spec"]
        container = _container(pod_spec, kind.container)
        node_name = f"node-{rank}"
        env = resolve_env(container.get("env") or [], node_name)
        if kind is PYTORCH:
            env.update(MASTER_ADDR=LOOPBACK, MASTER_PORT=str(master_port),
                       WORLD_SIZE=str(len(counted)), RANK=str(rank), PYTHONUNBUFFERED="1")
        else:
            env["TF_CONFIG"] = json.dumps({
                "cluster": tf_cluster,
                "task": {"type": replica_type.lower(), "index": index},
                "environment": "cloud"})
        grace = float(pod_spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_S))
        plans.append(ReplicaPlan(replica_type, index, rank, node_name, _argv(container), env,
                                 grace))
    return plans


def runtime_container(runtime: Mapping[str, Any]) -> dict[str, Any]:
    """The runtime's trainer container ("node" in its "node" replicated job), if any."""
    jobs = runtime.get("spec", {}).get("template", {}).get("spec", {}).get("replicatedJobs", [])
    for job in jobs:
        pod = job.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
        with contextlib.suppress(PlanError):
            return _container(pod, "node")
    return {}


def plan_trainjob(obj: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[ReplicaPlan]:
    """The nodes of a TrainJob over its (torch) runtime, with the PET_* variables."""
    trainer: dict[str, Any] = obj["spec"].get("trainer") or {}
    ml_policy = runtime.get("spec", {}).get("mlPolicy", {})
    nodes = int(trainer.get("numNodes") or ml_policy.get("numNodes") or 1)
    base = runtime_container(runtime)
    container = {"command": trainer.get("command") or base.get("command"),
                 "args": trainer.get("args") or base.get("args")}
    master_port = free_port()
    plans = []
    for rank in range(nodes):
        node_name = f"node-{rank}"
        env = resolve_env([*(base.get("env") or []), *(trainer.get("env") or [])], node_name)
        env.update(PET_NNODES=str(nodes), PET_NPROC_PER_NODE="1", PET_NODE_RANK=str(rank),
                   PET_MASTER_ADDR=LOOPBACK, PET_MASTER_PORT=str(master_port),
                   PYTHONUNBUFFERED="1")
        plans.append(ReplicaPlan("node", rank, rank, node_name, _argv(container), env,
                                 DEFAULT_GRACE_S))
    return plans


@dataclass
class Replica:
    """A replica's running (or ended) process. `env` is exactly what it was given."""

    plan: ReplicaPlan
    workdir: Path
    output: Path  # stdout and stderr together
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    start_error: str = ""

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def node_name(self) -> str:
        return self.plan.node_name

    @property
    def env(self) -> dict[str, str]:
        return self.plan.env

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    @property
    def exit_code(self) -> int | None:
        """The exit status (negative: the signal that ended it); None while it runs."""
        if self.popen is None:
            return 127 if self.start_error else None
        return self.popen.poll()

    def start(self, base_env: Mapping[str, str]) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = {**base_env, "HOME": str(self.workdir), **self.plan.env}
        self.plan.env = env
        with self.output.open("ab") as out:
            try:
                self.popen = subprocess.Popen(
                    self.plan.argv, env=env, cwd=self.workdir, stdin=subprocess.DEVNULL,
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as error:
                self.start_error = f"cannot start {self.plan.argv[0]!r}: {error}"
                out.write(f"{self.start_error}\n".encode())

    def signal(self, sig: int) -> None:
        """Signal the replica's whole process group (what a container's kill reaches)."""
        if self.popen is not None and self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, sig)

    def wait(self, timeout: float) -> bool:
        if self.popen is None:
            return True
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self, grace_s: float) -> None:
        """TERM, then KILL once the grace period is over, as the kubelet does."""
        self.signal(signal.SIGTERM)
        if not self.wait(grace_s):
            self.signal(signal.SIGKILL)
            self.wait(10.0)
