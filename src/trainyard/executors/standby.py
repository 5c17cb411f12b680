"""Wrappers started ahead of their jobs, each already inside a process cap of its own.

A process joins a pids cgroup v1 through the kernel's threadgroup lock, taken for writing,
which waits for every CPU to pass a quiescent state: 10-20 ms on a busy host, more than the
rest of a local launch. A standby is a shell that has joined a cgroup of its own ahead of
time and waits on a pipe for its job's script; a launch renames that cgroup to the job's
handle (a rename is cheap) and writes the script into the pipe, and the shell runs it in its
own place, so that its pid is the job's wrapper's and the service's child.

The script moves into the job's working directory, points its streams at the job's log,
exports the job's environment and nothing else (the standby starts with an empty one; the
shell adds PWD, as it does for a wrapper started directly), and runs the wrapper in the
standby's own shell rather than exec a new one. That shell's command line names no job, so
the job's wrapper is told by its cap instead (LocalExecutor._is_ours). A job whose
environment the shell could not export as it is (a name that is not a plain one, or one the
shell keeps for itself) is launched directly instead, and so is every job where no cgroup
can be renamed (cgroup v2 allows no rename): then each wrapper joins its cap itself.

A standby that loses its service reads the end of its pipe and exits; its empty cgroup is
removed by the next service to start (PidsLimit.sweep_standbys)."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import select
import shlex
import subprocess
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from trainyard.executors.pids_limit import PidsLimit

log = logging.getLogger(__name__)

# $1 the cgroup.procs of its cap. It joins the cap, says so on its standard output, then
# reads its job's script from its standard input and runs it in place: no file is written
# for it. The script is one brace group, which the shell reads whole before it runs any of
# it, so a service gone midway leaves an unfinished group that runs nothing; the end of an
# input with none (the service closed it, or is gone) ends the standby as well.
STDIN = "/dev/stdin"  # the standby's own input, by a name `.` can read
SCRIPT = rf"""
printf '%s\n' "$$" > "$1" || exit 0
echo ready
. {STDIN}
exit 0
"""
READY = b"ready\n"
ARGV0 = "trainyard-standby"  # a standby's $0: in its command line, also once it runs a job
DEFAULT_STANDBYS = 2  # kept ready at once: launches that come together beyond it start directly
_NAMES = itertools.count(1)  # one count for the process: its executors share the pids base
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# What the shell sets, reads or keeps read-only for itself (dash, and bash where it is
# /bin/sh): exported from a script, they would not reach the job as given, would change how
# the script runs, or would end it (bash exits on an export of a read-only name).
_SHELL_OWN = frozenset({"PWD", "OLDPWD", "IFS", "PS1", "PS2", "PS4", "OPTIND", "PPID", "ENV",
                        "MAIL", "MAILCHECK", "MAILPATH", "HISTSIZE", "HISTFILE", "LINENO", "_",
                        "UID", "EUID", "GROUPS", "SECONDS", "RANDOM", "SRANDOM", "SHELLOPTS",
                        "POSIXLY_CORRECT", "EPOCHSECONDS", "EPOCHREALTIME", "HOSTNAME"})


def exportable(env: Mapping[str, str]) -> bool:
    """Whether a script can give a job exactly this environment."""
    return all(_PLAIN_NAME.match(name) and name not in _SHELL_OWN and
               not name.startswith("BASH") and "\0" not in value for name, value in env.items())


def job_script(cwd: Path, log_file: Path, env: Mapping[str, str], script: str,
               args: Sequence[str]) -> str:
    """The script a standby runs in place: into `cwd`, output appended to `log_file`, `env`
    exported, then `script` run by the standby's own shell with `args` as its positional
    parameters; the standby then exits with its status. No shell of the job's own is
    exec'd: on a busy host, a millisecond of a launch. One brace group, which the shell
    reads whole before it runs any of it."""
    lines = [f"cd -- {shlex.quote(str(cwd))} || exit 126", "unset OLDPWD",
             f"exec </dev/null >>{shlex.quote(str(log_file))} 2>&1"]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in env.items()]
    lines += ["set -- " + shlex.join(args), script, "exit"]
    return "{\n" + "\n".join(lines) + "\n}\n"


@dataclass
class Standby:
    proc: subprocess.Popen[bytes]
    group: str  # its cgroup's name under the pids base
    joined: bool | None = None  # None: not yet known

    def check(self) -> bool | None:
        """True once it has joined its cap, None while it has not yet, False if it never
        will (it is gone)."""
        out = self.proc.stdout
        if self.joined is None and out is not None:
            try:
                poller = select.poll()  # not select(): the pipe's fd may be past 1024
                poller.register(out, select.POLLIN)
                if not poller.poll(0):
                    return None
                self.joined = out.readline() == READY
            except (OSError, ValueError):
                self.joined = False
            _close(out)
        if self.joined and self.proc.poll() is not None:
            self.joined = False  # it died while it waited
        return self.joined


@dataclass
class Standbys:
    """The standbys of one executor: up to `count` kept, made on the caller's thread by
    refill(), taken by launches."""

    pids: PidsLimit
    count: int = DEFAULT_STANDBYS
    _waiting: list[Standby] = field(default_factory=list)
    _closed: bool = False
    _usable: bool | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        # An executor dropped without close() ends its standbys too (and at exit).
        self._end = weakref.finalize(self, _discard_all, self._waiting, self.pids)

    @property
    def wanted(self) -> bool:
        """Whether standbys would help: jobs have caps to join, and standbys are asked for."""
        return self.count > 0 and self.pids.base is not None

    @property
    def usable(self) -> bool:
        """Whether refill() has found that caps made ahead can become jobs' (until it has
        looked, on its own thread, they are taken as not)."""
        return self._usable is True

    def ready(self) -> int:
        """How many standbys wait inside their caps now."""
        with self._lock:
            return sum(1 for standby in self._waiting if standby.check())

    def take(self) -> Standby | None:
        """A standby inside its cap, ready for a job; None if none is."""
        with self._lock:
            for standby in list(self._waiting):
                state = standby.check()
                if state is None:
                    continue
                self._waiting.remove(standby)
                if state:
                    return standby
                self.discard(standby)
        return None

    def hand_over(self, standby: Standby, handle: str, script: bytes) -> bool:
        """Give the standby the job of `handle`: its cap becomes the handle's, and it runs
        `script` (job_script's). False if it could not be given: the standby is then gone,
        and a cap already renamed stays the handle's, empty, for a direct launch to use."""
        if not self.pids.take_over(standby.group, handle):
            self.discard(standby)
            return False
        stdin = standby.proc.stdin
        assert stdin is not None
        try:
            stdin.write(script)
            stdin.close()
        except OSError:  # it is gone: its cap is the handle's now, and empty
            _close(stdin)
            standby.proc.kill()
            standby.proc.wait()
            return False
        return True

    def refill(self) -> None:
        """Start standbys until `count` wait (each joins its cap on its own, without
        waiting here)."""
        if self._usable is None:
            # A standby reads its script through STDIN (SCRIPT): without it each one
            # would end at its first job, which would then start directly.
            self._usable = self.pids.renames and Path(STDIN).exists()
        if not self._usable:
            return
        while True:
            with self._lock:
                if self._closed or len(self._waiting) >= self.count:
                    return
                name = f"{self.pids.STANDBY_PREFIX}{os.getpid()}-{next(_NAMES)}"
            procs = self.pids.standby_group(name)
            if procs is None:
                return
            try:
                proc = subprocess.Popen(
                    ["/bin/sh", "-c", SCRIPT, ARGV0, procs],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                    cwd="/", env={}, start_new_session=True, close_fds=True)
            except OSError as exc:
                log.warning("no standby wrapper could start: %s", exc)
                self.pids.remove_group(name)
                return
            with self._lock:
                standby = Standby(proc, name)
                if self._closed:
                    self.discard(standby)
                    return
                self._waiting.append(standby)

    def close(self) -> None:
        """End every standby still waiting, and remove their caps."""
        with self._lock:
            self._closed = True
            waiting = list(self._waiting)
            self._waiting.clear()
        self._end.detach()
        _discard_all(waiting, self.pids)

    def discard(self, standby: Standby) -> None:
        """End a standby taken and not handed over, and remove its cap."""
        _discard(standby, self.pids)


def _discard_all(waiting: list[Standby], pids: PidsLimit) -> None:
    while waiting:
        _discard(waiting.pop(), pids)


def _discard(standby: Standby, pids: PidsLimit) -> None:
    for stream in (standby.proc.stdin, standby.proc.stdout):
        _close(stream)
    try:
        standby.proc.wait(timeout=1.0)  # the end of its input ends it
    except subprocess.TimeoutExpired:
        standby.proc.kill()
        standby.proc.wait()
    pids.remove_group(standby.group)


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None:
        with contextlib.suppress(OSError):  # a pipe whose reader is gone
            stream.close()
