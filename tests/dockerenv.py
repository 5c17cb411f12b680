"""The real Docker engine for tests: found or reported missing, with the images tests use."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import pytest

from tests.conftest import missing
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.services.images import BASE_IMAGE, build_image
from trainyard.store.records import JobRecord
from trainyard.tracker import TrackerConfig

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TRAINER_IMAGE = "trainyard/demo-trainer:test"
GPU_STAND_IN = Path(__file__).resolve().parent / "fixtures" / "gpu-stand-in"


@dataclass(frozen=True)
class Engine:
    client: docker.DockerClient
    gpus: bool  # device requests work (real GPUs, or the stand-in hook on dockerd's PATH)


def find_engine() -> Engine:
    """The engine with the trainer image built, or a skip (a failure under CI=true)."""
    client = None
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except docker.errors.DockerException:
        if client is not None:
            client.close()  # its socket, which an engine that is not there left open
        missing("a Docker engine (dockerd)")
        raise AssertionError("unreachable") from None
    try:
        client.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        missing(f"the base image {BASE_IMAGE} ('trainyard images build-base')")
    build_image(client, EXAMPLES, TRAINER_IMAGE)
    return Engine(client, gpus=_device_requests_work(client))


def _device_requests_work(client: docker.DockerClient) -> bool:
    try:
        client.containers.run(
            TRAINER_IMAGE, ["true"], remove=True, network_mode="none",
            device_requests=[docker.types.DeviceRequest(driver="nvidia", device_ids=["probe"],
                                                        capabilities=[["gpu"]])])
    except docker.errors.DockerException:
        return False
    return True


def docker_server(tmp_path: Path, *, gpu_ids: tuple[str, ...] = (), cpus: float = 2.0,
                  memory_mb: int = 4096, max_containers: int = 8,
                  base_url: str = "", engine_grace: float = 60.0,
                  name: str = "data", max_log_bytes: int = 1 << 30) -> TrainyardServer:
    from trainyard.executors.docker import DockerConfig

    pool = DockerConfig(instance="", cpus=cpus, memory_mb=memory_mb,
                        max_containers=max_containers, gpu_ids=gpu_ids, base_url=base_url,
                        engine_grace=engine_grace)
    config = ServerConfig(data_dir=tmp_path / name, port=0, docker=pool,
                          max_log_bytes=max_log_bytes,
                          tracker=TrackerConfig(max_concurrent=8, cancel_grace=2.0,
                                                active_interval=0.2))
    server = TrainyardServer(config)
    server.start()
    return server


@contextlib.contextmanager
def running(server: TrainyardServer) -> Iterator[TrainyardServer]:
    """The server for the block; then it stops, and what a failed test left running goes."""
    try:
        yield server
    finally:
        server.stop(grace=0)
        remove_containers(server.workspace.data_dir)


def remove_containers(data_dir: Path) -> None:
    """Remove the containers of the service whose data dir this is (a stopped service
    leaves its jobs running, by design)."""
    from trainyard.executors.docker import LABEL_INSTANCE

    instance = (data_dir / "instance-id").read_text().strip()
    client = docker.from_env()
    try:
        for container in client.containers.list(
                all=True, filters={"label": f"{LABEL_INSTANCE}={instance}"}):
            container.remove(force=True)
    finally:
        client.close()


def wait_state(server: TrainyardServer, job_id: str, states: set[JobState],
               timeout: float = 60) -> JobRecord:
    deadline = time.monotonic() + timeout
    while True:
        job = server.jobs.get(job_id)
        if job.state in states:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"{job_id} is {job.state} ({job.message}), not {states}")
        time.sleep(0.05)


def final(server: TrainyardServer, job_id: str, timeout: float = 60) -> JobRecord:
    return wait_state(server, job_id, {s for s in JobState if s.is_final()}, timeout)


@pytest.fixture(scope="session")
def engine() -> Engine:
    return find_engine()


class SocketProxy:
    """A real relay in front of the engine's Unix socket. Cutting it makes the engine
    unreachable to whoever connects through it, as an engine restart does."""

    def __init__(self, path: Path, target: str = "/var/run/docker.sock",
                 accepts: int | None = None) -> None:
        self.path = path
        self.target = target
        self.accepts = accepts  # once this many are relayed, it stops listening: they go on
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._clients: list[socket.socket] = []  # every connection accepted, open or not
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def connections(self) -> int:
        """Connections relayed now: a client that closes its end closes the relay's."""
        with self._lock:
            return sum(1 for client in self._clients if client.fileno() != -1)

    def start(self) -> SocketProxy:
        self.path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def cut(self) -> None:
        self.stop_listening()
        with self._lock:
            sockets, self._open = self._open, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.target)
            except OSError:
                client.close()
                upstream.close()
                continue
            with self._lock:
                if self._listener is not listener:  # cut while this one was accepted
                    client.close()
                    upstream.close()
                    return
                self._open += [client, upstream]
                self._clients.append(client)
                full = self.accepts is not None and len(self._clients) >= self.accepts
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(src, dst), daemon=True).start()
            if full:
                self.stop_listening()
                return

    def stop_listening(self) -> None:
        """New connections are refused, as by an engine gone; those relayed go on."""
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        self.path.unlink(missing_ok=True)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
