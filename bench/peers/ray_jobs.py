"""Ray Jobs from PyPI (ray[default], pinned in bench/requirements-ray.txt) in its own
virtual environment, bench/.venv-ray: a local head started with `ray start --head` on
127.0.0.1 with this host's CPUs, jobs submitted to the job submission REST API on loopback
(what JobSubmissionClient itself calls), stopped with `ray stop --force`.

Every job asks for entrypoint_num_cpus=1, so Ray runs as many at once as the machine has
CPUs, like the other systems; Ray's default, 0, would start every submitted job at once."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from peers import procs
from peers.slurm import free_port

VENV = Path(__file__).resolve().parent.parent / ".venv-ray"
FINAL = {"SUCCEEDED", "FAILED", "STOPPED"}
CALL_TIMEOUT_S = 60.0
START_TIMEOUT_S = 120.0


def ray_bin() -> Path:
    return VENV / "bin" / "ray"


def available() -> str | None:
    return None if ray_bin().exists() else \
        f"{ray_bin()} is missing (make bench builds it from bench/requirements-ray.txt)"


class RaySystem:
    name = "ray"

    def __init__(self, port: int) -> None:
        self.port = port
        self._local = threading.local()  # one keep-alive connection per submitting thread
        self._final: set[str] = set()
        self._lock = threading.Lock()

    def _request(self, method: str, path: str, body: dict[str, object] | None = None) -> object:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        for attempt in range(2):  # once more on a connection the server closed
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                  timeout=CALL_TIMEOUT_S)
                self._local.conn = conn
            try:
                data = None if body is None else json.dumps(body).encode()
                conn.request(method, path, body=data,
                             headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                payload = resp.read()
            except (http.client.HTTPException, ConnectionError):
                conn.close()
                conn = None
                self._local.conn = None
                if attempt:
                    raise
                continue
            if resp.status >= 400:
                raise RuntimeError(f"{method} {path}: {resp.status} {payload[:300]!r}")
            return json.loads(payload) if payload else None
        raise AssertionError("unreachable")

    def submit(self, key: str, command: str) -> str:
        # A submission id of our own, so a job can be looked up without listing all.
        sid = f"{key}-{procs.TOKEN}"
        self._request("POST", "/api/jobs/", {"entrypoint": command, "submission_id": sid,
                                             "entrypoint_num_cpus": 1})
        return sid

    def status(self, sid: str) -> str:
        info = self._request("GET", f"/api/jobs/{sid}")
        return str(info.get("status", "")) if isinstance(info, dict) else ""

    def unfinished(self, ids: Sequence[str]) -> bool:
        # A cursor over the ids in submit order: ask about the first one not yet seen
        # final, and move on while they are. About one request per poll, and one per job
        # in all, instead of listing every job each time.
        for sid in ids:
            with self._lock:
                if sid in self._final:
                    continue
            if self.status(sid) not in FINAL:
                return True
            with self._lock:
                self._final.add(sid)
        return False

    def cancel(self, ids: Sequence[str]) -> None:
        for sid in ids:
            if sid not in self._final:
                with contextlib.suppress(Exception):
                    self._request("POST", f"/api/jobs/{sid}/stop")


@contextmanager
def head(root: Path, cpus: int) -> Iterator[RaySystem]:
    """`ray start --head` on loopback; yield once the job API answers; `ray stop --force`."""
    root.mkdir(parents=True, exist_ok=True)
    port, gcs = free_port(), free_port()
    # Ray's session (logs, and unix sockets whose paths must stay under 108 bytes) goes to
    # a short temp dir of its own, removed at the end.
    session = Path(tempfile.mkdtemp(prefix="tyray-"))
    extra = {"RAY_USAGE_STATS_ENABLED": "0", "PATH": f"{VENV / 'bin'}:{os.environ['PATH']}"}
    argv = [str(ray_bin()), "start", "--head", "--node-ip-address=127.0.0.1",
            f"--port={gcs}", "--dashboard-host=127.0.0.1", f"--dashboard-port={port}",
            "--include-dashboard=true", f"--num-cpus={cpus}", "--num-gpus=0",
            f"--temp-dir={session}", "--disable-usage-stats"]
    system = RaySystem(port)
    try:
        with (root / "ray-start.out").open("wb") as out:
            done = procs.run(argv, extra, cwd=root, timeout=START_TIMEOUT_S, stdout=out)
        if done.returncode != 0:
            raise RuntimeError(f"ray start: {done.stderr.decode(errors='replace')[-500:]}")
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                system._request("GET", "/api/version")
                break
            except (OSError, RuntimeError, http.client.HTTPException):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield system
    finally:
        # ray stop --force ends every Ray process on this host; the only ones here are ours,
        # and any the marker finds later are stopped by procs.stop_all too.
        try:
            procs.run([str(ray_bin()), "stop", "--force"], extra, cwd=root,
                      timeout=START_TIMEOUT_S)
            with contextlib.suppress(OSError, shutil.Error):  # its logs, for a post-mortem
                shutil.copytree(session, root / "session", symlinks=True,
                                ignore=shutil.ignore_patterns("sockets"))
        finally:
            shutil.rmtree(session, ignore_errors=True)


def version() -> str:
    done = procs.run([str(ray_bin()), "--version"])
    return done.stdout.decode().strip()
