"""Local processes: each job in its own session and process group, under a tiny shell
wrapper that records the exit status in a file, so the outcome survives a service crash."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from trainyard.domain.log_cap import DEFAULT_MAX_LOG_BYTES, cut_note
from trainyard.executors.base import (
    KILLED_CODE,
    LAUNCHER,
    JobFiles,
    LaunchError,
    LaunchRequest,
    Observation,
    Phase,
    describe_exit,
    describe_forced_kill,
    gang_command,
    notice_env,
)
from trainyard.executors.exit_watch import exit_watch
from trainyard.executors.pids_limit import DEFAULT_PIDS_LIMIT, PidsLimit, in_cap_of
from trainyard.executors.standby import ARGV0 as STANDBY_ARGV0
from trainyard.executors.standby import DEFAULT_STANDBYS, Standbys, exportable, job_script

log = logging.getLogger(__name__)

# $1 command, $2 exit file, $3 pid file, $4 start file, $5 the log's cap in bytes, $6 the
# note at the cut (domain.log_cap), $7 the file the copier makes once it has copied all (see
# `_output_pending`), $8 the cgroup.procs of the job's process cap (empty: none), $9 the
# file the copier puts the first byte past the cap in, if there is one. The wrapper joins
# that cgroup and writes its pid before anything else, runs the command in a child shell
# and records its status; the command's output goes through the copier, which keeps the
# log to its cap.
# The wrapper ignores TERM, and so do the two sides of the pipeline from their fork on: the
# copier keeps the ignore (it runs no job), while the group around the command trades it
# for a handler before it starts the command, which so gets TERM's default. SIGUSR1, a
# preemption's notice to the whole group, stays ignored by all but a program that sets a
# handler for it: the shells between the wrapper and the job must not die of it. A half-written
# file reads as "not yet" and the wrapper is then still alive, so no rename is needed. The
# wrapper outlives a TERM sent to its group (the group's handler, unlike an ignore, is not
# inherited by the job), so a job that stops on TERM still has its status recorded; one
# that needs the KILL after the grace period takes the wrapper with it and leaves no exit
# file: the tracker knows it asked. The child is a subshell, forked without an exec of its
# own: it takes TERM's default back first (as a subshell does anyway for a caught signal),
# and a TERM between its fork and then would be lost; so it writes the start file only
# after, and a cancel waits for that file. It execs a shell of the command's own rather
# than eval it: a shell that runs a lone command in its place (bash does) must leave no
# shell between the group's TERM and a job that handles it.
# The copier is the log cap's rule in shell and coreutils, so that no interpreter starts
# for a job: `head -c` copies the first $5 bytes and reads no further (coreutils' reads ask
# for no more than is left; a head that read ahead would drop the note of an output that
# ends within its buffer past the cap, never the cap itself); one byte more, looked for by
# one more `head` into a file ($9, so that no command substitution forks a shell and two
# commands at every job's end; where that file cannot be written, as before), means the
# output was longer than the cap: the note, then the rest is read and discarded while the
# job runs on. (The shell's own `read` would look without starting a process, but it reads
# to a line's end and keeps it all: a progress bar past the cap, redrawn with CR, would
# grow the copier and throttle the job, and its note would wait for a newline.) That
# `head` is only started where the first may have stopped at the cap: the log's offset (its
# size, as it is appended to), read by `read` from /proc/self/fdinfo/1, a line of its own,
# below the cap means the output ended first, and the job's end then waits for no process
# (a millisecond on a busy host); where that file cannot be read, or the log held something
# before, the `head` looks as ever. Its processes inherit the ignored TERM and SIGUSR1, so
# a job stopping on TERM still has its last words copied. The copier's side of the pipe
# runs in the C locale, which a count of bytes needs no more of: its coreutils then read no
# locale files (a dozen, and half a millisecond of CPU, at every job's start beside its
# command's own); the job's side keeps the locale it was given.
WRAPPER = r"""
trap '' TERM USR1
[ -z "$8" ] || printf '%s\n' "$$" > "$8" 2>/dev/null
printf '%s\n' "$$" > "$3"
{
trap 'true' TERM
( trap - TERM; : > "$4"; exec /bin/sh -c "$1" ) </dev/null
printf '%s\n' "$?" > "$2"
} 2>&1 | {
export LC_ALL=C
head -c "$5"
{ read -r k n && [ "$k" = pos: ] && [ "$n" -lt "$5" ]; } 2>/dev/null </proc/self/fdinfo/1 ||
if head -c 1 2>/dev/null > "$9"; then [ ! -s "$9" ]; else [ "$(head -c 1 | wc -c)" -eq 0 ]; fi ||
{ printf '%s' "$6"; cat >/dev/null; }
: > "$7"
}
"""
# How long an exit waits for the copier to copy the output written before it: a process the
# job left behind may hold the output open, and the copier then never sees its end.
LOG_DRAIN_WAIT = 2.0
RELEASE_REAP_S = 2.0  # after a release's KILL, before its process cap's cgroup is removed
STARTING_TIMEOUT = 10.0  # a launched wrapper that wrote no pid by then never started
START_POLL_S = 0.002  # how often a launch looks for its command's start
# The most a standby's refill waits for the command of the launch that took one to start
# (a wrapper that joins its cap itself can take longer: it is then not waited for).
STARTING_QUIET_S = 0.05
# Every process a job's command starts inherits this, so leftovers are told apart from
# strangers (a wrapper a standby runs, and the shells it forks, keep the standby's empty
# environment: they are told by the job's cap).
HANDLE_ENV = "TRAINYARD_HANDLE"
# Where the kernel names this boot of the host: a handle's directory made in an earlier one
# is a launch the host's going down ended (LocalExecutor._claim_dir).
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
RESTARTED_NOTE = b"\n[trainyard: the host went down during this attempt's launch; it starts over]\n"
# What a job's process inherits from the service; everything else is the contract's.
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "HOME")


class LocalExecutor:
    name = "local"
    remote = False  # its jobs see this host's files
    started_by_launch = True
    ends_with_host = True

    def __init__(self, state_dir: Path, max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
                 pids_limit: int = DEFAULT_PIDS_LIMIT, standbys: int = DEFAULT_STANDBYS
                 ) -> None:
        self.state_dir = state_dir
        self.max_log_bytes = max_log_bytes
        self._pids = PidsLimit(pids_limit)  # each job's cap on its processes (0: none)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._listener: Callable[[str], None] = lambda handle: None
        self._watched: set[str] = set()
        self._timers: dict[str, threading.Timer] = {}  # forced kills after a cancel's grace
        self._lock = threading.Lock()
        # The kernel's slow cgroup work off the tracker's thread: removing caps, making
        # standbys.
        self._pids_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pids-cap")
        self._standbys = Standbys(self._pids, standbys)
        if self._standbys.wanted:
            self._refill_standbys()  # ahead of the first launch

    def set_exit_listener(self, listener: Callable[[str], None]) -> None:
        self._listener = listener

    def handle_for(self, job_id: str, attempt: int) -> str:
        return f"trainyard-{job_id}-{attempt}"

    # --- files that make up a handle's durable state ----------------------------------------

    def _dir(self, handle: str) -> Path:
        return _handle_files(self.state_dir, handle).dir

    def _exit_file(self, handle: str) -> Path:
        return _handle_files(self.state_dir, handle).exit

    def _pid_file(self, handle: str) -> Path:
        return _handle_files(self.state_dir, handle).pid

    def _start_file(self, handle: str) -> Path:
        return _handle_files(self.state_dir, handle).started

    def _killed_file(self, handle: str) -> Path:
        """Written before the KILL after a cancel's grace, holding that grace in seconds."""
        return _handle_files(self.state_dir, handle).killed

    def _copied_file(self, handle: str) -> Path:
        return _handle_files(self.state_dir, handle).copied

    def _past_cap_file(self, handle: str) -> Path:
        return _handle_files(self.state_dir, handle).past_cap

    def _boot_file(self, handle: str) -> Path:
        """The boot of the host its launch was made in (_claim_dir)."""
        return _handle_files(self.state_dir, handle).boot

    def _output_pending(self, handle: str) -> bool:
        """Whether the copier may still hold output the job wrote before its exit: it has
        not copied all, and the exit is recent."""
        try:
            if self._copied_file(handle).exists():
                return False
            return time.time() - self._exit_file(handle).stat().st_mtime < LOG_DRAIN_WAIT
        except OSError:
            return False

    def _started(self, handle: str) -> bool:
        """Whether the command runs: its shell wrote the start file. A wrapper that wrote its
        pid that long ago without one (of an older version, or stuck) counts as started."""
        try:
            return self._start_file(handle).exists() or \
                time.time() - self._pid_file(handle).stat().st_mtime > STARTING_TIMEOUT
        except OSError:
            return True  # cannot tell: treat it as running, as before this file existed

    # --- protocol ------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> None:
        if not request.runs_as_command:
            raise LaunchError("the local executor runs commands, not images")
        files = request.files
        self._claim_dir(request.handle, files)
        env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        env.update(request.contract(data=str(files.data), model=str(files.model),
                                    metrics=str(files.metrics),
                                    checkpoint=str(files.checkpoint),
                                    code=str(files.code) if files.code is not None else ""))
        # Exactly the allocated devices; none (an empty list) for a job that asked for none.
        # Numbered as the driver and the engine number them, not fastest first.
        env.update(notice_env(str(files.workdir)))
        env["CUDA_VISIBLE_DEVICES"] = ",".join(request.gpu_ids)
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        env[HANDLE_ENV] = request.handle
        # A code directory is the job's working directory (CODE_PATH).
        cwd = files.code if files.code is not None else files.workdir
        proc = self._launch_on_standby(request, cwd, env)
        if proc is None:
            try:
                with files.log.open("ab") as log_file:
                    proc = subprocess.Popen(
                        self._wrapper(request, self._pids.prepare(request.handle)),
                        cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log_file,
                        stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                    )
            except OSError as exc:
                raise LaunchError(f"could not start the process: {exc}") from exc
        if self._standbys.wanted:
            # Once the job's command runs, not beside its wrapper's start-up: the next
            # standby's (a fork of this process, then a shell) would compete with it for
            # the CPU.
            self._refill_standbys(after=request.handle)
        self._watch(request.handle, functools.partial(_wait_child, proc), child=proc.pid)

    def _claim_dir(self, handle: str, files: JobFiles) -> None:
        """Make the handle's directory for a launch, noting the boot it happened in. One
        already there is refused, unless it was made before this host last started: a launch
        that a power cut made the store forget (Launcher.launching_synced), whose job waits
        again under the same attempt and whose process the cut ended. That attempt starts
        over: the files of its launch go, and so do the metrics and model files its run
        left, which would be read as this run's; its log says so."""
        hdir = self._dir(handle)
        boot = _boot_id()
        try:
            hdir.mkdir(parents=True)
        except FileExistsError:
            if boot is None or _read_text(self._boot_file(handle)) == boot:
                raise LaunchError(f"{handle} was already launched once") from None
            shutil.rmtree(hdir)
            hdir.mkdir()
            _start_over(files)
            log.warning("%s: launched again, its first launch lost with the host", handle)
        if boot is not None:
            self._boot_file(handle).write_text(boot)

    def wait_command_started(self, handle: str, timeout: float) -> bool:
        """Block until the wrapper has started the job's command (its start file), at
        most `timeout` seconds. A local stat every START_POLL_S: finer, the waking
        thread would take CPU from the start-up it waits for."""
        deadline = time.monotonic() + timeout
        start = self._start_file(handle)
        while not start.exists():
            if time.monotonic() >= deadline:
                return False
            time.sleep(START_POLL_S)
        return True

    def _wrapper(self, request: LaunchRequest, cap: str) -> list[str]:
        """The wrapper's command line; `cap`: the cgroup.procs it joins ("" for none)."""
        return ["/bin/sh", "-c", WRAPPER, "trainyard-job", *self._wrapper_args(request, cap)]

    def _wrapper_args(self, request: LaunchRequest, cap: str) -> list[str]:
        handle = request.handle
        return [_command(request), str(self._exit_file(handle)), str(self._pid_file(handle)),
                str(self._start_file(handle)), str(self.max_log_bytes),
                cut_note(self.max_log_bytes).decode(), str(self._copied_file(handle)), cap,
                str(self._past_cap_file(handle))]

    def _launch_on_standby(self, request: LaunchRequest, cwd: Path, env: dict[str, str]
                           ) -> subprocess.Popen[bytes] | None:
        """The job started by a standby wrapper already inside its cap (executors.standby);
        None where it is to be started directly: no standby is ready, or its environment or
        working directory needs the direct start (which says what is wrong with them)."""
        standbys = self._standbys
        if not standbys.wanted:
            return None
        if not standbys.usable or not exportable(env) or not cwd.is_dir():
            return None  # (the first launch's refill looks whether they can be used)
        try:
            request.files.log.open("ab").close()  # as a direct start would, before anything
        except OSError as exc:
            raise LaunchError(f"could not start the process: {exc}") from exc
        try:
            # The standby's shell becomes the job's wrapper: it is already in the cap.
            script = job_script(cwd, request.files.log, env, WRAPPER,
                                self._wrapper_args(request, "")).encode()
        except UnicodeError:  # a value no script can carry: the direct start passes it
            return None
        standby = standbys.take()
        if standby is None:
            return None
        return standby.proc if standbys.hand_over(standby, request.handle, script) else None

    def _refill_standbys(self, after: str | None = None) -> None:
        """On the cap's worker; `after`: once that handle's command has started."""
        def refill() -> None:
            if after is not None:
                self.wait_command_started(after, STARTING_QUIET_S)
            self._standbys.refill()

        # RuntimeError: the interpreter is shutting down, and no more are needed.
        with contextlib.suppress(RuntimeError):
            self._pids_worker.submit(refill)

    def poll(self, handle: str) -> Observation:
        code = self._read_exit(handle)
        if code is not None:
            return self._exited(handle, code)
        with self._lock:
            watched = handle in self._watched
        if watched and self._start_file(handle).exists():
            # No status yet, its command has begun, and its wrapper is watched until it
            # ends (then its end is told, the exit listener): it runs. A tracker's pass
            # follows each running job by two lookups, not the half-dozen reads below.
            return Observation(Phase.RUNNING)
        pid = self._read_pid(handle)
        if pid is None:
            hdir = self._dir(handle)
            if not hdir.exists():
                return Observation(Phase.NOT_FOUND, message="the process was never started")
            if time.time() - hdir.stat().st_mtime > STARTING_TIMEOUT:
                return Observation(Phase.LOST, message="the process did not start")
            return Observation(Phase.STARTING)
        if self._is_ours(handle, pid):
            return Observation(Phase.RUNNING if self._started(handle) else Phase.STARTING)
        # The wrapper may have written the exit file just after we looked.
        code = self._read_exit(handle)
        if code is not None:
            return self._exited(handle, code)
        grace = self._read_killed(handle)
        if grace is not None:  # the KILL took the wrapper too: the status is that KILL's
            return self._exited(handle, KILLED_CODE, describe_forced_kill(grace))
        return Observation(Phase.LOST, message="the process ended without recording its exit "
                           "status (its process group was killed)")

    def _exited(self, handle: str, code: int, outcome: str = "") -> Observation:
        """How the job ended, with its process cap when it met it; RUNNING while its last
        output is still on its way to the log."""
        if self._output_pending(handle):
            return Observation(Phase.RUNNING)
        refused = self._pids.refused_forks(handle)
        if not refused:
            return Observation(Phase.EXITED, exit_code=code, message=outcome)
        return Observation(Phase.EXITED, exit_code=code, message=(
            f"{outcome or describe_exit(code)}; it reached its limit of {self._pids.limit} "
            f"processes ({refused} forks refused)"))

    def adopt(self, handle: str) -> Observation:
        obs = self.poll(handle)
        pid = self._read_pid(handle)
        if obs.phase is Phase.RUNNING and pid is not None:
            self._watch(handle, lambda: _wait_pid(pid, lambda: self._is_ours(handle, pid)))
        return obs

    def cancel(self, handle: str, grace_seconds: float) -> bool:
        ready, pid = self._signal_group(handle, signal.SIGTERM)
        if pid is None:
            return ready
        timer = threading.Timer(grace_seconds, self._force_kill,
                                args=(handle, pid, grace_seconds))
        timer.daemon = True
        with self._lock:
            self._timers[handle] = timer
        timer.start()
        return True

    def send_signal(self, handle: str, signum: int) -> bool:
        """The job's whole group gets `signum`; the wrapper and its log copier ignore
        SIGUSR1 as they ignore TERM, so only a job without a handler dies of it."""
        return self._signal_group(handle, signal.Signals(signum))[0]

    def _signal_group(self, handle: str, sig: signal.Signals) -> tuple[bool, int | None]:
        """Send `sig` to the job's group. Returns whether that is settled (sent, or nothing
        is left to signal) and the group's id once sent."""
        pid = self._read_pid(handle)
        if pid is None:
            # Not started yet, unless it never will be: then there is nothing to signal. Its
            # wrapper may write its pid (and its command start) between the read above and
            # the poll's: a poll that finds it running says ask again, not that it is over.
            return self.poll(handle).phase in (Phase.EXITED, Phase.LOST, Phase.NOT_FOUND), \
                None
        if not self._is_ours(handle, pid):
            return True, None  # already gone
        if not self._started(handle):
            # The command is not running yet and a signal now would reach only the wrapper:
            # ask again on the next pass.
            return False, None
        _signal_pgid(pid, sig)
        return True, pid

    def close(self) -> None:
        """End the standbys (waiter threads are daemons and end with the service)."""
        self._standbys.close()

    def unavailable(self) -> str | None:
        return None

    def sweep(self, active: set[str]) -> list[str]:
        """Nothing to sweep: a local job's leftovers die with its release, and a restarted
        service re-adopts or finalizes every handle the store knows."""
        return []

    def release(self, handle: str) -> None:
        """The job is final: kill what it left running in its group (a data loader, a
        `tensorboard &`) and drop any pending forced kill."""
        with self._lock:
            timer = self._timers.pop(handle, None)
        if timer is not None:
            timer.cancel()
        pid = self._read_pid(handle)
        if pid is not None:
            self._kill_group(handle, pid)
        # Off the caller's thread (the tracker's): the kernel takes a millisecond or more to
        # remove a cgroup.
        try:
            self._pids_worker.submit(self._remove_cap, handle)
        except RuntimeError:  # the interpreter is shutting down: no thread to hand it to
            self._remove_cap(handle)

    def _remove_cap(self, handle: str) -> None:
        if not self._pids.remove(handle):
            # Its cgroup empties once the processes just killed are reaped.
            remover = threading.Timer(RELEASE_REAP_S, self._pids.remove, args=(handle,))
            remover.daemon = True
            remover.start()

    def _force_kill(self, handle: str, pgid: int, grace_seconds: float) -> None:
        """The grace after a TERM is over: KILL what still runs, saying so first."""
        if self._is_ours(handle, pgid):
            with contextlib.suppress(OSError):
                self._killed_file(handle).write_text(f"{grace_seconds:g}\n")
        self._kill_group(handle, pgid)

    def _kill_group(self, handle: str, pgid: int) -> None:
        """SIGKILL every process of the job's group. A group id is only reused once its group
        is empty, but each process is also checked for the job's handle (in its environment,
        or its cap's name) before it dies."""
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return  # the group is empty
        marker = f"{HANDLE_ENV}={handle}\0".encode()
        for pid in _group_members(pgid):
            try:
                if marker in Path(f"/proc/{pid}/environ").read_bytes() or \
                        in_cap_of(pid, handle):
                    os.kill(pid, signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue

    # --- helpers -------------------------------------------------------------------------

    def _watch(self, handle: str, wait: Callable[[], None], child: int | None = None) -> None:
        """Tell the listener once `wait` returns: the handle's process has ended. For a child
        of ours (its pid, whose status `wait` then collects at once) the process's one exit
        watch waits, and a thread of its own only where the kernel has no pidfd."""
        with self._lock:
            if handle in self._watched:
                return
            self._watched.add(handle)

        def ended() -> None:
            try:
                wait()
            finally:
                with self._lock:
                    self._watched.discard(handle)
                self._listener(handle)

        if child is None or not exit_watch().watch(child, ended):
            try:
                threading.Thread(target=ended, name=f"wait-{handle}", daemon=True).start()
            except RuntimeError:  # no thread to watch it: its polls read its files
                with self._lock:
                    self._watched.discard(handle)
                raise

    def _read_exit(self, handle: str) -> int | None:
        try:
            return int(self._exit_file(handle).read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _read_killed(self, handle: str) -> float | None:
        try:
            return float(self._killed_file(handle).read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _read_pid(self, handle: str) -> int | None:
        try:
            return int(self._pid_file(handle).read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _is_ours(self, handle: str, pid: int) -> bool:
        """True if pid is alive and is this handle's wrapper (not a recycled pid)."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return False
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False  # a zombie has exited; its parent has not reaped it yet
        if str(self._exit_file(handle)).encode() in cmdline:
            return True  # a wrapper started directly
        # A standby runs its job's wrapper in its own shell, whose command line names no
        # handle; it is this handle's if it is in the handle's cap, which only the standby
        # handed this job was renamed to.
        return f"\0{STANDBY_ARGV0}\0".encode() in cmdline and in_cap_of(pid, handle)


@dataclass(frozen=True)
class _HandleFiles:
    dir: Path
    exit: Path
    pid: Path
    started: Path
    killed: Path
    copied: Path
    past_cap: Path
    boot: Path


@functools.lru_cache(maxsize=1024)
def _handle_files(state_dir: Path, handle: str) -> _HandleFiles:
    """The files of a handle's durable state; made once for the handles in use, since each
    pass reads some of them for every active job (a path is a dozen objects to build)."""
    if "/" in handle or handle.startswith("."):
        raise ValueError(f"bad handle {handle!r}")
    hdir = state_dir / handle
    return _HandleFiles(dir=hdir, exit=hdir / "exit", pid=hdir / "pid",
                        started=hdir / "started", killed=hdir / "killed",
                        copied=hdir / "copied", past_cap=hdir / "past-cap",
                        boot=hdir / "boot")


@functools.cache
def _boot_id() -> str | None:
    """This boot of the host, as the kernel names it; None where it does not say."""
    return _read_text(BOOT_ID) or None


def _read_text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _start_over(files: JobFiles) -> None:
    """Clear what an attempt's run left for one that starts it over: its metrics and model
    files (its checkpoints stay, to resume from), and a line in its log between the two."""
    with contextlib.suppress(FileNotFoundError):
        os.truncate(files.metrics, 0)
    if files.model.is_dir():
        shutil.rmtree(files.model)  # links in it are removed, never followed
        files.model.mkdir()
    with files.log.open("ab") as log_file:
        log_file.write(RESTARTED_NOTE)


def _command(request: LaunchRequest) -> str:
    """What the wrapper runs: the job's command, or for several workers the gang launcher
    around it. The launcher stays in the job's process group, so a cancel's TERM reaches
    every worker directly and the launcher need not pass it on; its exit status is the
    job's."""
    if request.workers == 1:
        return request.command
    argv = gang_command(sys.executable, str(LAUNCHER), request.workers, request.gpu_ids,
                        request.command, forward_signals=False, framework=request.framework)
    return "exec " + shlex.join(argv)


def _wait_child(proc: subprocess.Popen[bytes]) -> None:
    proc.wait()


def _wait_pid(pid: int, alive: Callable[[], bool]) -> None:
    """Wait for a process that is not our child: pidfd where the kernel has it, else polling."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        while alive():
            time.sleep(0.2)
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while not poller.poll(1000):
            if not alive():
                break
    finally:
        os.close(fd)


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _signal_pgid(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
