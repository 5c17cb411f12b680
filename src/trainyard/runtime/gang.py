"""The gang launcher of multi-worker jobs: `python3 -I gang.py launch --workers N -- COMMAND`
starts N workers of COMMAND on this machine, each told its rank and where its peers listen,
and stops them all when one fails (see `launch`).

A single standard-library file that imports nothing of its package, so that any image's
python3 can run it alone; it also holds the framework variables every worker gets
(`framework_env`), which the remote runtime reuses."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import IO, BinaryIO, cast

LOOPBACK = "127.0.0.1"  # the workers of a job share one machine (or one container)
STOP_GRACE = 3.0  # seconds between the TERM and the KILL that stop the other workers
LONGEST_LINE = 64 * 1024  # a longer run of output without a newline is passed on in pieces


FRAMEWORKS = ("both", "pytorch", "tensorflow", "none")


def framework_env(rank: int, world_size: int, local_rank: int, master_addr: str,
                  master_port: int, workers: Sequence[str],
                  framework: str = "both") -> dict[str, str]:
    """What worker `rank` of `world_size` is told of its group. Every framework gets
    WORLD_SIZE, RANK and LOCAL_RANK; "pytorch" adds MASTER_ADDR and MASTER_PORT (its env://
    rendezvous), "tensorflow" adds TF_CONFIG listing `workers` ("host:port" of each rank),
    "both" adds all of them."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}: choose one of "
                         f"{', '.join(FRAMEWORKS)}")
    env = {"WORLD_SIZE": str(world_size), "RANK": str(rank), "LOCAL_RANK": str(local_rank)}
    if framework in ("both", "pytorch"):
        env["MASTER_ADDR"] = master_addr
        env["MASTER_PORT"] = str(master_port)
    if framework in ("both", "tensorflow"):
        tf_config = {"cluster": {"worker": list(workers)},
                     "task": {"type": "worker", "index": rank}}
        env["TF_CONFIG"] = json.dumps(tf_config, separators=(",", ":"))
    return env


def worker_env(rank: int, workers: int, master_port: int, ports: Sequence[int],
               gpu_ids: Sequence[str], framework: str = "both") -> dict[str, str]:
    """The variables worker `rank` of `workers` on this machine gets: `framework_env`'s, where
    worker i listens on ports[i], and its own equal slice of the job's GPUs as
    CUDA_VISIBLE_DEVICES."""
    each = len(gpu_ids) // workers
    env = framework_env(rank, workers, rank, LOOPBACK, master_port,
                        [f"{LOOPBACK}:{port}" for port in ports], framework)
    env["CUDA_VISIBLE_DEVICES"] = ",".join(gpu_ids[rank * each:(rank + 1) * each])
    return env


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports that were free a moment ago."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.bind((LOOPBACK, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _ignore_notice() -> None:
    """In a worker before its shell starts: SIGUSR1 (a preemption's notice) is ignored by
    the shell and what it runs, unless a program sets a handler for it."""
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)


def launch(command: str, workers: int, gpu_ids: Sequence[str] = (), *,
           forward_signals: bool = True, grace: float = STOP_GRACE,
           out: BinaryIO | None = None, framework: str = "both") -> int:
    """Run `workers` copies of `command` (each by /bin/sh -c) and return the job's exit code.

    Each line a worker prints goes to `out` (stdout) as "[rank i] line". SIGTERM, SIGINT and
    SIGUSR1 (a preemption notice) are passed on to every worker, unless `forward_signals` is
    False because whoever signals the launcher signals its whole process group, workers
    included. When a worker exits non-zero the others get TERM, then KILL after `grace`
    seconds, and its code is the job's; 0 when every worker exits 0. A worker killed by
    signal N counts as 128 + N. `framework` chooses the group's variables (framework_env)."""
    problem = _launch_problem(workers, gpu_ids) or _framework_problem(framework)
    if problem:
        raise ValueError(problem)
    return _Gang(command, workers, list(gpu_ids), forward_signals, grace,
                 out or sys.stdout.buffer, framework).run()


def _framework_problem(framework: str) -> str:
    if framework in FRAMEWORKS:
        return ""
    return f"unknown framework {framework!r}: choose one of {', '.join(FRAMEWORKS)}"


def _launch_problem(workers: int, gpu_ids: Sequence[str]) -> str:
    if workers < 1:
        return "a job needs at least one worker"
    if len(gpu_ids) % workers:
        return f"{len(gpu_ids)} GPUs cannot be shared equally by {workers} workers"
    return ""


