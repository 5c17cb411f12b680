"""Assembles store, tracker, service and gRPC server from one configuration."""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
from concurrent import futures
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from trainyard.api.admin_service import AdminServicer
from trainyard.api.auth import AuthInterceptor
from trainyard.api.grpc_service import TrainingServicer
from trainyard.auth.authenticator import Authenticator
from trainyard.domain.kinds import JobKind
from trainyard.domain.pools import PoolCapacity
from trainyard.executors.base import Executor
from trainyard.executors.local import LocalExecutor
from trainyard.metadata.artifacts import ArtifactCollector
from trainyard.metadata.datasets import DatasetRegistry
from trainyard.metadata.workspace import Workspace
from trainyard.services.admin import AccessService
from trainyard.services.jobs import TrainingService
from trainyard.services.models import ModelService
from trainyard.services.policy_source import ActivePolicy, PolicySource
from trainyard.services.runs import RunService
from trainyard.store.access import AccessStore
from trainyard.store.datasets import DatasetStore
from trainyard.store.db import Database, open_database, sqlite_url
from trainyard.store.jobs import JobStore
from trainyard.store.metrics import MetricStore
from trainyard.store.model_registry import ModelStore
from trainyard.store.runs import RunStore
from trainyard.store.usage import UsageStore
from trainyard.tracker import Tracker, TrackerConfig
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

if TYPE_CHECKING:  # the Docker SDK is loaded only by a server that runs containers
    from trainyard.executors.docker import DockerConfig

log = logging.getLogger(__name__)


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

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["TrainingService"].full_name
ADMIN_SERVICE_NAME = pb.DESCRIPTOR.services_by_name["AdminService"].full_name


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


class TrainyardServer:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        data_dir = config.data_dir.resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        self.workspace = Workspace(data_dir)
        self.db: Database = open_database(config.database_url or sqlite_url(data_dir))
        self.jobs = JobStore(self.db)
        metrics = MetricStore(self.db)
        models = ModelStore(self.db)
        dataset_store = DatasetStore(self.db)
        self.pools: dict[str, PoolCapacity] = {JobKind.LOCAL: PoolCapacity(
            JobKind.LOCAL, max_jobs=config.tracker.max_concurrent, gpu_ids=host_gpu_ids())}
        self.executors: dict[str, Executor] = {
            JobKind.LOCAL: LocalExecutor(self.workspace.executor_dir)}
        if config.docker is not None:
            from trainyard.executors.docker import DockerExecutor

            docker = config.docker
            if not docker.instance:
                docker = replace(docker, instance=instance_id(data_dir))
            self.pools[JobKind.DOCKER] = PoolCapacity(
                JobKind.DOCKER, max_jobs=docker.max_containers, cpus=docker.cpus,
                memory_mb=docker.memory_mb, gpu_ids=docker.gpu_ids)
            self.executors[JobKind.DOCKER] = DockerExecutor(docker)
        self.policy = PolicySource(config.policy_file, self.executors)
        tracker_config = config.tracker
        if self.policy.current is not None:
            tracker_config = replace(
                tracker_config, max_concurrent=self.policy.current.max_running,
                fair_share_half_life=self.policy.current.fair_share_half_life_s)
        self.access = AccessService(
            AccessStore(self.db),
            Authenticator(AccessStore(self.db), loopback_only=is_loopback(config.host)),
            policy_file=lambda: str(config.policy_file or ""))
        self.tracker = Tracker(
            jobs=self.jobs, metrics=metrics, datasets=dataset_store,
            artifacts=ArtifactCollector(models, self.workspace.artifacts_dir),
            executors=self.executors, pools=self.pools,
            policy=ActivePolicy(self.policy, tracker_config.max_concurrent),
            workspace=self.workspace, config=tracker_config, usage=UsageStore(self.db),
            half_life=self.fair_share_half_life,
        )
        datasets = DatasetRegistry(dataset_store, self.workspace.datasets_dir, data_dir)
        self.service = TrainingService(
            jobs=self.jobs, metrics=metrics, models=models, datasets=datasets,
            workspace=self.workspace, pools=self.pools,
            on_submit=self.tracker.wake,
            on_cancel=self.tracker.job_cancelled,
            queue_acl=self.access.queue_acl,
            share_team_jobs=config.share_team_jobs,
            on_denied=lambda who, action, target, why: self.access.audit(
                who, action, target, False, why),
            policy=lambda: self.policy.current,
        )
        self.runs = RunService(self.service, RunStore(self.db), models)
        self.models = ModelService(self.runs, models, datasets, self.workspace.artifacts_dir)
        self.health = health.HealthServicer()
        self.grpc = grpc.server(
            futures.ThreadPoolExecutor(max_workers=config.grpc_workers,
                                       thread_name_prefix="grpc"),
            options=[("grpc.so_reuseport", 0)],
            interceptors=[AuthInterceptor(self.access)],
        )
        pb_grpc.add_TrainingServiceServicer_to_server(
            TrainingServicer(self.service, self.runs, self.models, self.policy,
                             config.tracker.max_concurrent),
            self.grpc)
        pb_grpc.add_AdminServiceServicer_to_server(AdminServicer(self.access), self.grpc)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.grpc)
        reflection.enable_server_reflection(
            (SERVICE_NAME, ADMIN_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME),
            self.grpc
        )
        self.port = 0

    def fair_share_half_life(self) -> float:
        """Fair share's half-life under the policy in force, which a reload may change."""
        current = self.policy.current
        if current is None:
            return self.config.tracker.fair_share_half_life
        return current.fair_share_half_life_s

    def start(self) -> int:
        """Recover, start the tracker, then serve. Returns the bound port."""
        self.db.claim_exclusive()
        refusal = self.tracker.missing_executors() or self._exposure()
        if refusal is not None:
            for executor in self.executors.values():
                executor.close()
            self.db.close()
            raise RuntimeError(refusal)
        address = f"{self.config.host}:{self.config.port}"
        credentials = self._tls()
        self.port = self.grpc.add_insecure_port(address) if credentials is None else \
            self.grpc.add_secure_port(address, credentials)
        if self.port == 0:
            raise OSError(f"cannot listen on {address}")
        self.tracker.start()
        self.grpc.start()
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info("serving on %s:%d, data in %s", self.config.host, self.port,
                 self.workspace.data_dir)
        return self.port

    def _exposure(self) -> str | None:
        """Why binding this address would be unsafe, or None."""
        host = self.config.host
        if is_loopback(host):
            return None
        if not self.access.store.any_users():
            return (f"refusing to bind {host}: with no users, anyone who can reach it could "
                    "run code as this server. Create the first admin with 'trainyard admin "
                    "bootstrap NAME', or bind 127.0.0.1")
        if self.config.tls_cert is None:
            return (f"refusing to bind {host} without TLS: tokens would cross the network in "
                    "clear. Give --tls-cert and --tls-key ('trainyard admin gen-cert' makes a "
                    "pair for trials), or bind 127.0.0.1")
        return None

    def _tls(self) -> grpc.ServerCredentials | None:
        cert, key = self.config.tls_cert, self.config.tls_key
        if cert is None and key is None:
            return None
        if cert is None or key is None:
            raise ValueError("TLS needs both --tls-cert and --tls-key")
        return grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])

    def stop(self, grace: float = 2.0) -> None:
        self.health.enter_graceful_shutdown()
        self.grpc.stop(grace).wait()
        self.tracker.stop()
        for executor in self.executors.values():
            executor.close()
        self.db.close()

    def wait(self) -> None:
        self.grpc.wait_for_termination()
