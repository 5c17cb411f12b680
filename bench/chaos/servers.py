"""What the scenarios run against: `trainyard server` processes that can be SIGKILLed and
started again on the same store and port, a throwaway PostgreSQL that can be restarted, and
users with tokens for a policy file's teams."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from benchlib import stop_process, wait_for_port

from trainyard.client import Client
from trainyard.client.errors import TrainyardError

READY_TIMEOUT_S = 30.0
ADMIN = "chaos-admin"
TOKEN_LIFETIME_S = 6 * 3600


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One `trainyard server` on a fixed gRPC port, so clients keep their address across
    restarts. `fault` arms TRAINYARD_FAULT for the next start only."""

    def __init__(self, workdir: Path, *, database_url: str = "", args: Sequence[str] = (),
                 env: Mapping[str, str] | None = None) -> None:
        self.workdir = workdir
        self.data_dir = workdir / "data"
        self.database_url = database_url
        self.args = list(args)
        self.env = dict(env or {})
        self.port = free_port()
        self.log_path = workdir / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, fault: str = "") -> float:
        """Start it and wait until it answers; returns the seconds that took."""
        began = time.monotonic()
        port_file = self.workdir / "port"
        port_file.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "trainyard.cli.main", "server", "--port", str(self.port),
               "--http-port", "0", "--port-file", str(port_file),
               "--data-dir", str(self.data_dir), "--database-url", self.database_url,
               *self.args]
        env = {**os.environ, **self.env}
        env.pop("TRAINYARD_FAULT", None)
        if fault:
            env["TRAINYARD_FAULT"] = fault
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, env=env)
        self.starts += 1
        wait_for_port(self.proc, port_file, self.log_path)
        return time.monotonic() - began

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crash does."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def client(self, token: str = "", timeout: float = 5.0) -> Client:
        return Client(self.address, token=token, timeout=timeout)

    def bootstrap(self) -> str:
        """An admin and its token, made in the empty store before the first start, as
        `trainyard admin bootstrap` does."""
        from trainyard.auth.authenticator import Authenticator
        from trainyard.services.access import AccessService
        from trainyard.store.access import AccessStore
        from trainyard.store.db import open_database, sqlite_url

        self.data_dir.mkdir(parents=True, exist_ok=True)
        db = open_database(self.database_url or sqlite_url(self.data_dir.resolve()))
        try:
            store = AccessStore(db)
            access = AccessService(store, Authenticator(store, loopback_only=True))
            return access.bootstrap(ADMIN, expires_in=TOKEN_LIFETIME_S).token
        finally:
            db.close()


def add_users(server: Server, admin_token: str, names: Sequence[str]) -> dict[str, str]:
    """Each user made, with a token: {name: token}."""
    tokens: dict[str, str] = {}
    with server.client(admin_token, timeout=20) as admin:
        for name in names:
            admin.create_user(name)
            tokens[name] = str(admin.create_token(name)["token"])
    return tokens


def wait_answering(server: Server, token: str = "", timeout: float = READY_TIMEOUT_S) -> None:
    """Until the server answers a read."""
    deadline = time.monotonic() + timeout
    with server.client(token, timeout=2) as client:
        while True:
            try:
                client.list_jobs(page_size=1)
                return
            except TrainyardError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def find_pg_bindir() -> Path | None:
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists():
            return candidate
    found = shutil.which("initdb")
    return Path(found).parent if found else None


