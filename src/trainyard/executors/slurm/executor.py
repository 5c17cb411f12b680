"""Jobs as Slurm batch jobs, through the Slurm commands on the service's host. Trainyard
decides when a job starts; Slurm decides where.

The handle is the Slurm job name, and the comment `trainyard:<instance>` says which service
owns it, so a restarted service finds its jobs by name and leaves others' alone."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from trainyard.domain.kinds import JobKind
from trainyard.domain.pools import SlurmPool
from trainyard.executors.base import (
    EngineAway,
    LaunchError,
    LaunchRequest,
    Observation,
    Phase,
    pool_of,
)
from trainyard.executors.runtime_bundle import runtime_bundle
from trainyard.executors.slurm.commands import (
    ControllerAway,
    SlurmCommands,
    SlurmError,
    never_reached,
)
from trainyard.executors.slurm.environment import command_env, job_env
from trainyard.executors.slurm.jobs import SlurmJob, killed_by_signal, observe
from trainyard.executors.slurm.reconcile import Reconciler, Snapshot
from trainyard.executors.slurm.script import (
    Agent,
    ScriptSpec,
    Shipped,
    batch_script,
    comment_for,
)

log = logging.getLogger(__name__)

AWAY = "the Slurm controller does not answer: {}"
FORGOTTEN_NO_ACCOUNTING = "the controller no longer knows it and accounting is not configured"
FORGOTTEN = "neither the controller nor accounting knows it any more"


@dataclass(frozen=True)
class SlurmConfig:
    instance: str  # this service's id: the comment of every job it submits
    pools: Mapping[str, SlurmPool]  # by pool name; LaunchRequest.pool picks one
    env: Mapping[str, str] = field(default_factory=dict)  # for the commands: SLURM_CONF
    # Where the job runtime's agent reaches the service (host:port), unless a pool says;
    # with `agent` False each task runs the command alone (nothing is pushed).
    service_address: str = ""
    agent: bool = True
    tls_ca_pem: bytes = b""  # the service's certificate, when it serves TLS
    grace_s: float = 10.0  # a stopped job's time to checkpoint, unless a pool says
    reconcile_interval_s: float = 0.5
    command_timeout_s: float = 30.0
    # A job killed by a signal may have lost its node: the controller is given this long to
    # mark a node of its allocation down (a lost attempt) before the kill counts as its end.
    node_verdict_s: float = 20.0
    # How long a Slurm job may outlive the end of its attempt in Trainyard before it is
    # cancelled (the runtime reported the end; srun should follow within moments).
    linger_s: float = 30.0
    # A job submitted this recently may not be in the controller's answer yet.
    recent_s: float = 30.0


class SlurmExecutor:
    name = JobKind.SLURM
    remote = True
    started_by_launch = False  # sbatch queues it; the reconcile sees it start on a node
    ends_with_host = False

    def __init__(self, config: SlurmConfig, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.config = config
        self.clock = clock
        self.commands = SlurmCommands(command_env(config.env), config.command_timeout_s)
        self.comment = comment_for(config.instance)
        self.reconciler = Reconciler(self.commands, self.comment, config.reconcile_interval_s,
                                     clock)
        self._lock = threading.Lock()
        self._ids: dict[str, str] = {}  # handle -> Slurm job id, as far as known
        self._launched: dict[str, float] = {}  # handle -> when this process submitted it
        self._cancelled: set[str] = set()  # handles Trainyard asked Slurm to cancel
        self._timers: dict[str, threading.Timer] = {}
        self._adopted: set[str] = set()  # handles a restarted service asked after
        self._killed: dict[str, float] = {}  # handle -> when first seen killed by a signal
        self._absent: tuple[float, dict[str, Observation]] = (float("-inf"), {})
        self._started_at = clock()  # an adopt's first look is taken after this
        self._service_address = config.service_address

    def reach_service_at(self, address: str) -> None:
        """Where jobs reach the service, once it is bound (its port may be chosen then)."""
        self._service_address = address

    @property
    def calls(self) -> int:
        """The controller calls made so far (every Slurm command)."""
        return self.commands.calls

    def handle_for(self, job_id: str, attempt: int) -> str:
        return f"trainyard-{job_id}-{attempt}"

    def set_exit_listener(self, listener: Callable[[str], None]) -> None:
        self.reconciler.set_listener(listener)

    def close(self) -> None:
        self.reconciler.close()
        with self._lock:
            timers = list(self._timers.values())
        for timer in timers:
            timer.cancel()

    def unavailable(self) -> str | None:
        away = self.reconciler.snapshot().away
        return AWAY.format(away) if away is not None else None

    # -- launch --------------------------------------------------------------------------

    def pool_of(self, request: LaunchRequest) -> SlurmPool:
        return pool_of(self.config.pools, request, "Slurm")

    def script_for(self, request: LaunchRequest) -> str:
        """The batch script of an attempt (sbatch reads it on standard input)."""
        pool = self.pool_of(request)
        # Slurm opens the batch step's output before the script runs: a directory that is
        # there on every node (the job's own output reaches the service through the agent).
        output = str(request.files.log) if pool.staging == "shared" else \
            "/tmp/trainyard-%x.out"
        spec = ScriptSpec(handle=request.handle, instance=self.config.instance,
                          command=request.command, workers=request.workers,
                          cpus=request.resources.cpus, memory_mb=request.resources.memory_mb,
                          gpus=request.resources.gpus, output=output,
                          runtime=self._runtime(), agent=self._agent(pool, request))
        return batch_script(spec, pool)

    def _agent(self, pool: SlurmPool, request: LaunchRequest) -> Agent | None:
        config = self.config
        if not config.agent:
            return None
        address = pool.service_address or self._service_address
        if not address:
            raise LaunchError("the Slurm pool has no service_address for its jobs to reach "
                              "this service at")
        ca = Shipped(f"trainyard-ca-{hashlib.sha256(config.tls_ca_pem).hexdigest()[:12]}.pem",
                     config.tls_ca_pem) if config.tls_ca_pem else None
        grace = pool.grace_s if pool.grace_s is not None else config.grace_s
        return Agent(address, grace, request.framework, ca)

    def _runtime(self) -> Shipped:
        bundle = runtime_bundle()  # built once per process
        return Shipped(bundle.name, bundle.data)

    def launch(self, request: LaunchRequest) -> None:
        if not request.runs_as_command:
            raise LaunchError("the Slurm executor runs commands, not container images")
        pool = self.pool_of(request)
        with self._lock:
            earlier = self._launched.get(request.handle)
        # After a submit that may have gone through, only a look taken since can say it did not.
        snap = self.reconciler.snapshot(fresher_than=earlier)
        if snap.away is not None:
            raise EngineAway(AWAY.format(snap.away))
        if request.handle in snap.jobs or request.handle in self._ids:
            raise LaunchError(f"a Slurm job named {request.handle} already exists")
        script = self.script_for(request)
        if pool.staging == "shared":
            request.files.log.parent.mkdir(parents=True, exist_ok=True)
        env = job_env(request, pool, self.commands.env)
        submitted = self.clock()
        try:
            out = self.commands.run(["sbatch", "--parsable"], stdin=script, env=env)
        except ControllerAway as exc:
            if never_reached(exc):
                raise EngineAway(AWAY.format(exc)) from exc
            # It timed out: the controller may hold the job all the same. Watched for by
            # name, as a launch not yet confirmed, so it is neither lost nor sent twice.
            log.warning("sbatch of %s did not answer (%s); looking for it by name",
                        request.handle, exc)
            with self._lock:
                self._launched[request.handle] = submitted
            self.reconciler.watch()
            return None
        except SlurmError as exc:
            raise LaunchError(f"sbatch refused the job: {exc}") from exc
        job_id = out.strip().split(";")[0]
        with self._lock:
            self._ids[request.handle] = job_id
            self._launched[request.handle] = submitted
        self.reconciler.watch()
        return None

    # -- following -----------------------------------------------------------------------

    def poll(self, handle: str) -> Observation:
        return self._observe(handle, self.reconciler.snapshot())

    def adopt(self, handle: str) -> Observation:
        """After a restart: the first look is a fresh one."""
        with self._lock:
            self._adopted.add(handle)
        self.reconciler.watch()
        return self._observe(handle, self.reconciler.snapshot(fresher_than=self._started_at))

    def _observe(self, handle: str, snap: Snapshot) -> Observation:
        if snap.away is not None:
            return Observation(Phase.UNKNOWN, message=AWAY.format(snap.away))
        job = snap.jobs.get(handle)
        if job is not None:
            with self._lock:
                self._ids[handle] = job.job_id
                killed = self._killed.setdefault(handle, self.clock()) \
                    if killed_by_signal(job) else None
            if killed is not None and not set(job.nodes) & snap.failed_nodes and \
                    self.clock() - killed < self.config.node_verdict_s:
                return Observation(Phase.RUNNING)  # not yet: its node may be failing
            return observe(job, cancelled_by_us=handle in self._cancelled,
                           failed_nodes=snap.failed_nodes)
        launched = self._launched.get(handle)
        if launched is not None and (launched >= snap.taken_at or
                                     self.clock() - launched < self.config.recent_s):
            return Observation(Phase.STARTING)
        if launched is not None and handle not in self._ids:
            # An unconfirmed submit that a look long after it does not show: never created.
            with self._lock:
                self._launched.pop(handle, None)
            return Observation(Phase.NOT_FOUND)
        return self._forgotten(snap).get(handle) or Observation(Phase.NOT_FOUND)

    def _forgotten(self, snap: Snapshot) -> dict[str, Observation]:
        """What accounting says of the handles the controller no longer lists: one sacct
        call per look, for all of them."""
        taken, found = self._absent
        if taken == snap.taken_at:
            return found
        with self._lock:
            known = set(self._ids) | set(self._launched) | self._adopted
        absent = sorted(h for h in known if h not in snap.jobs)
        found = {}
        if absent:
            found = self._accounting(absent)
        self._absent = (snap.taken_at, found)
        return found

    def _accounting(self, handles: Sequence[str]) -> dict[str, Observation]:
        try:
            out = self.commands.run(["sacct", "--noheader", "--parsable2", "--allocations",
                                     f"--name={','.join(handles)}", "--starttime=now-30days",
                                     "--format=JobName,JobID,State,ExitCode"])
        except ControllerAway:
            return {}
        except SlurmError as exc:
            lost = Observation(Phase.LOST, message=FORGOTTEN_NO_ACCOUNTING)
            log.info("sacct: %s", exc)
            return {h: lost for h in handles}
        rows: dict[str, SlurmJob] = {}
        for line in out.splitlines():
            parts = line.split("|")
            if len(parts) < 4 or parts[0] not in handles:
                continue
            state = parts[2].split()[0] if parts[2] else ""
            code, _, sig = parts[3].partition(":")
            exit_code = 128 + int(sig) if sig.isdigit() and int(sig) else \
                (int(code) if code.isdigit() else None)
            rows[parts[0]] = SlurmJob(parts[1], parts[0], state, "", exit_code, self.comment,
                                      (), "")
        found = {h: observe(job, cancelled_by_us=h in self._cancelled)
                 for h, job in rows.items()}
        for handle in handles:
            if handle not in found and handle in self._ids:
                found[handle] = Observation(Phase.LOST, message=FORGOTTEN)
        return found

    # -- stopping ------------------------------------------------------------------------

    def cancel(self, handle: str, grace_seconds: float) -> bool:
        snap = self.reconciler.snapshot()
        if snap.away is not None:
            return False
        job = snap.jobs.get(handle)
        job_id = job.job_id if job is not None else self._ids.get(handle)
        if job_id is None:
            return True  # nothing under this name: nothing to stop
        if job is not None and job.ended:
            return True
        with self._lock:
            if handle in self._cancelled:
                return True
            self._cancelled.add(handle)
        try:
            if job is None or job.state in ("PENDING", "CONFIGURING"):
                self.commands.run(["scancel", job_id])  # nothing of it runs yet
                return True
            # Every task's step, not the batch step: the batch step's srun must live on to
            # see its tasks end (with --full it dies first, and the job with it).
            self.commands.run(["scancel", "--signal=TERM", job_id])
        except SlurmError as exc:
            with self._lock:
                self._cancelled.discard(handle)
            log.warning("cancelling %s: %s", handle, exc)
            return False
        timer = threading.Timer(grace_seconds, self._force, (handle, job_id))
        timer.daemon = True
        with self._lock:
            self._timers[handle] = timer
        timer.start()
        return True

    def _force(self, handle: str, job_id: str) -> None:
        """After the grace period: end the job. Slurm treats any SIGKILL it is asked for as
        ending the job, and ends one by TERM and, the cluster's KillWait later, KILL."""
        try:
            self.commands.run(["scancel", job_id])
        except SlurmError as exc:
            log.info("forcing %s: %s", handle, exc)  # ended meanwhile, most often
        with self._lock:
            self._timers.pop(handle, None)

    def release(self, handle: str) -> None:
        with self._lock:
            self._launched.pop(handle, None)
            job_id = self._ids.pop(handle, None)
            self._cancelled.discard(handle)
            self._adopted.discard(handle)
            self._killed.pop(handle, None)
        if job_id is not None:
            # Final in Trainyard (its runtime reported its end, say): a Slurm job that still
            # holds its allocation a while later is ended, rather than left to hold it.
            timer = threading.Timer(self.config.linger_s, self._end_lingering,
                                    (handle, job_id))
            timer.daemon = True
            with self._lock:
                self._timers[f"linger:{handle}"] = timer
            timer.start()

    def _end_lingering(self, handle: str, job_id: str) -> None:
        with self._lock:
            self._timers.pop(f"linger:{handle}", None)
        job = self.reconciler.snapshot().jobs.get(handle)
        if job is None or job.job_id != job_id or job.ended:
            return
        log.warning("Slurm job %s (%s) outlived its attempt; cancelling it", job_id, handle)
        try:
            self.commands.run(["scancel", job_id])
        except SlurmError as exc:
            log.info("cancelling %s: %s", handle, exc)

    def sweep(self, active: set[str]) -> list[str]:
        snap = self.reconciler.snapshot(fresher_than=self._started_at)
        if snap.away is not None:
            return []
        removed = []
        for handle, job in sorted(snap.jobs.items()):
            if handle in active or job.ended:
                continue
            try:
                self.commands.run(["scancel", job.job_id])
            except SlurmError as exc:
                log.warning("could not cancel orphan Slurm job %s: %s", job.job_id, exc)
                continue
            removed.append(f"cancelled Slurm job {job.job_id} ({handle}), which belongs to no "
                           "active job")
        return removed
