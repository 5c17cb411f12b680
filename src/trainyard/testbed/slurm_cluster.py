"""A real Slurm cluster on this machine, from Debian's slurm-wlm: munged, slurmctld and one
slurmd per node as children of this process, configuration, spool, state and logs in one
directory, every daemon on loopback. The tests, the benchmarks and `make demo-slurm` start it;
the service never does.

Several nodes share this host: each is a `slurmd -N <name>` with its own port, all with
NodeAddr=127.0.0.1, and CommunicationParameters=NoInAddrAny,NoCtldInAddrAny keeps every
daemon listening on loopback only. A node's CPUs and memory are declared (SlurmdParameters=
config_overrides, so slurmd takes them as given) or, left out, this machine's, as
`slurmd -C` reports them.

Every child carries a marker in its environment; the processes Slurm forks for jobs
(slurmstepd, the job's own) inherit it, so stop() finds and ends all of them by pid, and
nothing else on the machine is touched. Every wait is bounded."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

MARKER_ENV = "TRAINYARD_TESTBED"
START_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
BINARIES = ("slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo",
            "munged", "mungekey")


def available() -> str | None:
    """Why a Slurm cluster cannot be started here, or None."""
    missing = [b for b in BINARIES if shutil.which(b) is None]
    return f"not installed: {', '.join(missing)} (apt-get install slurm-wlm munge)" \
        if missing else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Node:
    name: str
    cpus: int | None = None  # None: this machine's CPUs and memory, as slurmd -C says
    memory_mb: int | None = None


@dataclass(frozen=True)
class Settings:
    """The cluster's shape and the few settings that differ between uses; None leaves a
    setting at Slurm's default."""

    nodes: tuple[Node, ...]
    partition: str = "debug"
    cluster_name: str = "trainyard"
    # How soon a node whose slurmd stopped answering is marked DOWN (its jobs NODE_FAIL).
    slurmd_timeout_s: int | None = None
    # How long the controller keeps an ended job, which is all a cluster without
    # accounting can tell of it.
    min_job_age_s: int | None = None
    select_parameters: str = "CR_Core"
    extra_lines: tuple[str, ...] = ()


def two_nodes(cpus: int = 2, memory_mb: int = 2048) -> Settings:
    """The tests' cluster: n1 and n2, quick to notice a dead node, remembering ended jobs."""
    return Settings(nodes=(Node("n1", cpus, memory_mb), Node("n2", cpus, memory_mb)),
                    slurmd_timeout_s=5, min_job_age_s=600,
                    # A cancelled job's tasks are KILLed this long after its TERM; a
                    # command gives up on a controller that is away this soon.
                    extra_lines=("KillWait=2", "MessageTimeout=3"))


def _this_machine() -> str:
    """This machine's hardware fields (CPUs, sockets, cores, threads, RealMemory), as
    `slurmd -C` describes it."""
    done = subprocess.run(["slurmd", "-C"], capture_output=True, timeout=CALL_TIMEOUT_S,
                          check=False)
    out = done.stdout.decode(errors="replace")
    line = next((ln for ln in out.splitlines() if ln.startswith("NodeName=")), "")
    if not line:
        raise RuntimeError(f"slurmd -C printed no NodeName line: {out[-300:]}")
    return re.sub(r"^NodeName=\S+\s*", "", line)


def node_line(node: Node, port: int | None) -> str:
    if node.cpus is None:
        hardware = _this_machine()
    else:
        hardware = f"CPUs={node.cpus}" + (f" RealMemory={node.memory_mb}"
                                          if node.memory_mb is not None else "")
    port_part = f" Port={port}" if port is not None else ""
    return f"NodeName={node.name} {hardware} NodeAddr=127.0.0.1{port_part} State=UNKNOWN"


