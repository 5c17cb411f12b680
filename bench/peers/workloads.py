"""The three workloads, the same for every system, driven through one small protocol.

Every job is a shell command, and every job stamps the wall clock (`date +%s%N`, ns) into
a file of its own when its command starts and, for the longer jobs, when it ends. Those
stamps are what the latencies, gaps and makespans are computed from, for every system
alike: no system's own bookkeeping (Slurm's times have 1 s resolution, Ray's "start_time"
is the time of the submit) is trusted for them. A system only answers two questions:
"submit this command" and "is any of these jobs unfinished"."""

from __future__ import annotations

import math
import os
import resource
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from peers import figures as fig
from peers.figures import CpuSample, parse_proc_stat

POLL_S = 0.1  # how often "all finished?" is asked, the same for every system
SUBMITTERS = 8  # concurrent submitting clients, the same for every system
STAMP_POLL_S = 0.002  # waiting for a job's own start stamp: a local stat


class System(Protocol):
    """One system under test."""

    name: str

    def submit(self, key: str, command: str) -> str:
        """Submit `command` as one job; its id. Called from several threads at once."""
        ...

    def unfinished(self, ids: Sequence[str]) -> bool:
        """Whether any of `ids` has not finished yet, as the system itself reports it."""
        ...

    def cancel(self, ids: Sequence[str]) -> None:
        """Stop what is left of `ids` (after a time cap)."""
        ...


@dataclass(frozen=True)
class Stamps:
    """The directory jobs stamp their start and end into."""

    root: Path

    def start_cmd(self, key: str) -> str:
        return f"date +%s%N > {shlex.quote(str(self.root / key))}.start"

    def end_cmd(self, key: str) -> str:
        return f"date +%s%N > {shlex.quote(str(self.root / key))}.end"

    def read(self, key: str, kind: str) -> int | None:
        try:
            return int((self.root / f"{key}.{kind}").read_text().strip())
        except (OSError, ValueError):
            return None  # not started (yet), or being written

    def collect(self, keys: Sequence[str], kind: str) -> dict[str, int]:
        return {k: v for k in keys if (v := self.read(k, kind)) is not None}


def trivial_command(stamps: Stamps, key: str) -> str:
    return f"{stamps.start_cmd(key)}; true"


def timed_command(stamps: Stamps, key: str, body: str) -> str:
    return f"{stamps.start_cmd(key)}; {body}; {stamps.end_cmd(key)}"


# --- submitting and waiting ---------------------------------------------------------------------

@dataclass
class Submitted:
    ids: dict[str, str] = field(default_factory=dict)  # key -> system's id
    at_ns: dict[str, int] = field(default_factory=dict)  # key -> wall clock before the call
    first_ns: int = 0
    last_ns: int = 0  # when the last call returned
    errors: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return (self.last_ns - self.first_ns) / 1e9

    @property
    def per_s(self) -> float:
        return fig.rate(len(self.ids), self.seconds)


def submit_all(system: System, jobs: Sequence[tuple[str, str]], cap_s: float) -> Submitted:
    """Submit every (key, command) from SUBMITTERS threads, as fast as the system takes
    them; stop submitting at the cap."""
    out = Submitted()
    lock = threading.Lock()
    deadline = time.monotonic() + cap_s

    def one(job: tuple[str, str]) -> None:
        key, command = job
        if time.monotonic() > deadline:
            return
        t0 = time.time_ns()
        try:
            job_id = system.submit(key, command)
        except Exception as exc:  # a refusal or a timeout: counted, and the run goes on
            with lock:
                out.errors.append(f"{type(exc).__name__}: {exc}"[:300])
            return
        t1 = time.time_ns()
        with lock:
            out.ids[key], out.at_ns[key] = job_id, t0
            out.last_ns = max(out.last_ns, t1)

    out.first_ns = time.time_ns()
    with ThreadPoolExecutor(SUBMITTERS, thread_name_prefix=f"submit-{system.name}") as pool:
        list(pool.map(one, jobs))
    return out


def wait_finished(system: System, ids: Sequence[str], cap_s: float) -> int | None:
    """Poll until the system reports all of `ids` finished: the wall clock (ns) of the poll
    that saw it, or None at the cap (what is left is then cancelled)."""
    deadline = time.monotonic() + cap_s
    while time.monotonic() < deadline:
        if not system.unfinished(ids):
            return time.time_ns()
        time.sleep(POLL_S)
    system.cancel(ids)
    return None


