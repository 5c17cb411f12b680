"""Containers on a local Docker engine: one per attempt, named and labelled so that a
restarted service finds its own, isolated and limited by the job's resources.

What happens to a container is learnt from the engine's event stream; `inspect` is the
fallback whenever the stream cannot vouch for a container (not yet seen, stream broken).
Each container's output is copied into the attempt's log file while it runs, so the log
outlives the container."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.transport.unixconn import UnixHTTPConnection
from docker.types import DeviceRequest, LogConfig, Mount

from trainyard.domain.log_cap import DEFAULT_MAX_LOG_BYTES
from trainyard.domain.spec import total_resources
from trainyard.executors.base import (
    KILLED_CODE,
    LAUNCHER,
    LaunchError,
    LaunchRequest,
    Observation,
    Phase,
    describe_exit,
    describe_forced_kill,
    gang_command,
    notice_env,
)
from trainyard.executors.docker_events import EngineEvents
from trainyard.executors.docker_logs import ENGINE_ERRORS, LogCopier

log = logging.getLogger(__name__)

# Where a container sees the attempt's files.
DATA_MOUNT = "/trainyard/data"
MODEL_MOUNT = "/trainyard/model"
CHECKPOINT_MOUNT = "/trainyard/checkpoint"
WORK_MOUNT = "/trainyard/work"
METRICS_MOUNT = "/trainyard/metrics.jsonl"
# The service's own gang launcher, for multi-worker jobs; run by the image's python3.
LAUNCHER_MOUNT = "/trainyard/launcher.py"
CODE_MOUNT = "/code"  # a registered algorithm's code directory, read-only: CODE_PATH

LABEL_JOB = "org.trainyard.job"
LABEL_ATTEMPT = "org.trainyard.attempt"
LABEL_INSTANCE = "org.trainyard.instance"
LABEL_LOG = "org.trainyard.log"  # host path of the attempt's log, for re-adoption

NOBODY = "65534:65534"
API_VERSION = "1.41"  # Docker Engine 20.10 and later; fixed, so no probe at start
LOG_LOCK_WAIT = 10.0  # how long a release waits for a container's output to be copied
DRAIN_WAIT = 0.5  # how long a poll of an ended container waits for its output, at most
LOG_DRAIN_LIMIT = 60.0  # past this after its end, a job is finished with the output it has
UNROTATED = "1024g"  # the engine's log is never rotated, so it can be replayed whole


@dataclass(frozen=True)
class DockerConfig:
    """The Docker pool: its capacity, and how containers are run."""

    instance: str  # labels this service's containers apart from any other's
    cpus: float
    memory_mb: int
    max_containers: int = 8
    gpu_ids: tuple[str, ...] = ()
    user: str = ""  # uid:gid inside the container; empty: the service's own, or nobody for root
    pids_limit: int = 4096
    engine_grace: float = 60.0  # how long an unreachable engine is waited for
    base_url: str = ""  # empty: DOCKER_HOST or the local socket
    api_timeout: float = 30.0


class DockerExecutor:
    name = "docker"
    remote = False  # its jobs see this host's files
    started_by_launch = True
    ends_with_host = False  # its engine may run elsewhere (DOCKER_HOST), or restart them

    def __init__(self, config: DockerConfig, max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
                 ) -> None:
        self.config = config
        self.user = config.user or _default_user()
        kwargs = engine_address(config.base_url)
        self._api = _client(timeout=config.api_timeout, **kwargs)
        # Streams (events, logs) may be quiet for hours: no read timeout.
        self._streams = streams = _client(timeout=None, max_pool_size=256, **kwargs)
        self._listener: Callable[[str], None] = lambda handle: None
        self._lock = threading.Lock()
        self._timers: dict[str, threading.Timer] = {}  # forced kills after a cancel's grace
        self._forced: dict[str, float] = {}  # handle -> the grace it outlived before its KILL
        self._unremoved: set[str] = set()  # final, but the engine was away to remove them
        self._unreachable_since: float | None = None
        self._logs = LogCopier(self._api, streams, max_log_bytes)
        self._events = EngineEvents(streams, f"{LABEL_INSTANCE}={config.instance}",
                                    on_end=lambda handle: self._listener(handle),
                                    on_connect=self._engine_back)
        self._events.start()

    def close(self) -> None:
        """Stop following the engine and let go of its connections. Containers run on; a
        service that starts again adopts them. A forced kill still due after a cancel's
        grace is still sent (its client connects again)."""
        self._events.close()
        self._logs.close()
        self._api.close()
        self._streams.close()

    def set_exit_listener(self, listener: Callable[[str], None]) -> None:
        self._listener = listener

    def handle_for(self, job_id: str, attempt: int) -> str:
        return f"trainyard-{job_id}-{attempt}"

    def unavailable(self) -> str | None:
        if self._events.connected:
            return None
        return "the Docker engine is unreachable; jobs start once it answers again"

    # --- launch --------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> str:
        """Create and start the container from the image's id, resolved first: the run
        records exactly what ran, even if the tag moves meanwhile. Returns that id."""
        if request.workers > 1 and not request.command.strip():
            raise LaunchError("a multi-worker container job needs a command")
        self._give_to_user(request)
        token = self._events.token()
        try:
            image_id = str(self._api.inspect_image(request.image)["Id"])
            container = self._api.create_container(**self._create_args(request, image_id))
        except docker.errors.ImageNotFound as exc:
            raise LaunchError(f"image {request.image!r} is not in the local Docker engine; "
                              "build it with 'trainyard images build DIR --tag "
                              f"{request.image}'") from exc
        except docker.errors.APIError as exc:
            raise LaunchError(f"the Docker engine refused the container: "
                              f"{_explain(exc)}") from exc
        except ENGINE_ERRORS as exc:
            self._abandon(request.handle)  # a timed-out create may still have made it
            raise LaunchError(f"the Docker engine is unreachable: {exc}") from exc
        try:
            self._api.start(container["Id"])
        except ENGINE_ERRORS as exc:
            self._abandon(request.handle)  # never leave it behind: a retry must not find it
            raise LaunchError(f"the container did not start: {_explain(exc)}") from exc
        self._events.vouch(request.handle, token)
        self._logs.follow(request.handle, request.files.log)
        return image_id

    def _create_args(self, request: LaunchRequest, image_id: str) -> dict[str, Any]:
        """The container, as the engine's create call takes it."""
        files = request.files
        env = request.contract(data=DATA_MOUNT, model=MODEL_MOUNT, metrics=METRICS_MOUNT,
                               checkpoint=CHECKPOINT_MOUNT,
                               code=CODE_MOUNT if files.code is not None else "")
        env["HOME"] = WORK_MOUNT
        env.update(notice_env(WORK_MOUNT))
        if not request.gpu_ids:
            # None for a job that asked for none, even where the engine's default runtime or
            # the image would expose every GPU.
            env["CUDA_VISIBLE_DEVICES"] = ""
            env["NVIDIA_VISIBLE_DEVICES"] = "void"
        mounts = [
            Mount(DATA_MOUNT, str(files.data), type="bind", read_only=True),
            Mount(MODEL_MOUNT, str(files.model), type="bind"),
            Mount(CHECKPOINT_MOUNT, str(files.checkpoint), type="bind"),
            Mount(WORK_MOUNT, str(files.workdir), type="bind"),
            Mount(METRICS_MOUNT, str(files.metrics), type="bind"),
        ]
        if files.code is not None:
            mounts.append(Mount(CODE_MOUNT, str(files.code), type="bind", read_only=True))
        # SIGUSR1, a preemption's notice, is ignored by the shell and so by what it starts,
        # unless a program sets a handler for it: a shell that does not exec its last
        # command must not die of it (domain.notice).
        command = ["/bin/sh", "-c", f"{IGNORE_NOTICE}{request.command}"] \
            if request.command.strip() else None
        if request.workers > 1:
            # One container holds every worker; they meet on its own loopback. Inside it the
            # engine numbers the allocated devices from 0, and so does each worker's share.
            mounts.append(Mount(LAUNCHER_MOUNT, str(LAUNCHER), type="bind", read_only=True))
            command = gang_command("python3", LAUNCHER_MOUNT, request.workers,
                                   [str(i) for i in range(len(request.gpu_ids))],
                                   request.command, forward_signals=True,
                                   framework=request.framework)
        total = total_resources(request.resources, request.workers)  # limits hold the gang
        memory = total.memory_mb * 1024 * 1024
        devices = [DeviceRequest(driver="nvidia", device_ids=list(request.gpu_ids),
                                 capabilities=[["gpu"]])] if request.gpu_ids else []
        host_config = self._api.create_host_config(
            mounts=mounts,
            network_mode="none",
            nano_cpus=int(total.cpus * 1e9),
            mem_limit=memory,
            memswap_limit=memory,  # no swap: the limit is the limit
            pids_limit=self.config.pids_limit,
            device_requests=devices,
            init=True,  # a real PID 1 passes TERM on and reaps orphans
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            privileged=False,
            # Kept until removal and never rotated, so the whole output can be re-read.
            log_config=LogConfig(type="json-file", config={"max-size": UNROTATED}),
        )
        labels = {LABEL_JOB: request.job_id, LABEL_ATTEMPT: str(request.attempt),
                  LABEL_INSTANCE: self.config.instance, LABEL_LOG: str(files.log)}
        return {
            "image": image_id,
            "name": request.handle,
            "command": command,
            "environment": env,
            "labels": labels,
            "user": self.user,
            "host_config": host_config,
            "stdin_open": False,
            "tty": False,
            # A code directory is the job's working directory; else the image's own.
            **({"working_dir": CODE_MOUNT} if files.code is not None else {}),
        }

    def _give_to_user(self, request: LaunchRequest) -> None:
        """The job runs as a non-root user: the directories it writes must be its own."""
        if os.geteuid() != 0:
            return  # the container runs as the service's own user, who owns them already
        uid, gid = (int(part) for part in self.user.split(":"))
        files = request.files
        for path in (files.model, files.checkpoint, files.workdir, files.metrics):
            os.chown(path, uid, gid)

    # --- observe -------------------------------------------------------------------------

    def poll(self, handle: str) -> Observation:
        if self._events.vouches_for(handle):
            return Observation(Phase.RUNNING)
        return self._inspect(handle)

    def adopt(self, handle: str) -> Observation:
        return self._inspect(handle, adopting=True)

    def _inspect(self, handle: str, adopting: bool = False) -> Observation:
        token = self._events.token()
        try:
            attrs = self._api.inspect_container(handle)
        except docker.errors.NotFound:
            return Observation(Phase.NOT_FOUND, message="the container is gone: it was removed "
                               "outside Trainyard")
        except ENGINE_ERRORS as exc:
            return self._engine_away(exc)
        self._unreachable_since = None
        if self._unremoved:
            self._remove_leftovers()
        log_path = _log_path(attrs)
        if not self._ours(attrs) or log_path is None:
            return Observation(Phase.LOST, message=f"container {handle} is not one this "
                               "service launched")
        status = attrs["State"]["Status"]
        if status == "created":
            if not adopting:
                return Observation(Phase.STARTING)
            # Created but never started: the service stopped in between. Nothing ran.
            try:
                self._api.start(handle)
            except ENGINE_ERRORS as exc:
                return Observation(Phase.LOST, message=f"the container did not start: "
                                   f"{_explain(exc)}")
            self._logs.follow(handle, log_path)
            return Observation(Phase.RUNNING)
        if status in ("running", "paused", "restarting"):
            self._events.vouch(handle, token)
            self._logs.follow(handle, log_path)  # if none follows it yet (after a restart)
            return Observation(Phase.RUNNING)
        return self._exited(handle, attrs, log_path)

    def _exited(self, handle: str, attrs: dict[str, Any], log_path: Path) -> Observation:
        state = attrs["State"]
        if not self._logs.drain(handle, log_path, wait=DRAIN_WAIT) and \
                _seconds_since(state.get("FinishedAt", "")) < LOG_DRAIN_LIMIT:
            return Observation(Phase.UNKNOWN, message="copying the rest of its output")
        code = int(state.get("ExitCode", -1))
        if state.get("OOMKilled") and code != 0:
            limit = _format_mib(attrs["HostConfig"].get("Memory", 0) // (1024 * 1024))
            return Observation(Phase.EXITED, exit_code=code,
                               message=f"killed: out of memory (limit {limit}), exit code {code}")
        if state.get("Error"):
            return Observation(Phase.EXITED, exit_code=code,
                               message=f"{describe_exit(code)}: {state['Error']}")
        with self._lock:
            forced = self._forced.get(handle)
        if code == KILLED_CODE and forced is not None:
            return Observation(Phase.EXITED, exit_code=code,
                               message=describe_forced_kill(forced))
        if code != 0 and self._events.interrupted(handle):
            return Observation(Phase.EXITED, exit_code=code, message=f"{describe_exit(code)}; "
                               "the Docker engine stopped or restarted while it ran",
                               retry=True)
        return Observation(Phase.EXITED, exit_code=code)

    def _engine_away(self, exc: BaseException) -> Observation:
        now = time.monotonic()
        if self._unreachable_since is None:
            self._unreachable_since = now
        waited = now - self._unreachable_since
        if waited < self.config.engine_grace:
            return Observation(Phase.UNKNOWN, message=f"the Docker engine is unreachable: {exc}")
        return Observation(Phase.LOST, may_still_run=True,
                           message=f"the Docker engine has been unreachable for "
                           f"{waited:.0f} s ({exc})")

    def _ours(self, attrs: dict[str, Any]) -> bool:
        labels = attrs["Config"].get("Labels") or {}
        return labels.get(LABEL_INSTANCE) == self.config.instance

    # --- stop and clean up ---------------------------------------------------------------

    def cancel(self, handle: str, grace_seconds: float) -> bool:
        sent = self._send(handle, lambda: self._api.kill(handle, signal="SIGTERM"),
                          abandon=True)
        if sent is not None:
            return sent
        timer = threading.Timer(grace_seconds, self._force_kill, args=(handle, grace_seconds))
        timer.daemon = True
        with self._lock:
            self._timers[handle] = timer
        timer.start()
        return True

    def send_signal(self, handle: str, signum: int) -> bool:
        """Every process of the container but its init gets `signum`, by `kill -s SIG -- -1`
        run inside it: the init passes a signal on to its child alone, the job's shell,
        which ignores a preemption's SIGUSR1 (IGNORE_NOTICE)."""
        name = signal.Signals(signum).name.removeprefix("SIG")

        def kill_all() -> None:
            run = self._api.exec_create(handle, ["/bin/sh", "-c", f"kill -s {name} -- -1"])
            self._api.exec_start(run["Id"])

        sent = self._send(handle, kill_all, abandon=False)
        return True if sent is None else sent

    def _send(self, handle: str, send: Callable[[], object], *, abandon: bool
              ) -> bool | None:
        """Signal the container by `send` if it runs: None once sent; else whether that is
        settled (True: nothing to signal; False: ask again, once it runs or the engine
        answers). `abandon`: a container created and never started is removed."""
        try:
            attrs = self._api.inspect_container(handle)
        except docker.errors.NotFound:
            return True  # nothing to signal
        except ENGINE_ERRORS:
            return False  # ask again once the engine answers
        if not self._ours(attrs):
            return True  # not ours to signal
        status = attrs["State"]["Status"]
        if status == "created":
            if not abandon:
                return False  # not running yet
            self._abandon(handle)
            return True
        if status not in ("running", "paused", "restarting"):
            return True
        try:
            send()
        except docker.errors.APIError:
            return True  # it ended meanwhile
        except ENGINE_ERRORS:
            return False
        return None

    def _force_kill(self, handle: str, grace_seconds: float) -> None:
        with self._lock:
            self._forced[handle] = grace_seconds
        with contextlib.suppress(*ENGINE_ERRORS):
            self._api.kill(handle, signal="SIGKILL")

    def release(self, handle: str) -> None:
        """The job is final: stop what still runs, keep its whole output, remove it."""
        with self._lock:
            timer = self._timers.pop(handle, None)
            self._forced.pop(handle, None)
        if timer is not None:
            timer.cancel()
        try:
            attrs = self._api.inspect_container(handle)
            if self._ours(attrs):
                if attrs["State"]["Running"]:
                    self._kill_running(handle)
                log_path = _log_path(attrs)
                if log_path is not None:
                    self._logs.drain(handle, log_path, wait=LOG_LOCK_WAIT)
                self._api.remove_container(handle, force=True)
        except docker.errors.NotFound:
            pass
        except ENGINE_ERRORS as exc:
            log.warning("could not remove container %s yet: %s", handle, exc)
            with self._lock:
                self._unremoved.add(handle)  # retried once the engine answers again
            return
        self._events.forget(handle)
        self._logs.forget(handle)

    def _kill_running(self, handle: str) -> None:
        """KILL a container seen running; one that ended since (the engine's 409, "is not
        running") needs none, and its removal goes on."""
        try:
            self._api.kill(handle, signal="SIGKILL")
        except docker.errors.APIError as exc:
            if exc.status_code != HTTPStatus.CONFLICT:
                raise

    def _abandon(self, handle: str) -> None:
        """Remove a container that must not run, or remember to."""
        try:
            self._api.remove_container(handle, force=True)
        except docker.errors.NotFound:
            pass
        except ENGINE_ERRORS:
            with self._lock:
                self._unremoved.add(handle)

    def _remove_leftovers(self) -> None:
        with self._lock:
            leftovers, self._unremoved = self._unremoved, set()
        for handle in leftovers:
            self.release(handle)

    def _engine_back(self) -> None:
        self._remove_leftovers()
        self._listener("")  # waiting containers may start now

    def sweep(self, active: set[str]) -> list[str]:
        try:
            found = self._api.containers(
                all=True, filters={"label": f"{LABEL_INSTANCE}={self.config.instance}"})
        except ENGINE_ERRORS as exc:
            return [f"could not list containers to sweep: {exc}"]
        removed = []
        for summary in found:
            name = summary["Names"][0].lstrip("/") if summary.get("Names") else summary["Id"]
            if name in active:
                continue
            self.release(name)  # keeps its output in its job's log, then removes it
            labels = summary.get("Labels") or {}
            removed.append(f"removed container {name} ({summary.get('State', '?')}) of job "
                           f"{labels.get(LABEL_JOB, '?')}: it belongs to no active job")
        return removed


IGNORE_NOTICE = "trap '' USR1\n"


def _connect_closing_on_failure(self: UnixHTTPConnection) -> None:
    """The SDK's own connect leaves its socket to the garbage collector when the engine's
    socket is absent or refuses, which happens on every try while an engine restarts."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(self.timeout)
        sock.connect(self.unix_socket)
    except BaseException:
        sock.close()
        raise
    self.sock = sock


UnixHTTPConnection.connect = _connect_closing_on_failure  # type: ignore[method-assign]


def engine_address(base_url: str) -> dict[str, Any]:
    """How to reach the engine at base_url; empty: the one DOCKER_HOST names (with its TLS
    settings), else the local socket, as the docker command finds it. Settings the SDK
    refuses raise its error with a sentence naming them."""
    if base_url:
        return {"base_url": base_url}
    try:
        return docker.utils.kwargs_from_env()
    except docker.errors.DockerException as exc:
        raise docker.errors.DockerException(
            "the Docker engine's settings in this environment (DOCKER_HOST, DOCKER_TLS_VERIFY, "
            f"DOCKER_CERT_PATH) cannot be used: {exc}") from None


def _client(timeout: float | None, max_pool_size: int = 10, **kwargs: Any) -> docker.APIClient:
    return docker.APIClient(timeout=timeout, version=API_VERSION,
                            max_pool_size=max_pool_size, **kwargs)


def _default_user() -> str:
    uid = os.geteuid()
    return NOBODY if uid == 0 else f"{uid}:{os.getegid()}"


def _explain(exc: BaseException) -> str:
    if isinstance(exc, docker.errors.APIError):
        return str(exc.explanation or exc)
    return str(exc)


def _log_path(attrs: dict[str, Any]) -> Path | None:
    path = (attrs["Config"].get("Labels") or {}).get(LABEL_LOG)
    return Path(path) if path else None


def _seconds_since(timestamp: str) -> float:
    """Seconds since an engine timestamp (RFC 3339, nanoseconds); infinite if unreadable."""
    try:
        moment = datetime.fromisoformat(timestamp[:19]).replace(tzinfo=UTC)
    except ValueError:
        return float("inf")
    return (datetime.now(UTC) - moment).total_seconds()


def _format_mib(mib: int) -> str:
    return f"{mib // 1024} GiB" if mib >= 1024 and mib % 1024 == 0 else f"{mib} MiB"
