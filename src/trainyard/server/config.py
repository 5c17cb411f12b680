"""A server's configuration and what it reads of its host: GPUs, memory, a stable id."""

from __future__ import annotations

import ipaddress
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from trainyard.domain.log_cap import DEFAULT_MAX_LOG_BYTES
from trainyard.store.metrics import DEFAULT_MAX_METRIC_POINTS
from trainyard.tracker import TrackerConfig

if TYPE_CHECKING:  # the Docker SDK is loaded only by a server that runs containers
    from trainyard.executors.docker import DockerConfig


def host_gpu_ids() -> tuple[str, ...]:
    """The NVIDIA devices of this host, by index: what a pool can hand out by default."""
    ids = [dev.name[6:] for dev in Path("/dev").glob("nvidia*") if dev.name[6:].isdigit()]
    return tuple(sorted(ids, key=int))


def host_memory_mb() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)


def docker_pool_defaults(instance: str) -> DockerConfig:
    """A Docker pool as large as this host, for a service that names no capacity."""
    from trainyard.executors.docker import DockerConfig

    return DockerConfig(instance=instance, cpus=float(os.cpu_count() or 1),
                        memory_mb=host_memory_mb(), gpu_ids=host_gpu_ids())


def instance_id(data_dir: Path) -> str:
    """A name for this service's store, kept in its data dir; labels its containers."""
    path = data_dir / "instance-id"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        value = secrets.token_hex(6)
        path.write_text(value + "\n")
        return value


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerConfig:
    data_dir: Path = Path(".trainyard")
    database_url: str = ""  # empty: SQLite in data_dir
    host: str = "127.0.0.1"
    port: int = 50051  # 0 picks a free port
    # The HTTP API, dashboard and metrics, on the same host; 0 picks a free port, None
    # serves no HTTP (the command line serves it at 8080 unless told otherwise).
    http_port: int | None = None
    tracker: TrackerConfig = field(default_factory=TrackerConfig)
    grpc_workers: int = 256  # streams (watch, logs) each hold a thread while open
    # The Docker pool; None runs no containers. Its instance, when empty, is the store's.
    docker: DockerConfig | None = None
    # TLS from PEM files; both or neither.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    share_team_jobs: bool = True  # members see and cancel their teams' jobs too
    # The declared queueing policy (TOML or YAML); None: FIFO with one open queue.
    policy_file: Path | None = None
    # Servers sharing one PostgreSQL: the leader's lease lasts lease_ttl seconds from its
    # last renewal, renewed (and, by a standby, tried for) every lease_renew_interval. A
    # standby takes over within about lease_ttl + lease_renew_interval of the leader's end.
    lease_ttl: float = 5.0
    lease_renew_interval: float = 1.0
    # Each attempt's log is cut at this size, with a note; its metric points past this
    # many are dropped and counted on its run.
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
    max_metric_points: int = DEFAULT_MAX_METRIC_POINTS
