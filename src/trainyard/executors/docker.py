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
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.transport.unixconn import UnixHTTPConnection
from docker.types import DeviceRequest, LogConfig, Mount

from trainyard.executors.base import LaunchError, LaunchRequest, Observation, Phase, describe_exit

log = logging.getLogger(__name__)

# Where a container sees the attempt's files.
DATA_MOUNT = "/trainyard/data"
MODEL_MOUNT = "/trainyard/model"
CHECKPOINT_MOUNT = "/trainyard/checkpoint"
WORK_MOUNT = "/trainyard/work"
METRICS_MOUNT = "/trainyard/metrics.jsonl"

LABEL_JOB = "org.trainyard.job"
LABEL_ATTEMPT = "org.trainyard.attempt"
LABEL_INSTANCE = "org.trainyard.instance"
LABEL_LOG = "org.trainyard.log"  # host path of the attempt's log, for re-adoption

NOBODY = "65534:65534"
API_VERSION = "1.41"  # Docker Engine 20.10 and later; fixed, so no probe at start
LOG_LOCK_WAIT = 10.0  # how long a final log copy waits for a stuck follower
ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)


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


@dataclass
class _Follow:
    """One container's log copier."""

    thread: threading.Thread | None = None
    complete: bool = False  # its stream ended with the container: the file holds everything


