"""The one place that wires a server together: stores, executors, tracker, the use cases
and the gRPC adapter, from one configuration."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import grpc

from trainyard.auth.authenticator import Authenticator
from trainyard.auth.job_grants import JobGrants
from trainyard.domain.kinds import JobKind
from trainyard.domain.policy import Policy
from trainyard.domain.pools import KubernetesPool, PoolCapacity, SlurmPool
from trainyard.executors.base import Executor
from trainyard.executors.registry import Backend, ExecutorSettings, build_backends
from trainyard.executors.slurm import SlurmExecutor
from trainyard.executors.slurm.commands import SlurmError
from trainyard.metadata.artifacts import ArtifactCollector
from trainyard.metadata.datasets import DatasetRegistry
from trainyard.metadata.pushed_streams import PushedStreams
from trainyard.metadata.workspace import Workspace
from trainyard.server.config import (
    ServerConfig,
    docker_pool_defaults,
    host_gpu_ids,
    instance_id,
    is_loopback,
)
from trainyard.server.grpc_server import GrpcServer, UserServicers
from trainyard.server.kubernetes_pools import (
    KubernetesClusters,
    kubernetes_config,
    kubernetes_pools,
)
from trainyard.server.leadership import Leadership, holder_name
from trainyard.server.scheduling import ActivePolicy
from trainyard.server.slurm_pools import REFRESH_S, SlurmCapacity, slurm_config, slurm_pools
from trainyard.services.access import AccessService
from trainyard.services.algorithms import AlgorithmService
from trainyard.services.backpressure import Backpressure
from trainyard.services.bundle import Services
from trainyard.services.datasets import DatasetService
from trainyard.services.guard import Guard
from trainyard.services.history import HistoryService
from trainyard.services.image_ids import engine_image_ids
from trainyard.services.job_runtime import JobRuntimeService
from trainyard.services.jobs import JobService
from trainyard.services.models import ModelService
from trainyard.services.policy import PolicyService
from trainyard.services.policy_file import load_policy
from trainyard.services.runs import RunService
from trainyard.services.sample import SampleService
from trainyard.services.submission import SubmitCheck
from trainyard.services.sweeps import SweepService
from trainyard.store.access import AccessStore
from trainyard.store.algorithms import AlgorithmStore
from trainyard.store.budget_usage import BudgetUsageStore
from trainyard.store.datasets import DatasetStore
from trainyard.store.db import Database, open_database, sqlite_url
from trainyard.store.faults import warn_if_armed
from trainyard.store.history import HistoryStore
from trainyard.store.job_tokens import JobTokenStore
from trainyard.store.jobs import JobStore
from trainyard.store.lease import FencedDatabase, Lease, Term
from trainyard.store.metrics import MetricStore
from trainyard.store.model_registry import ModelStore
from trainyard.store.notices import CANCELLED, EXITED, SUBMITTED, Notices
from trainyard.store.preemption_notes import PreemptionNotes
from trainyard.store.runs import RunStore
from trainyard.store.runtime_streams import RuntimeStreamStore
from trainyard.store.usage import UsageStore
from trainyard.tracker import Tracker
from trainyard.tracker.telemetry import NO_TELEMETRY

if TYPE_CHECKING:  # the Docker SDK is loaded only by a server that runs containers
    from trainyard.executors.docker import DockerConfig
    from trainyard.web.http_server import HttpServer  # loaded only by a server with HTTP
    from trainyard.web.metrics import ServerMetrics

__all__ = ["ServerConfig", "TrainyardServer", "docker_pool_defaults", "host_gpu_ids"]

log = logging.getLogger(__name__)


class TrainyardServer:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        data_dir = config.data_dir.resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        self.workspace = Workspace(data_dir)
        self.db: Database = open_database(config.database_url or sqlite_url(data_dir))
        self.jobs = JobStore(self.db)
        metrics = MetricStore(self.db, config.max_metric_points)
        model_store = ModelStore(self.db)
        dataset_store = DatasetStore(self.db)
        access_store = AccessStore(self.db)
        docker = config.docker
        if docker is not None and not docker.instance:
            docker = replace(docker, instance=instance_id(data_dir))
        # The file's Slurm pools make the Slurm executor (the policy service reads it again).
        file_policy = load_policy(config.policy_file) if config.policy_file else None
        slurm = slurm_pools(file_policy)
        kubernetes = kubernetes_pools(file_policy)
        ca = config.tls_cert.read_bytes() if config.tls_cert else b""
        try:
            backends = self._backends(config, docker, slurm, kubernetes, ca)
        except RuntimeError:
            self.db.close()
            raise
        self.executors: dict[str, Executor] = {k: b.executor for k, b in backends.items()}
        self.slurm_capacity: SlurmCapacity | None = None
        self.kubernetes_clusters: KubernetesClusters | None = None
        try:
            if slurm:
                self.slurm_capacity = self._read_slurm_capacity(slurm)
            if kubernetes:
                self.kubernetes_clusters = self._check_kubernetes(kubernetes)
        except RuntimeError:
            for started in self.executors.values():
                started.close()
            self.db.close()
            raise
        # Without a policy file each kind runs in the pool of its name.
        self.pools: dict[str, PoolCapacity] = {k: b.default_pool for k, b in backends.items()}
        self.policy = PolicyService(
            config.policy_file, self.executors, access_store, self.pools,
            config.tracker.max_concurrent,
            complete=self._complete_policy,
            read=file_policy)
        self.tracker_config = config.tracker
        declared = self.policy.declared
        if declared is not None:
            self.tracker_config = replace(
                self.tracker_config, max_concurrent=declared.max_running,
                fair_share_half_life=declared.fair_share_half_life_s)
        self.access = AccessService(
            access_store, Authenticator(access_store, loopback_only=is_loopback(config.host)),
            policy=self.policy)
        self.usage = UsageStore(self.db)  # fair share's, which the tracker keeps
        # What remote jobs push: the tracker learns of their ends from it too.
        self.pushed = PushedStreams(RuntimeStreamStore(self.db), self.workspace,
                                    max_log_bytes=config.max_log_bytes)
        self.metrics = self._metrics()
        # Not started until start(): a server that is never started (a test stepping its
        # passes) drives this one itself. On PostgreSQL each term of leadership runs a
        # tracker of its own over the term's fenced database.
        self.tracker = self._tracker_for(self.db)
        self.leadership: Leadership | None = None
        self.notices: Notices | None = None
        if not self.db.is_sqlite:
            self.lease = Lease(self.db, holder_name(), config.lease_ttl)
            self.leadership = Leadership(self.lease, renew_interval=config.lease_renew_interval,
                                         begin=self._begin_term, on_change=self._leading)
            self.notices = Notices(self.db)
        if self.kubernetes_clusters is not None:  # a TrainJob runs once its runtime calls
            self.kubernetes_clusters.executor.hear_runtime(
                lambda job_id, attempt: self.pushed.last_heartbeat(job_id, attempt) is not None)
        self.services = self._services(config, metrics, model_store, dataset_store)
        self.service = self.services.jobs  # the job use cases, as tests and tools drive them
        self.runs = self.services.runs
        self.models = self.services.models
        self.datasets = self.services.datasets
        servicers = UserServicers(self.services)
        self.grpc = GrpcServer(self.services, servicers, config.grpc_workers)
        self.http = self._http(servicers)
        self.port = 0
        self.http_port = 0

    def _tracker_for(self, db: Database) -> Tracker:
        """A tracker whose every write goes to `db`: the server's own, or a term's."""
        policy = ActivePolicy(self.policy, self.tracker_config.max_concurrent)
        return Tracker(
            jobs=JobStore(db), metrics=MetricStore(db, self.config.max_metric_points),
            datasets=DatasetStore(db),
            artifacts=ArtifactCollector(ModelStore(db), self.workspace.artifacts_dir),
            executors_by_kind=self.executors, pools=self.pools,
            policy=policy, scheduling=policy.scheduling,
            workspace=self.workspace, config=self.tracker_config, usage=UsageStore(db),
            half_life=self.fair_share_half_life, reported_exit=self.pushed.reported_exit,
            telemetry=self.metrics or NO_TELEMETRY,
        )

    def _begin_term(self, term: Term, fenced: Callable[[], None]) -> Tracker:
        self.tracker = self._tracker_for(FencedDatabase(self.db, self.lease, term, fenced))
        return self.tracker

    def _leading(self, leading: bool) -> None:
        if self.metrics is not None:
            self.metrics.leader.set(1 if leading else 0)

    def _tell_tracker(self, what: str) -> None:
        """A submit, a cancel or a reported exit: the tracker hears it here, or, on a
        standby, the leader's does, through the database."""
        if self.leadership is not None and not self.leadership.leading:
            if self.notices is not None:
                self.notices.send(what)
            return
        tracker = self.tracker
        if what == SUBMITTED:
            tracker.wake()
        elif what == CANCELLED:
            tracker.job_cancelled()
        else:
            tracker.attempt_reported_exit()

    def _heard(self, what: str) -> None:
        """Another server's word: acted on while this one leads."""
        if self.leadership is not None and self.leadership.leading:
            self._tell_tracker(what)

    def _http(self, servicers: UserServicers) -> HttpServer | None:
        """The HTTP API and dashboard over the same servicers and checks as gRPC."""
        if self.config.http_port is None:
            return None
        from trainyard import __version__
        from trainyard.web.api import Door
        from trainyard.web.app import create_app
        from trainyard.web.http_server import HttpServer

        door = Door(servicers.callers, servicers.by_service(), is_loopback(self.config.host))
        app = create_app(door, __version__)
        if self.metrics is not None:
            self.metrics.install(app, door, self.services.jobs, self.jobs.live_counts)
        # Streams end at their next look once told; what is left past this is cut.
        return HttpServer(app, tls_cert=self.config.tls_cert, tls_key=self.config.tls_key,
                          grace_s=2.0, before_stop=door.stopping.set)

    def _metrics(self) -> ServerMetrics | None:
        """The Prometheus series /metrics serves, fed by the store's and the tracker's
        telemetry; none for a server without HTTP."""
        if self.config.http_port is None:
            return None
        from trainyard.web.metrics import ServerMetrics

        metrics = ServerMetrics(lambda: self.policy.effective().policy.queues)
        self.db.telemetry = metrics
        return metrics

    def _backends(self, config: ServerConfig, docker: DockerConfig | None,
                  slurm: dict[str, SlurmPool], kubernetes: dict[str, KubernetesPool],
                  ca: bytes) -> dict[str, Backend]:
        data_dir = self.workspace.data_dir
        return build_backends(ExecutorSettings(
            state_dir=self.workspace.executor_dir, local_max_jobs=config.tracker.max_concurrent,
            local_gpu_ids=host_gpu_ids(), docker=docker, max_log_bytes=config.max_log_bytes,
            slurm=slurm_config(slurm, instance=instance_id(data_dir), tls_ca_pem=ca,
                               grace_s=config.tracker.cancel_grace),
            kubernetes=kubernetes_config(kubernetes, instance=instance_id(data_dir),
                                         tls_ca_pem=ca, grace_s=config.tracker.cancel_grace)))

    def _read_slurm_capacity(self, pools: dict[str, SlurmPool]) -> SlurmCapacity:
        """The Slurm pools' capacity from their controllers; a server whose controller does
        not answer does not start (a sentence naming the pool)."""
        executor = self.executors[JobKind.SLURM]
        assert isinstance(executor, SlurmExecutor)
        capacity = SlurmCapacity(executor, pools)
        try:
            capacity.read()
        except SlurmError as exc:
            raise RuntimeError(str(exc)) from None
        return capacity

    def _check_kubernetes(self, pools: dict[str, KubernetesPool]) -> KubernetesClusters:
        """Each Kubernetes pool's cluster serves what it creates (else the server does not
        start: a sentence naming the pool); its nodes give the capacity left out."""
        from trainyard.executors.kubernetes.executor import KubernetesExecutor

        executor = self.executors[JobKind.KUBERNETES]
        assert isinstance(executor, KubernetesExecutor)
        clusters = KubernetesClusters(executor, pools)
        clusters.check()
        return clusters

    def _complete_policy(self, policy: Policy) -> Policy:
        """The file's policy with what the clusters declare filled in."""
        if self.slurm_capacity is not None:
            policy = self.slurm_capacity.complete(policy)
        if self.kubernetes_clusters is not None:
            policy = self.kubernetes_clusters.complete(policy)
        return policy

    def _services(self, config: ServerConfig, metrics: MetricStore, model_store: ModelStore,
                  dataset_store: DatasetStore) -> Services:
        guard = Guard(config.share_team_jobs, on_denied=lambda who, action, target, why:
                      self.access.audit(who, action, target, False, why))
        registry = DatasetRegistry(dataset_store, self.workspace.datasets_dir,
                                   self.workspace.data_dir)
        algorithm_store = AlgorithmStore(self.db)
        check = SubmitCheck(self.policy, registry, guard, pressure=Backpressure(self.jobs),
                            algorithms=algorithm_store)
        jobs = JobService(self.jobs, metrics, model_store, self.workspace, self.policy, check,
                          guard, on_submit=lambda: self._tell_tracker(SUBMITTED),
                          on_cancel=lambda: self._tell_tracker(CANCELLED),
                          fair_share_usage=self.usage.load,
                          budget_use=BudgetUsageStore(self.db).used,
                          clock=lambda: self.tracker.now())
        run_store = RunStore(self.db)
        runs = RunService(self.jobs, run_store, model_store, self.workspace, guard, jobs)
        return Services(
            jobs=jobs,
            sweeps=SweepService(self.jobs, check,
                                on_submit=lambda: self._tell_tracker(SUBMITTED),
                                on_cancel=lambda: self._tell_tracker(CANCELLED)),
            runs=runs,
            models=ModelService(model_store, runs, dataset_store, guard,
                                self.workspace.artifacts_dir, algorithm_store),
            datasets=DatasetService(registry, run_store, model_store, guard),
            access=self.access,
            policy=self.policy,
            runtime=JobRuntimeService(
                JobGrants(JobTokenStore(self.db)), dataset_store, self.workspace,
                self.pushed, on_exit=lambda: self._tell_tracker(EXITED),
                notes=PreemptionNotes(self.db), clock=lambda: self.tracker.now()),
            history=HistoryService(HistoryStore(self.db), self.policy, guard),
            # Images are pinned by the engine the Docker pool runs on (or the local one).
            algorithms=AlgorithmService(
                algorithm_store, run_store, model_store, self.workspace, guard,
                engine_image_ids(config.docker.base_url if config.docker else "")),
            sample=SampleService(jobs, algorithm_store, dataset_store),
        )

    def fair_share_half_life(self) -> float:
        """Fair share's half-life under the policy in force, which a reload may change."""
        declared = self.policy.declared
        if declared is None:
            return self.config.tracker.fair_share_half_life
        return declared.fair_share_half_life_s

    def start(self) -> int:
        """Recover, start the tracker, then serve. Returns the bound port."""
        warn_if_armed()
        self.db.claim_exclusive()
        refusal = self.tracker.missing_executors() or self._exposure()
        if refusal is not None:
            for executor in self.executors.values():
                executor.close()
            self.db.close()
            raise RuntimeError(refusal)
        address = f"{self.config.host}:{self.config.port}"
        self.port = self.grpc.bind(address, self._tls())
        if self.port == 0:
            raise OSError(f"cannot listen on {address}")
        if self.http is not None:
            try:
                self.http_port = self.http.bind(self.config.host, self.config.http_port or 0)
            except OSError:
                self.grpc.stop(0)
                for executor in self.executors.values():
                    executor.close()
                self.db.close()
                raise
        self._serve_remote_jobs()
        self._start_tracking()
        self.grpc.start()
        if self.http is not None:
            try:
                self.http.start()
            except RuntimeError:  # uvicorn refused its TLS pair, say: nothing left running
                self.stop(grace=0)
                raise
        log.info("serving on %s:%d, data in %s", self.config.host, self.port,
                 self.workspace.data_dir)
        return self.port

    def _start_tracking(self) -> None:
        """SQLite: this server alone tracks (its claim is exclusive). PostgreSQL: the one
        holding the lease does; the others serve as standbys, ready to take over."""
        if self.leadership is None:
            self.tracker.start()
            self._leading(True)
            log.info("leader: the only server of this database")
            return
        assert self.notices is not None
        self.notices.start(self._heard)
        self.leadership.start()
        if not self.leadership.leading:
            log.info("standby: another server holds the leader lease and runs the tracker; "
                     "this one serves the APIs and takes over if that one stops")

    def _serve_remote_jobs(self) -> None:
        """Tell the remote executors where their jobs reach this server, and keep the Slurm
        pools' capacity as the controllers declare it."""
        # Bound to every address: the nodes reach it by this host's name.
        host = socket.getfqdn() if self.config.host in ("0.0.0.0", "::", "") else \
            self.config.host
        executor = self.executors.get(JobKind.SLURM)
        if isinstance(executor, SlurmExecutor):
            executor.reach_service_at(f"{host}:{self.port}")
        if self.kubernetes_clusters is not None:
            self.kubernetes_clusters.executor.reach_service_at(f"{host}:{self.port}")
        if self.slurm_capacity is not None:
            self.slurm_capacity.refresh_every(REFRESH_S, self.policy.recomplete)

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

    def reload_policy(self) -> None:
        """Read the policy file again (SIGHUP); on a problem, log it and keep the policy in
        force."""
        from trainyard.services.policy_file import PolicyError

        try:
            self.policy.reload()
        except PolicyError as exc:
            logging.getLogger("trainyard.policy").error(
                "policy not reloaded; the one in force stays:\n%s", exc)
        except Exception:  # a reload must never take the server down
            logging.getLogger("trainyard.policy").exception(
                "policy not reloaded; the one in force stays")

    def stop(self, grace: float = 2.0) -> None:
        if self.slurm_capacity is not None:
            self.slurm_capacity.close()
        if self.http is not None:
            self.http.stop()
        self.grpc.stop(grace)
        if self.leadership is None:
            self.tracker.stop()
        else:
            self.leadership.stop()
            if self.notices is not None:
                self.notices.stop()
        for executor in self.executors.values():
            executor.close()
        self.db.close()

    def wait(self) -> None:
        self.grpc.wait()