class Postgres:
    """A PostgreSQL cluster of its own in a temp dir, on a fixed port, that can be stopped
    and started again with its data (root runs it as the postgres user)."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="chaos-pg-"))
        self.port = free_port()
        self._as_postgres = os.geteuid() == 0  # initdb refuses to run as root

    def _run(self, *args: str) -> None:
        cmd = list(args)
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def create(self) -> Postgres:
        if self._as_postgres:
            shutil.chown(self.dir, "postgres")
        self._run(str(self.bindir / "initdb"), "-D", str(self.dir / "data"), "-A", "trust",
                  "-U", "postgres", "--no-sync")
        self.start()
        return self

    def start(self) -> None:
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                "-c max_connections=200")
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.dir / "data"), "-o", opts, "-w",
                  "-l", str(self.dir / "log"), "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.dir / "data"), "-m", mode,
                  "-w", "stop")

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.SubprocessError:
            pass  # not running
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def remove_containers(data_dir: Path) -> int:
    """Remove what containers the service of this data dir left (a stopped service leaves
    its jobs running, by design); how many there were."""
    import docker
    import docker.errors

    from trainyard.executors.docker import LABEL_INSTANCE

    try:
        instance = (data_dir / "instance-id").read_text().strip()
    except FileNotFoundError:
        return 0
    try:
        client = docker.from_env(timeout=60)
    except docker.errors.DockerException:
        return 0
    removed = 0
    try:
        for container in client.containers.list(
                all=True, filters={"label": f"{LABEL_INSTANCE}={instance}"}):
            container.remove(force=True)
            removed += 1
    except docker.errors.DockerException:
        pass  # the engine is away: nothing of ours can run there either
    finally:
        client.close()
    return removed


def stop_jobs(data_dir: Path) -> None:
    """Kill what local job processes the service of this data dir left running."""
    for pid_file in (data_dir / "executor").glob("*/pid"):
        if (pid_file.parent / "exit").exists():
            continue  # it ended: the pid may be someone else's now
        with contextlib.suppress(OSError, ValueError, IndexError):
            os.killpg(int(pid_file.read_text().split()[0]), signal.SIGKILL)


class Dockerd:
    """The running Docker engine, to stop and start again as it was started (its command
    line, environment, such as a PATH holding a GPU stand-in, working directory and log)."""

    STOP_TIMEOUT_S = 60.0
    START_TIMEOUT_S = 60.0

    def __init__(self) -> None:
        pid = self._pid()
        if pid is None:
            raise RuntimeError("no dockerd is running")
        proc = Path(f"/proc/{pid}")
        self.cmdline = [a.decode() for a in proc.joinpath("cmdline").read_bytes().split(b"\0")
                        if a]
        self.env = dict(item.decode().partition("=")[::2] for item in
                        proc.joinpath("environ").read_bytes().split(b"\0") if b"=" in item)
        self.cwd = os.readlink(proc / "cwd")
        log = os.readlink(proc / "fd" / "1")
        self.log = log if log.startswith("/") and not log.startswith("/dev/") else os.devnull

    @staticmethod
    def _pid() -> int | None:
        for comm in Path("/proc").glob("[0-9]*/comm"):
            with contextlib.suppress(OSError):
                if comm.read_text().strip() == "dockerd":
                    return int(comm.parent.name)
        return None

    @staticmethod
    def answers() -> bool:
        import docker
        import docker.errors

        try:
            client = docker.from_env(timeout=5)
        except docker.errors.DockerException:
            return False
        try:
            return bool(client.ping())
        except (docker.errors.DockerException, OSError):
            return False
        finally:
            client.close()

    def stop(self) -> float:
        """TERM, and wait until it has exited; returns the seconds that took."""
        began = time.monotonic()
        pid = self._pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            while Path(f"/proc/{pid}").exists() and \
                    time.monotonic() - began < self.STOP_TIMEOUT_S:
                time.sleep(0.1)
        return time.monotonic() - began

    def start(self) -> float:
        """Start it (unless one runs) and wait until it answers; returns the seconds."""
        began = time.monotonic()
        if self._pid() is None:
            with open(self.log, "ab") as log:
                subprocess.Popen(self.cmdline, cwd=self.cwd, env=self.env,
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                 start_new_session=True)
        while not self.answers():
            if time.monotonic() - began > self.START_TIMEOUT_S:
                raise RuntimeError("dockerd did not answer after its restart")
            time.sleep(0.2)
        return time.monotonic() - began
