"""A remote worker's place in its group, from what Slurm and the batch script set, or what
a Kubeflow operator injected."""

from __future__ import annotations

import json
from collections.abc import Mapping

from trainyard.runtime.gang import LOOPBACK, framework_env

DEFAULT_MASTER_PORT = 29500  # PyTorch's own default


def worker_vars(env: Mapping[str, str], framework: str) -> dict[str, str]:
    """The framework variables of this task of a Slurm step: RANK, WORLD_SIZE and
    LOCAL_RANK from SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID; MASTER_ADDR and
    MASTER_PORT from TRAINYARD_MASTER_ADDR and TRAINYARD_MASTER_PORT; TF_CONFIG lists
    TRAINYARD_WORKER_HOSTS (one host per rank), rank i listening on MASTER_PORT + 1 + i.
    Outside Slurm nothing is changed (an empty dict): what the executor set stands; a step of
    one task is no group, and gets none of them, as a single-worker job anywhere."""
    if "SLURM_PROCID" not in env:
        return kubeflow_vars(env)
    rank = _int(env, "SLURM_PROCID", 0)
    world = _int(env, "SLURM_NTASKS", 1)
    if world == 1:
        return {}
    local_rank = _int(env, "SLURM_LOCALID", 0)
    hosts = [host for host in env.get("TRAINYARD_WORKER_HOSTS", "").split(",") if host]
    master_addr = env.get("TRAINYARD_MASTER_ADDR") or (hosts[0] if hosts else LOOPBACK)
    master_port = _int(env, "TRAINYARD_MASTER_PORT", DEFAULT_MASTER_PORT)
    if not hosts:
        hosts = [master_addr] * world
    if len(hosts) != world:
        raise ValueError(f"TRAINYARD_WORKER_HOSTS names {len(hosts)} hosts for "
                         f"{world} tasks")
    workers = [f"{host}:{master_port + 1 + i}" for i, host in enumerate(hosts)]
    return framework_env(rank, world, local_rank, master_addr, master_port, workers, framework)


def kubeflow_vars(env: Mapping[str, str]) -> dict[str, str]:
    """RANK and WORLD_SIZE where a Kubeflow operator says them in its own way: TF_CONFIG
    (TFJob: the chief first, then the workers), or the PET_ variables of a TrainJob's torch
    runtime (which also give MASTER_ADDR and MASTER_PORT, as torchrun would). A PyTorchJob's
    operator sets RANK and WORLD_SIZE itself; what is set already stands."""
    found: dict[str, str] = {}
    if "PET_NODE_RANK" in env:
        per_node = _int(env, "PET_NPROC_PER_NODE", 1)
        found = {"RANK": str(_int(env, "PET_NODE_RANK", 0) * per_node),
                 "WORLD_SIZE": str(_int(env, "PET_NNODES", 1) * per_node),
                 "LOCAL_RANK": "0"}
        if env.get("PET_MASTER_ADDR"):
            found["MASTER_ADDR"] = env["PET_MASTER_ADDR"]
        if env.get("PET_MASTER_PORT"):
            found["MASTER_PORT"] = env["PET_MASTER_PORT"]
    elif env.get("TF_CONFIG"):
        found = _tf_rank(env["TF_CONFIG"])
    return {name: value for name, value in found.items() if not env.get(name)}


def _tf_rank(raw: str) -> dict[str, str]:
    try:
        config = json.loads(raw)
        cluster, task = config.get("cluster") or {}, config.get("task") or {}
        chiefs, workers = list(cluster.get("chief") or []), list(cluster.get("worker") or [])
        kind, index = str(task.get("type", "worker")), int(task.get("index", 0))
    except (ValueError, TypeError, AttributeError):
        raise ValueError("TF_CONFIG is not the JSON a TFJob's operator sets") from None
    if kind not in ("chief", "master", "worker"):
        return {}  # a parameter server or an evaluator is no rank of the group
    rank = index if kind != "worker" else len(chiefs) + index
    return {"RANK": str(rank), "WORLD_SIZE": str(max(1, len(chiefs) + len(workers)))}


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "")
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
