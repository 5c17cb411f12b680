"""Running `trainyard server` as a real separate process, for CLI and crash tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


class ServerProcess:
    def __init__(self, data_dir: Path, database_url: str = "", max_concurrent: int = 2,
                 extra_args: tuple[str, ...] = (), name: str = "") -> None:
        """`name` tells apart the port and log files of servers sharing one data dir."""
        self.data_dir = data_dir
        self.database_url = database_url
        self.max_concurrent = max_concurrent
        self.extra_args = extra_args
        name = name or data_dir.name
        self.port_file = data_dir.parent / f"{name}.port"
        self.http_port_file = data_dir.parent / f"{name}.http-port"
        self.log_path = data_dir.parent / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.http_port = 0

    def start(self, timeout: float = 30) -> ServerProcess:
        self.port_file.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "trainyard.cli.main", "server", "--port", "0",
               "--http-port", "0",
               "--port-file", str(self.port_file), "--http-port-file", str(self.http_port_file),
               "--data-dir", str(self.data_dir),
               "--max-concurrent", str(self.max_concurrent)]
        if self.database_url:
            cmd += ["--database-url", self.database_url]
        cmd += self.extra_args
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                if self.proc.poll() is None:  # too slow: it must not outlive the test
                    self.proc.kill()
                    self.proc.wait()
                raise RuntimeError(f"server did not start:\n{self.log_path.read_text()}")
            time.sleep(0.05)
        self.port = int(self.port_file.read_text())
        self.http_port = int(self.http_port_file.read_text())
        return self

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL: the crash the service must survive."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def pause(self) -> None:
        """SIGSTOP: a server frozen (or cut off) with its state in memory."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