def wait_stamp(stamps: Stamps, key: str, cap_s: float) -> int | None:
    deadline = time.monotonic() + cap_s
    while time.monotonic() < deadline:
        if (value := stamps.read(key, "start")) is not None:
            return value
        time.sleep(STAMP_POLL_S)
    return None


# --- where the CPU goes ------------------------------------------------------------------------

def machine_cpu_s() -> float:
    """Busy CPU seconds of the whole machine since boot. Per-process counters cannot follow
    a system whose helpers come and go (Ray starts a process per job, Slurm's slurmstepd
    leaves its parent), so a system's CPU is the machine's minus the client's."""
    return read_cpu().busy / os.sysconf("SC_CLK_TCK")


def client_cpu_s() -> float:
    """CPU seconds of this process and the children it reaped (sbatch, the CLI calls): the
    submitting side."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


# --- workload 1: trivial jobs -------------------------------------------------------------------

@dataclass(frozen=True)
class Trivial:
    jobs: int
    submitted: int
    submit_per_s: float
    e2e_seconds: float  # first submit -> all reported finished (or the cap)
    finished: int  # jobs that ran, by their stamps, when the clock stopped
    capped: bool
    burst_start_ms: list[float]  # submit -> start under the burst, queueing included
    errors: list[str]
    # CPU per submit over the submit window: the machine's but the client's (the system's
    # processes, and the jobs that started meanwhile), and the submitting client's.
    system_cpu_ms_per_submit: float
    client_cpu_ms_per_submit: float
    ids: list[str] = field(default_factory=list)

    @property
    def e2e_jobs_per_s(self) -> float:
        return fig.rate(self.finished, self.e2e_seconds)


def trivial(system: System, stamps: Stamps, jobs: int, cap_s: float) -> Trivial:
    keys = [f"trivial-{i}" for i in range(jobs)]
    machine_cpu, client_cpu = machine_cpu_s(), client_cpu_s()
    sub = submit_all(system, [(k, trivial_command(stamps, k)) for k in keys], cap_s)
    client_cpu = client_cpu_s() - client_cpu
    system_cpu = machine_cpu_s() - machine_cpu - client_cpu
    done = wait_finished(system, list(sub.ids.values()), cap_s)
    end = done if done is not None else time.time_ns()
    starts = stamps.collect(keys, "start")
    return Trivial(jobs=jobs, submitted=len(sub.ids), submit_per_s=sub.per_s,
                   e2e_seconds=(end - sub.first_ns) / 1e9,
                   finished=len(starts) if done is None else len(sub.ids),
                   capped=done is None, burst_start_ms=fig.latencies_ms(sub.at_ns, starts),
                   errors=sub.errors,
                   system_cpu_ms_per_submit=fig.ratio(system_cpu * 1000, len(sub.ids)),
                   client_cpu_ms_per_submit=fig.ratio(client_cpu * 1000, len(sub.ids)),
                   ids=list(sub.ids.values()))


@dataclass(frozen=True)
class StartLatency:
    samples_ms: list[float]
    failures: int


def start_latency(system: System, stamps: Stamps, samples: int, cap_s: float) -> StartLatency:
    """One trivial job at a time on an idle system: client's submit call -> the job's own
    start stamp. Each sample waits until the job is reported finished."""
    deadline = time.monotonic() + cap_s
    out: list[float] = []
    failures = 0
    for i in range(samples):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        key = f"start-{i}"
        t0 = time.time_ns()
        try:
            job_id = system.submit(key, trivial_command(stamps, key))
        except Exception:
            failures += 1
            continue
        started = wait_stamp(stamps, key, left)
        if started is None or wait_finished(system, [job_id], max(1.0, left)) is None:
            failures += 1
            continue
        out.append((started - t0) / 1e6)
    return StartLatency(out, failures)


# --- workload 2: short training jobs --------------------------------------------------------

def read_cpu() -> CpuSample:
    return parse_proc_stat(Path("/proc/stat").read_text())


class CpuSampler:
    """/proc/stat every `period` s in a thread: the utilisation curve for the chart."""

    def __init__(self, period: float = 0.5) -> None:
        self.period = period
        self.samples: list[tuple[float, CpuSample]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.time(), read_cpu()))
            self._stop.wait(self.period)

    def curve(self, t0: float) -> list[tuple[float, float]]:
        """(seconds since t0, utilisation over the period before it)."""
        pairs = zip(self.samples, self.samples[1:], strict=False)
        return [(round(t - t0, 2), round(fig.utilisation(a, b), 3))
                for (_, a), (t, b) in pairs if t >= t0]


@dataclass(frozen=True)
class Training:
    jobs: int
    finished: int
    makespan_s: float  # first submit -> all reported finished (or the cap)
    capped: bool
    cpu_utilisation: float  # over the makespan, the whole machine
    busy_share: float  # the jobs' own run time / (makespan x slots)
    gaps_ms: list[float]
    run_s: list[float]  # each job's own run time, start stamp -> end stamp
    cpu_curve: list[tuple[float, float]]
    errors: list[str]


def training(system: System, stamps: Stamps, jobs: int, slots: int, body: Callable[[str], str],
             cap_s: float) -> Training:
    """`jobs` training runs submitted at once, `slots` at a time (each system is set up to
    run that many one-CPU jobs at once)."""
    keys = [f"train-{i}" for i in range(jobs)]
    with CpuSampler() as sampler:
        before = read_cpu()
        sub = submit_all(system, [(k, timed_command(stamps, k, body(k))) for k in keys], cap_s)
        done = wait_finished(system, list(sub.ids.values()), cap_s)
        after = read_cpu()
    end = done if done is not None else time.time_ns()
    starts, ends = stamps.collect(keys, "start"), stamps.collect(keys, "end")
    runs = [(ends[k] - starts[k]) / 1e9 for k in keys if k in starts and k in ends]
    makespan = (end - sub.first_ns) / 1e9
    return Training(
        jobs=jobs, finished=len(runs), makespan_s=makespan, capped=done is None,
        cpu_utilisation=fig.utilisation(before, after),
        busy_share=sum(runs) / (makespan * slots) if makespan > 0 else math.nan,
        gaps_ms=fig.handoff_gaps_ms(list(starts.values()), list(ends.values()), slots),
        run_s=runs, cpu_curve=sampler.curve(sub.first_ns / 1e9), errors=sub.errors)


# --- workload 3: a burst behind long jobs -----------------------------------------------------

@dataclass(frozen=True)
class Burst:
    jobs: int
    wait_ms: list[float]  # submit -> start of each burst job
    first_start_after_free_ms: float  # first long job's end -> first burst start
    last_start_after_free_ms: float  # last long job's end -> last burst start
    capped: bool


def burst(system: System, stamps: Stamps, jobs: int, long_jobs: int, long_s: float,
          cap_s: float) -> Burst:
    """`long_jobs` jobs of `long_s` s take every slot; once both run, `jobs` trivial jobs
    arrive at once. They can only start as the long jobs end: what counts is how long
    after that they start."""
    long_keys = [f"long-{i}" for i in range(long_jobs)]
    long_sub = submit_all(system, [(k, timed_command(stamps, k, f"sleep {long_s:g}"))
                                   for k in long_keys], cap_s)
    for key in long_keys:
        wait_stamp(stamps, key, cap_s)
    time.sleep(min(1.0, long_s / 4))  # the long jobs are under way, not just launched
    keys = [f"burst-{i}" for i in range(jobs)]
    sub = submit_all(system, [(k, trivial_command(stamps, k)) for k in keys], cap_s)
    done = wait_finished(system, list(long_sub.ids.values()) + list(sub.ids.values()), cap_s)
    starts = stamps.collect(keys, "start")
    long_ends = sorted(stamps.collect(long_keys, "end").values())
    burst_starts = sorted(starts.values())
    first = last = math.nan
    if long_ends and burst_starts:
        first = (burst_starts[0] - long_ends[0]) / 1e6
        last = (burst_starts[-1] - long_ends[-1]) / 1e6
    return Burst(jobs=jobs, wait_ms=fig.latencies_ms(sub.at_ns, starts),
                 first_start_after_free_ms=first, last_start_after_free_ms=last,
                 capped=done is None)