def config(root: Path, settings: Settings, hostname: str, ctld_port: int,
           node_ports: Mapping[str, int]) -> str:
    declared = any(node.cpus is not None for node in settings.nodes)
    lines = [
        f"ClusterName={settings.cluster_name}",
        f"SlurmctldHost={hostname}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root / 'munge' / 'munge.sock'}",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool' / '%n'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'slurmd-%n.pid'}",
        f"SlurmctldLogFile={root / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'slurmd-%n.log'}",
        "SelectType=select/cons_tres",
        f"SelectTypeParameters={settings.select_parameters}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "MpiDefault=none",
        "ReturnToService=2",
        "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny",
    ]
    if len(node_ports) == 1:
        lines.append(f"SlurmdPort={next(iter(node_ports.values()))}")
    if declared:
        lines.append("SlurmdParameters=config_overrides")
    if settings.slurmd_timeout_s is not None:
        lines.append(f"SlurmdTimeout={settings.slurmd_timeout_s}")
    if settings.min_job_age_s is not None:
        lines.append(f"MinJobAge={settings.min_job_age_s}")
    lines.extend(settings.extra_lines)
    several = len(settings.nodes) > 1
    for node in settings.nodes:
        lines.append(node_line(node, node_ports[node.name] if several else None))
    names = ",".join(node.name for node in settings.nodes)
    lines.append(f"PartitionName={settings.partition} Nodes={names} Default=YES "
                 "MaxTime=INFINITE State=UP")
    return "\n".join([*lines, ""])