class DockerExecutor:
    name = "docker"

    def __init__(self, config: DockerConfig) -> None:
        self.config = config
        self.user = config.user or _default_user()
        kwargs: dict[str, Any] = {"base_url": config.base_url} if config.base_url else {}
        self._api = _client(timeout=config.api_timeout, **kwargs)
        # Streams (events, logs) may be quiet for hours: no read timeout.
        self._streams = _client(timeout=None, max_pool_size=256, **kwargs)
        self._listener: Callable[[str], None] = lambda handle: None
        self._lock = threading.Lock()
        self._timers: dict[str, threading.Timer] = {}  # forced kills after a cancel's grace
        self._copiers: dict[str, _Follow] = {}
        self._log_locks: dict[str, threading.Lock] = {}
        # What the event stream vouches for: running containers whose end it would report.
        self._vouched: set[str] = set()
        self._ended: set[str] = set()  # reported ended (die/destroy) by the stream
        self._interrupted: set[str] = set()  # were running when the stream broke
        self._unremoved: set[str] = set()  # final, but the engine was away to remove them
        self._connected = False
        self._unreachable_since: float | None = None
        self._stop = threading.Event()
        self._events_response: Any = None
        self._events = threading.Thread(target=self._follow_events, name="docker-events",
                                        daemon=True)
        self._events.start()

    def close(self) -> None:
        self._stop.set()
        response = self._events_response
        if response is not None:
            with contextlib.suppress(Exception):
                response.close()
        self._events.join(timeout=5)

    def set_exit_listener(self, listener: Callable[[str], None]) -> None:
        self._listener = listener

    def handle_for(self, job_id: str, attempt: int) -> str:
        return f"trainyard-{job_id}-{attempt}"

    # --- launch --------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> None:
        self._give_to_user(request)
        try:
            container = self._api.create_container(**self._create_args(request))
        except docker.errors.ImageNotFound as exc:
            raise LaunchError(f"image {request.image!r} is not in the local Docker engine; "
                              "build it with 'trainyard images build DIR --tag "
                              f"{request.image}'") from exc
        except docker.errors.APIError as exc:
            raise LaunchError(f"the Docker engine refused the container: "
                              f"{_explain(exc)}") from exc
        except ENGINE_ERRORS as exc:
            raise LaunchError(f"the Docker engine is unreachable: {exc}") from exc
        try:
            self._api.start(container["Id"])
        except ENGINE_ERRORS as exc:
            # Never leave a created container behind: a retry must not find it.
            with contextlib.suppress(*ENGINE_ERRORS):
                self._api.remove_container(container["Id"], force=True)
            raise LaunchError(f"the container did not start: {_explain(exc)}") from exc
        with self._lock:
            if self._connected:
                self._vouched.add(request.handle)
        self._copy_logs_in_background(request.handle, request.files.log)

    def _create_args(self, request: LaunchRequest) -> dict[str, Any]:
        """The container, as the engine's create call takes it."""
        files = request.files
        env = request.contract(data=DATA_MOUNT, model=MODEL_MOUNT, metrics=METRICS_MOUNT,
                               checkpoint=CHECKPOINT_MOUNT)
        env["HOME"] = WORK_MOUNT
        if not request.gpu_ids:
            env["CUDA_VISIBLE_DEVICES"] = ""  # a job that asked for no GPU sees none
        mounts = [
            Mount(DATA_MOUNT, str(files.data), type="bind", read_only=True),
            Mount(MODEL_MOUNT, str(files.model), type="bind"),
            Mount(CHECKPOINT_MOUNT, str(files.checkpoint), type="bind"),
            Mount(WORK_MOUNT, str(files.workdir), type="bind"),
            Mount(METRICS_MOUNT, str(files.metrics), type="bind"),
        ]
        memory = request.resources.memory_mb * 1024 * 1024
        devices = [DeviceRequest(driver="nvidia", device_ids=list(request.gpu_ids),
                                 capabilities=[["gpu"]])] if request.gpu_ids else []
        host_config = self._api.create_host_config(
            mounts=mounts,
            network_mode="none",
            nano_cpus=int(request.resources.cpus * 1e9),
            mem_limit=memory,
            memswap_limit=memory,  # no swap: the limit is the limit
            pids_limit=self.config.pids_limit,
            device_requests=devices,
            init=True,  # a real PID 1 passes TERM on and reaps orphans
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            privileged=False,
            log_config=LogConfig(type="json-file"),  # kept until removal, so it can be re-read
        )
        labels = {LABEL_JOB: request.job_id, LABEL_ATTEMPT: str(request.attempt),
                  LABEL_INSTANCE: self.config.instance, LABEL_LOG: str(files.log)}
        return {
            "image": request.image,
            "name": request.handle,
            "command": ["/bin/sh", "-c", request.command] if request.command.strip() else None,
            "environment": env,
            "labels": labels,
            "user": self.user,
            "host_config": host_config,
            "stdin_open": False,
            "tty": False,
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
        with self._lock:
            if self._connected and handle in self._vouched and handle not in self._ended:
                return Observation(Phase.RUNNING)
        return self._inspect(handle)

    def adopt(self, handle: str) -> Observation:
        obs = self._inspect(handle, adopting=True)
        if obs.phase is Phase.RUNNING:
            log_path = self._log_path(handle)
            if log_path is not None:
                self._copy_logs_in_background(handle, log_path)
        return obs

    def _inspect(self, handle: str, adopting: bool = False) -> Observation:
        try:
            attrs = self._api.inspect_container(handle)
        except docker.errors.NotFound:
            return Observation(Phase.NOT_FOUND, message="the container is gone: it was removed "
                               "outside Trainyard")
        except ENGINE_ERRORS as exc:
            return self._engine_away(exc)
        self._unreachable_since = None
        if attrs["Config"]["Labels"].get(LABEL_INSTANCE) != self.config.instance:
            return Observation(Phase.LOST, message=f"container {handle} belongs to another "
                               "Trainyard service")
        status = attrs["State"]["Status"]
        if status == "created":
            if adopting:
                # Created but never started: the service stopped in between. Nothing ran.
                try:
                    self._api.start(handle)
                except ENGINE_ERRORS as exc:
                    return Observation(Phase.LOST, message=f"the container did not start: "
                                       f"{_explain(exc)}")
                return Observation(Phase.RUNNING)
            return Observation(Phase.STARTING)
        if status in ("running", "paused", "restarting"):
            with self._lock:
                self._interrupted.discard(handle)  # it survived whatever broke the stream
                if self._connected:
                    self._vouched.add(handle)
            return Observation(Phase.RUNNING)
        return self._exited(handle, attrs)

    def _exited(self, handle: str, attrs: dict[str, Any]) -> Observation:
        state = attrs["State"]
        code = int(state.get("ExitCode", -1))
        log_path = self._log_path(handle, attrs)
        if log_path is not None:
            self._drain_logs(handle, log_path)
        if state.get("OOMKilled"):
            limit = _format_mib(attrs["HostConfig"].get("Memory", 0) // (1024 * 1024))
            return Observation(Phase.EXITED, exit_code=code,
                               message=f"killed: out of memory (limit {limit}), exit code {code}")
        message = ""
        with self._lock:
            interrupted = handle in self._interrupted
        if interrupted and code != 0:
            message = f"{describe_exit(code)}; the Docker engine stopped or restarted while " \
                      "it ran"
        if state.get("Error"):
            message = f"{describe_exit(code)}: {state['Error']}"
        return Observation(Phase.EXITED, exit_code=code, message=message)

    def _engine_away(self, exc: BaseException) -> Observation:
        now = time.monotonic()
        if self._unreachable_since is None:
            self._unreachable_since = now
        waited = now - self._unreachable_since
        if waited < self.config.engine_grace:
            return Observation(Phase.UNKNOWN, message=f"the Docker engine is unreachable: {exc}")
        return Observation(Phase.LOST, message=f"the Docker engine has been unreachable for "
                           f"{waited:.0f} s ({exc})")

    # --- stop and clean up ---------------------------------------------------------------

    def cancel(self, handle: str, grace_seconds: float) -> bool:
        try:
            attrs = self._api.inspect_container(handle)
        except docker.errors.NotFound:
            return True  # nothing to stop
        except ENGINE_ERRORS:
            return False  # ask again once the engine answers
        status = attrs["State"]["Status"]
        if status == "created":
            with contextlib.suppress(*ENGINE_ERRORS):
                self._api.remove_container(handle, force=True)
            return True
        if status not in ("running", "paused", "restarting"):
            return True
        try:
            self._api.kill(handle, signal="SIGTERM")
        except docker.errors.APIError:
            return True  # it ended meanwhile
        except ENGINE_ERRORS:
            return False
        timer = threading.Timer(grace_seconds, self._force_kill, args=(handle,))
        timer.daemon = True
        with self._lock:
            self._timers[handle] = timer
        timer.start()
        return True

    def _force_kill(self, handle: str) -> None:
        with contextlib.suppress(*ENGINE_ERRORS):
            self._api.kill(handle, signal="SIGKILL")

    def release(self, handle: str) -> None:
        """The job is final: its log is copied, so the container goes."""
        with self._lock:
            timer = self._timers.pop(handle, None)
            self._log_locks.pop(handle, None)
            self._copiers.pop(handle, None)
            self._vouched.discard(handle)
            self._ended.discard(handle)
            self._interrupted.discard(handle)
        if timer is not None:
            timer.cancel()
        try:
            self._api.remove_container(handle, force=True)
        except docker.errors.NotFound:
            pass
        except ENGINE_ERRORS as exc:
            log.warning("could not remove container %s yet: %s", handle, exc)
            with self._lock:
                self._unremoved.add(handle)  # retried once the engine answers again

    def _remove_leftovers(self) -> None:
        with self._lock:
            leftovers, self._unremoved = self._unremoved, set()
        for handle in leftovers:
            self.release(handle)

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
            labels = summary.get("Labels") or {}
            log_path = labels.get(LABEL_LOG)
            if log_path:
                self._drain_logs(name, Path(log_path))
            with contextlib.suppress(*ENGINE_ERRORS):
                self._api.remove_container(summary["Id"], force=True)
            removed.append(f"removed container {name} ({summary.get('State', '?')}) of job "
                           f"{labels.get(LABEL_JOB, '?')}: it belongs to no active job")
        return removed

    # --- logs ----------------------------------------------------------------------------

    def _log_path(self, handle: str, attrs: dict[str, Any] | None = None) -> Path | None:
        if attrs is None:
            try:
                attrs = self._api.inspect_container(handle)
            except ENGINE_ERRORS:
                return None
        path = attrs["Config"]["Labels"].get(LABEL_LOG)
        return Path(path) if path else None

    def _copy_logs_in_background(self, handle: str, log_path: Path) -> None:
        with self._lock:
            current = self._copiers.get(handle)
            if current is not None and current.thread is not None and \
                    current.thread.is_alive():
                return
            follow = _Follow()
            self._copiers[handle] = follow

        def run() -> None:
            follow.complete = self._copy_logs(handle, log_path, follow=True)

        follow.thread = threading.Thread(target=run, name=f"logs-{handle}", daemon=True)
        follow.thread.start()

    def _drain_logs(self, handle: str, log_path: Path) -> None:
        """Make the log file hold the container's whole output before the job is final."""
        with self._lock:
            copier = self._copiers.pop(handle, None)
        if copier is not None and copier.thread is not None:
            copier.thread.join(timeout=LOG_LOCK_WAIT)  # it ends once the container has
            if copier.complete:
                return
        self._copy_logs(handle, log_path, follow=False)

    def _copy_logs(self, handle: str, log_path: Path, follow: bool) -> bool:
        """Append to log_path what the engine holds beyond what the file already has; True
        if the engine's stream ended by itself. The engine replays a container's output
        identically from its start, so the file's size says how much to skip, and a copy
        after any interruption neither repeats nor loses output."""
        lock = self._log_lock(handle)
        if not lock.acquire(timeout=-1 if follow else LOG_LOCK_WAIT):
            log.warning("log of %s may be incomplete: its copier is stuck", handle)
            return False
        try:
            with log_path.open("ab") as out:
                skip = out.tell()
                for chunk in self._log_stream(handle, follow):
                    if skip >= len(chunk):
                        skip -= len(chunk)
                        continue
                    out.write(chunk[skip:])
                    out.flush()
                    skip = 0
            return True
        except docker.errors.NotFound:
            return False
        except (*ENGINE_ERRORS, ValueError) as exc:
            log.info("log copy of %s stopped: %s", handle, exc)
            return False
        finally:
            lock.release()

    def _log_stream(self, handle: str, follow: bool) -> Iterator[bytes]:
        api = self._streams if follow else self._api
        stream = api.logs(handle, stdout=True, stderr=True, stream=True, follow=follow)
        yield from stream

    def _log_lock(self, handle: str) -> threading.Lock:
        with self._lock:
            return self._log_locks.setdefault(handle, threading.Lock())

    # --- events --------------------------------------------------------------------------

    def _follow_events(self) -> None:
        """Learn of container ends as they happen; reconnect when the engine comes back."""
        backoff = 0.2
        filters = {"type": "container", "label": f"{LABEL_INSTANCE}={self.config.instance}"}
        while not self._stop.is_set():
            try:
                events = self._streams.events(decode=True, filters=filters)
                self._events_response = events
                with self._lock:
                    # Ends before this moment were not seen: inspect each container once more.
                    self._vouched.clear()
                    self._connected = True
                backoff = 0.2
                self._remove_leftovers()
                for event in events:
                    self._on_event(event)
            except ENGINE_ERRORS as exc:
                if not self._stop.is_set():
                    log.debug("Docker event stream: %s", exc)
            with self._lock:
                was_connected = self._connected
                self._connected = False
                self._interrupted.update(self._vouched)
                self._vouched.clear()
            if was_connected and not self._stop.is_set():
                log.warning("lost the Docker event stream; following containers by inspect")
                self._listener("")  # let the tracker look at every container now
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 5.0)

    def _on_event(self, event: dict[str, Any]) -> None:
        action = event.get("Action") or event.get("status") or ""
        name = (event.get("Actor") or {}).get("Attributes", {}).get("name", "")
        if not name:
            return
        if action not in ("die", "oom", "destroy"):
            return
        with self._lock:
            if action == "destroy" and name not in self._vouched:
                return  # our own removal of a finished container
            self._ended.add(name)
        self._listener(name)


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


def _format_mib(mib: int) -> str:
    return f"{mib // 1024} GiB" if mib >= 1024 and mib % 1024 == 0 else f"{mib} MiB"
