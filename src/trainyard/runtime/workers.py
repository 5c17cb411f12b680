"""A remote worker's place in its group, from what Slurm and the batch script set."""

from __future__ import annotations

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
        return {}
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


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "")
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
