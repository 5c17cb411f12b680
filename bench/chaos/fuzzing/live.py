"""A real `trainyard server` process in a scratch data dir, with an admin token made before it
starts, and what the scenarios read of it: its ports, its log, its memory and open files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
from benchlib import stop_process, wait_for_port

from trainyard.v1 import training_pb2_grpc as pb_grpc

CLI = [sys.executable, "-m", "trainyard.cli.main"]
ADMIN = "root"


class LiveServer:
    def __init__(self, workdir: Path, *, max_concurrent: int = 4, docker: bool = False,
                 policy: Path | None = None, auth: bool = True) -> None:
        self.workdir = workdir
        self.data_dir = workdir / "data"
        self.log_path = workdir / "server.log"
        self.max_concurrent = max_concurrent
        self.docker = docker
        self.policy = policy
        self.auth = auth
        self.admin_token = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.http_port = 0

    def start(self) -> LiveServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.auth:
            made = subprocess.run(CLI + ["admin", "bootstrap", ADMIN, "--data-dir",
                                         str(self.data_dir), "-o", "json"],
                                  capture_output=True, text=True, check=True, timeout=60)
            self.admin_token = json.loads(made.stdout)["token"]
        port_file, http_file = self.workdir / "port", self.workdir / "http-port"
        cmd = CLI + ["server", "--port", "0", "--http-port", "0", "--port-file", str(port_file),
                     "--http-port-file", str(http_file), "--data-dir", str(self.data_dir),
                     "--max-concurrent", str(self.max_concurrent)]
        if self.docker:
            cmd.append("--docker")
        if self.policy is not None:
            cmd += ["--policy", str(self.policy)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.port = wait_for_port(self.proc, port_file, self.log_path)
        self.http_port = wait_for_port(self.proc, http_file, self.log_path)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(self.address)

    def training(self, channel: grpc.Channel) -> Any:
        """A TrainingService stub (the generated stubs are untyped)."""
        return pb_grpc.TrainingServiceStub(channel)  # type: ignore[no-untyped-call]

    def admin(self, channel: grpc.Channel) -> Any:
        return pb_grpc.AdminServiceStub(channel)  # type: ignore[no-untyped-call]

    def metadata(self, token: str | None = None) -> tuple[tuple[str, str], ...]:
        secret = self.admin_token if token is None else token
        return (("authorization", f"Bearer {secret}"),) if secret else ()

    def rss_kib(self) -> int:
        """Resident memory (VmRSS), in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def log_tracebacks(self) -> int:
        return self.log_path.read_text(errors="replace").count("Traceback (most recent call")


def wait_until(predicate: object, timeout: float, step: float = 0.1) -> bool:
    """Poll `predicate()` until it is true or `timeout` seconds pass."""
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())