class _Gang:
    def __init__(self, command: str, workers: int, gpu_ids: list[str], forward_signals: bool,
                 grace: float, out: BinaryIO, framework: str = "both") -> None:
        self.framework = framework
        self.command = command
        self.workers = workers
        self.gpu_ids = gpu_ids
        self.forward_signals = forward_signals
        self.grace = grace
        self.out = out
        self.procs: list[subprocess.Popen[bytes]] = []
        self.codes: dict[int, int] = {}  # rank -> exit code, once reaped
        self.partial: dict[int, bytes] = {}  # rank -> output after its last newline
        self.selector = selectors.DefaultSelector()
        self.failed: tuple[int, int] | None = None  # the first worker to fail, and its code
        self.kill_at: float | None = None

    def run(self) -> int:
        *ports, master_port = free_ports(self.workers + 1)
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGTERM, signal.SIGINT)}
        # A preemption's notice: passed on, or (its caller signals the group) ignored here.
        previous[signal.SIGUSR1] = signal.signal(
            signal.SIGUSR1, self._on_signal if self.forward_signals else signal.SIG_IGN)
        try:
            self._start(ports, master_port)
            while len(self.codes) < len(self.procs):  # until every started worker is reaped
                self._step()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.selector.close()
        return self.failed[1] if self.failed else 0

    def _start(self, ports: list[int], master_port: int) -> None:
        for rank in range(self.workers):
            env = dict(os.environ)
            env.update(worker_env(rank, self.workers, master_port, ports, self.gpu_ids,
                                  self.framework))
            try:
                proc = subprocess.Popen(["/bin/sh", "-c", self.command], env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, close_fds=True,
                                        preexec_fn=_ignore_notice)
            except OSError as exc:
                self._say(f"could not start rank {rank}: {exc}")
                self._failed(rank, 127)
                return
            self.procs.append(proc)
            assert proc.stdout is not None
            os.set_blocking(proc.stdout.fileno(), False)
            self.selector.register(proc.stdout, selectors.EVENT_READ, rank)
            self.partial[rank] = b""

    def _step(self) -> None:
        for key, _ in self.selector.select(timeout=0.05):
            self._read(key.data, cast(IO[bytes], key.fileobj))
        for rank, proc in enumerate(self.procs):
            if rank in self.codes:
                continue
            code = proc.poll()
            if code is None:
                continue
            assert proc.stdout is not None
            self._read(rank, proc.stdout, until_empty=True)
            self._close(rank, proc.stdout)
            self.codes[rank] = 128 - code if code < 0 else code
            if self.codes[rank] != 0 and self.failed is None:
                self._failed(rank, self.codes[rank])
        if self.kill_at is not None and time.monotonic() >= self.kill_at:
            self.kill_at = None
            self._signal_all(signal.SIGKILL)

    def _failed(self, rank: int, code: int) -> None:
        self.failed = (rank, code)
        others = self.workers - 1
        if others:
            self._say(f"rank {rank} exited with code {code}; stopping the other {others} "
                      f"worker{'s' if others > 1 else ''}")
        self._signal_all(signal.SIGTERM)
        self.kill_at = time.monotonic() + self.grace

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.forward_signals:
            self._signal_all(signal.Signals(signum))

    def _signal_all(self, sig: signal.Signals) -> None:
        for rank, proc in enumerate(self.procs):
            if rank not in self.codes and proc.returncode is None:
                with contextlib.suppress(OSError):  # it ended meanwhile
                    proc.send_signal(sig)

    def _read(self, rank: int, pipe: IO[bytes], until_empty: bool = False) -> None:
        while not pipe.closed:
            try:
                data = os.read(pipe.fileno(), 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._close(rank, pipe)
                return
            self._emit(rank, data)
            if not until_empty:
                return

    def _close(self, rank: int, pipe: IO[bytes]) -> None:
        if pipe.closed:
            return
        self.selector.unregister(pipe)
        pipe.close()
        rest = self.partial.pop(rank, b"")
        if rest:
            self._write(rank, [rest])

    def _emit(self, rank: int, data: bytes) -> None:
        text = self.partial.get(rank, b"") + data
        *lines, rest = text.split(b"\n")
        if len(rest) > LONGEST_LINE:
            lines.append(rest)
            rest = b""
        self.partial[rank] = rest
        if lines:
            self._write(rank, lines)

    def _write(self, rank: int, lines: list[bytes]) -> None:
        prefix = f"[rank {rank}] ".encode()
        self._out(b"".join(prefix + line + b"\n" for line in lines))

    def _say(self, message: str) -> None:
        self._out(f"[launcher] {message}\n".encode())

    def _out(self, data: bytes) -> None:
        try:
            self.out.write(data)
            self.out.flush()
        except (OSError, ValueError):
            pass  # nobody reads the output any more; the workers must still be followed


def main(argv: Sequence[str] | None = None) -> int:
    """`launch --workers N [--gpu-ids 0,1] [--no-forward] [--grace S] [--framework F] --
    COMMAND...`: one
    argument after `--` is a shell command; several are quoted into one."""
    import argparse

    args = list(sys.argv[1:] if argv is None else argv)
    split = args.index("--") if "--" in args else len(args)
    options, words = args[:split], args[split + 1:]
    parser = argparse.ArgumentParser(prog="python3 -m trainyard.runtime")
    sub = parser.add_subparsers(dest="verb", required=True)
    cmd = sub.add_parser("launch", help="run COMMAND as a group of workers on this machine")
    cmd.add_argument("--workers", type=int, required=True)
    cmd.add_argument("--gpu-ids", default=os.environ.get("CUDA_VISIBLE_DEVICES", ""),
                     help="comma-separated device ids to share out (default: "
                     "$CUDA_VISIBLE_DEVICES)")
    cmd.add_argument("--no-forward", action="store_true",
                     help="do not pass TERM, INT and USR1 on: the caller signals every worker")
    cmd.add_argument("--grace", type=float, default=STOP_GRACE)
    cmd.add_argument("--framework", choices=FRAMEWORKS, default="both",
                     help="whose variables the workers get (default: both sets)")
    parsed = parser.parse_args(options)
    if not words:
        parser.error("give the command to run after --")
    command = words[0] if len(words) == 1 else shlex.join(words)
    gpu_ids = [gpu for gpu in parsed.gpu_ids.split(",") if gpu]
    problem = _launch_problem(parsed.workers, gpu_ids)
    if problem:
        parser.error(problem)
    return launch(command, parsed.workers, gpu_ids, forward_signals=not parsed.no_forward,
                  grace=parsed.grace, framework=parsed.framework)


if __name__ == "__main__":
    sys.exit(main())