@dataclass
class SlurmCluster:
    """A started cluster: its environment for the Slurm commands, and its daemons, which a
    fault test may stop and start again."""

    root: Path
    settings: Settings
    base_env: Mapping[str, str]
    marker: str = field(default_factory=lambda: secrets.token_hex(6))
    _munged: subprocess.Popen[bytes] | None = None
    _ctld: subprocess.Popen[bytes] | None = None
    _slurmds: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """What a Slurm command needs to reach this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    @property
    def partition(self) -> str:
        return self.settings.partition

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(node.name for node in self.settings.nodes)

    def child_env(self) -> dict[str, str]:
        return {**self.base_env, **self.env, MARKER_ENV: self.marker}

    def command(self, argv: Sequence[str], timeout: float = CALL_TIMEOUT_S) -> str:
        """Run a Slurm command against this cluster; its output, or RuntimeError."""
        done = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True,
                              env=self.child_env(), cwd=self.root, timeout=timeout,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]}: {done.stderr.decode(errors='replace')[-300:]}")
        return done.stdout.decode(errors="replace")

    # -- the daemons -------------------------------------------------------------------

    def _spawn(self, argv: Sequence[str], log: str) -> subprocess.Popen[bytes]:
        with (self.root / log).open("ab") as out:
            return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=self.child_env(),
                                    cwd=self.root, start_new_session=True)

    def start_munged(self) -> None:
        munge = self.root / "munge"
        self._munged = self._spawn(
            ["munged", "--foreground", f"--socket={munge / 'munge.sock'}",
             f"--key-file={munge / 'munge.key'}", f"--pid-file={munge / 'munged.pid'}",
             f"--log-file={munge / 'munged.log'}", f"--seed-file={munge / 'seed'}",
             "--force"], "munged.out")
        _wait(lambda: (munge / "munge.sock").exists(), "munged", self._munged)

    def start_controller(self, *, fresh: bool = False) -> None:
        """slurmctld; not fresh, it recovers the jobs and nodes in StateSaveLocation."""
        # -i: ignore errors in state files (a fresh directory has none).
        flags = ["-i"] if fresh else ["-R"]
        self._ctld = self._spawn(["slurmctld", "-D", *flags], "slurmctld.out")
        _wait(self.controller_answers, "slurmctld", self._ctld)

    def kill_controller(self) -> None:
        """SIGKILL slurmctld, as a crash would; its saved state stays."""
        if self._ctld is not None:
            stop_group(self._ctld, signal.SIGKILL)
            self._ctld = None

    def start_node(self, name: str) -> None:
        self._slurmds[name] = self._spawn(["slurmd", "-D", "-N", name], f"slurmd-{name}.out")

    def kill_node(self, name: str) -> None:
        """SIGKILL one node's slurmd: the controller marks the node DOWN once SlurmdTimeout
        passes without an answer (the job steps it ran die with it here)."""
        proc = self._slurmds.pop(name, None)
        if proc is not None:
            stop_group(proc, signal.SIGKILL)
        for pid in self._marked_pids():
            if _node_of(pid) == name:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def controller_answers(self) -> bool:
        try:
            self.command(["scontrol", "ping"], timeout=10.0)
        except (RuntimeError, subprocess.TimeoutExpired):
            return False
        return True

    def node_states(self) -> dict[str, str]:
        out = self.command(["sinfo", "--noheader", "--Node", "--format", "%N %T"])
        states = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def wait_idle(self, timeout: float = START_TIMEOUT_S) -> None:
        """Until every node is idle (after a start, or a node's return)."""
        names = set(self.node_names)

        def idle() -> bool:
            states = self.node_states()
            return set(states) == names and all(s == "idle" for s in states.values())
        try:
            _wait(idle, "the Slurm nodes", self._ctld, timeout)
        except RuntimeError as exc:  # say what they were doing instead
            raise RuntimeError(f"{exc}; {self._whats_there()}") from exc

    def _whats_there(self) -> str:
        try:
            states = self.node_states()
            queue = self.command(["squeue", "--noheader", "-o", "%i %T %N %j"]).strip()
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            return f"the controller does not answer ({exc})"
        return f"nodes {states}, jobs {queue.splitlines() or 'none'}"

    def cancel_all(self) -> None:
        with contextlib.suppress(Exception):
            self.command(["scancel", "--user", "root"])

    def stop(self) -> None:
        """Cancel every job, stop the daemons, then end whatever carries the marker."""
        if self._ctld is not None and self._ctld.poll() is None:
            self.cancel_all()
            with contextlib.suppress(Exception):
                _wait(lambda: not self.command(["squeue", "--noheader", "-t",
                                                "PD,R,CG,CF", "-o", "%i"]).strip(),
                      "scancel", None, timeout=15.0)
        for proc in [*self._slurmds.values(), self._ctld, self._munged]:
            if proc is not None:
                stop_group(proc, signal.SIGTERM)
        self._slurmds.clear()
        self._ctld = self._munged = None
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in self._marked_pids():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + STOP_TIMEOUT_S / 2
            while self._marked_pids() and time.monotonic() < deadline:
                time.sleep(0.1)

    def _marked_pids(self) -> list[int]:
        return marked_pids(MARKER_ENV, self.marker)


def _node_of(pid: int) -> str:
    """The node a job's process runs for (SLURMD_NODENAME in its environment), or ""."""
    with contextlib.suppress(OSError):
        for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if item.startswith(b"SLURMD_NODENAME="):
                return item.split(b"=", 1)[1].decode(errors="replace")
    return ""


@contextmanager
def cluster(root: Path, settings: Settings,
            base_env: Mapping[str, str] | None = None) -> Iterator[SlurmCluster]:
    """Start the cluster in `root` (created if needed); yield it once every node is idle;
    stop all of it on the way out. `base_env`: the daemons' environment (default: this
    process's)."""
    for sub in ("munge", "state", "spool", *(f"spool/{n.name}" for n in settings.nodes)):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o700)
    key = root / "munge" / "munge.key"
    if not key.exists():
        done = subprocess.run(["mungekey", "--create", f"--keyfile={key}"],
                              capture_output=True, timeout=CALL_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"mungekey: {done.stderr.decode(errors='replace')[-300:]}")
        key.chmod(0o400)
    hostname = socket.gethostname().split(".")[0]
    ports = {node.name: free_port() for node in settings.nodes}
    (root / "slurm.conf").write_text(config(root, settings, hostname, free_port(), ports))
    started = SlurmCluster(root, settings, dict(os.environ if base_env is None else base_env))
    try:
        started.start_munged()
        started.start_controller(fresh=True)
        for node in settings.nodes:
            started.start_node(node.name)
        started.wait_idle()
        yield started
    finally:
        started.stop()


def marked_pids(name: str, value: str) -> list[int]:
    """Live processes (not this one) whose environment holds name=value: what a run
    started, however far its children wandered from their parents."""
    marker = f"{name}={value}\0".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker in Path(entry.path, "environ").read_bytes():
                found.append(int(entry.name))
    return found


def stop_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM,
               timeout: float = STOP_TIMEOUT_S) -> None:
    """Signal the child's whole group; KILL the group if it has not ended in time."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout)


def _wait(ready: Callable[[], bool], what: str, proc: subprocess.Popen[bytes] | None,
          timeout: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except (RuntimeError, subprocess.TimeoutExpired):
            pass  # not answering yet
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        time.sleep(0.2)
    raise RuntimeError(f"{what} was not ready within {timeout:g} s")
