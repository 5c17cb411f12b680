"""The pure arithmetic of the peer benchmark: rates, latencies, CPU utilisation, idle gaps
between consecutive jobs, ratios and goal verdicts. No processes, no clocks: tested alone."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchlib import num, percentile


def rate(count: int, seconds: float) -> float:
    """Events per second; NaN for an empty or zero window."""
    return count / seconds if count and seconds > 0 else math.nan


def ratio(a: float | None, b: float | None) -> float:
    """a / b; NaN when either side is missing or b is zero."""
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return math.nan
    return a / b


def pct(values_ms: Sequence[float], q: float) -> float:
    return percentile(sorted(values_ms), q)


def latencies_ms(submitted_ns: Mapping[str, int], started_ns: Mapping[str, int]) -> list[float]:
    """Submit -> start of every job that has both times, in ms."""
    return [(started_ns[key] - t0) / 1e6 for key, t0 in submitted_ns.items()
            if key in started_ns]


# --- CPU utilisation from /proc/stat --------------------------------------------------------

@dataclass(frozen=True)
class CpuSample:
    """The aggregate `cpu` line of /proc/stat: busy and total jiffies since boot."""

    busy: int
    total: int


def parse_proc_stat(text: str) -> CpuSample:
    """idle and iowait are idle; guest time is already inside user and nice, so it is left
    out of the total rather than counted twice."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(v) for v in fields[1:]]
            values += [0] * (10 - len(values))
            user, nice, system, idle, iowait, irq, softirq, steal = values[:8]
            idle_all = idle + iowait
            busy = user + nice + system + irq + softirq + steal
            return CpuSample(busy=busy, total=busy + idle_all)
    raise ValueError("no aggregate cpu line in /proc/stat")


def utilisation(before: CpuSample, after: CpuSample) -> float:
    """The share of the machine's CPU time that was busy between two samples, 0..1."""
    total = after.total - before.total
    return (after.busy - before.busy) / total if total > 0 else math.nan


# --- idle time between consecutive jobs -----------------------------------------------------

def handoff_gaps_ms(starts_ns: Sequence[int], ends_ns: Sequence[int], slots: int) -> list[float]:
    """How long a slot stays empty when a job ends: with `slots` jobs at a time, the first
    `slots` jobs start on empty slots and every later start takes the slot freed by the
    earliest end not yet taken, so the i-th end (in time) is followed by the (slots+i)-th
    start. Negative only if a system ran more than `slots` jobs at once."""
    if slots < 1:
        raise ValueError("slots must be at least 1")
    starts, ends = sorted(starts_ns), sorted(ends_ns)
    later = starts[slots:]
    return [(s - e) / 1e6 for s, e in zip(later, ends, strict=False)]


# --- where a Trainyard job's time goes -----------------------------------------------------

def slot_cycle_ms(jobs: Sequence[Mapping[str, float]], slots: int) -> dict[str, float]:
    """The p50 of each phase of a job's turn in a slot, from its recorded transitions (epoch
    seconds under "LAUNCHING", "RUNNING", "final") and its own start stamp ("stamp"):
    admission to launched, launched to the command's first line, the command's run and its
    reaping, and the handoff from a final job to the next admission in its slot."""
    full = [j for j in jobs if {"LAUNCHING", "RUNNING", "final"} <= j.keys()]
    launch = [(j["RUNNING"] - j["LAUNCHING"]) * 1000 for j in full]
    shell = [(j["stamp"] - j["RUNNING"]) * 1000 for j in full if "stamp" in j]
    reap = [(j["final"] - j["RUNNING"]) * 1000 for j in full]
    handoff = handoff_gaps_ms([int(j["LAUNCHING"] * 1e9) for j in full],
                              [int(j["final"] * 1e9) for j in full], slots)
    out = {"launch_p50_ms": pct(launch, 50), "running_to_command_p50_ms": pct(shell, 50),
           "running_to_final_p50_ms": pct(reap, 50), "final_to_next_launch_p50_ms":
           pct(handoff, 50)}
    out["cycle_p50_ms"] = out["launch_p50_ms"] + out["running_to_final_p50_ms"] + \
        out["final_to_next_launch_p50_ms"]
    return out


# --- goals ------------------------------------------------------------------------------------

# Goals whose peer is one of the machine's limits: (Trainyard's figure, the limit's).
AGAINST_LIMITS = {"submit_vs_grpc": ("submit_per_s", "grpc_calls_per_s"),
                  "e2e_vs_fork_exec": ("e2e_jobs_per_s", "fork_exec_e2e_jobs_per_s")}


@dataclass(frozen=True)
class Goal:
    """One goal: a measured value against a target, `at_least` or at most."""

    key: str
    text: str
    value: float
    target: float
    at_least: bool
    unit: str = "x"

    @property
    def passed(self) -> bool | None:
        if math.isnan(self.value) or math.isnan(self.target):
            return None
        return self.value >= self.target if self.at_least else self.value <= self.target

    def as_json(self) -> dict[str, object]:
        return {"text": self.text, "value": num(self.value, 3), "target": num(self.target, 3),
                "at_least" if self.at_least else "at_most": True, "unit": self.unit,
                "pass": self.passed}


def _makespan_ratio(ty: Mapping[str, Any], limits: Mapping[str, Any], target: float) -> float:
    """Makespan / ideal; for a workload cut off at its cap, a miss once the cap lies past the
    target (the whole would take longer still), else nothing to judge (NaN)."""
    made, ideal = ty.get("train_makespan_s"), limits.get("train_makespan_ideal_s")
    if not isinstance(made, int | float) or not isinstance(ideal, int | float):
        return math.nan
    value = ratio(float(made), float(ideal))
    return math.nan if ty.get("train_capped") and value <= target else value


def goals(ty: Mapping[str, Any], slurm: Mapping[str, Any], ray: Mapping[str, Any],
          limits: Mapping[str, Any]) -> list[Goal]:
    """The goals, each computed from figures of the same run."""
    def get(figures: Mapping[str, Any], key: str) -> float:
        value = figures.get(key)
        return float(value) if isinstance(value, int | float) else math.nan

    def against_limit(key: str) -> float:
        figure, limit = AGAINST_LIMITS[key]
        return ratio(get(ty, figure), get(limits, limit))

    fork_p50 = get(limits, "fork_exec_start_p50_ms")
    return [
        Goal("submit_vs_slurm", "submit throughput vs sbatch",
             ratio(get(ty, "submit_per_s"), get(slurm, "submit_per_s")), 8.0, True),
        Goal("submit_vs_ray", "submit throughput vs Ray Jobs",
             ratio(get(ty, "submit_per_s"), get(ray, "submit_per_s")), 40.0, True),
        Goal("e2e_vs_slurm", "end-to-end trivial jobs/s vs Slurm",
             ratio(get(ty, "e2e_jobs_per_s"), get(slurm, "e2e_jobs_per_s")), 20.0, True),
        Goal("e2e_vs_ray", "end-to-end trivial jobs/s vs Ray Jobs",
             ratio(get(ty, "e2e_jobs_per_s"), get(ray, "e2e_jobs_per_s")), 100.0, True),
        Goal("start_local", "submit->start p50, local process (<= 2x fork/exec + 20 ms)",
             get(ty, "start_p50_ms"), 2 * fork_p50 + 20.0, False, "ms"),
        Goal("start_docker", "submit->RUNNING p50, container vs raw docker run",
             ratio(get(ty, "docker_start_p50_ms"), get(limits, "docker_run_start_p50_ms")),
             1.15, False),
        Goal("idle_gap", "median idle between consecutive short jobs",
             get(ty, "idle_gap_p50_ms"), 10.0, False, "ms"),
        # Against the machine's own limits, measured in the same run.
        Goal("submit_vs_grpc", "durable submits/s vs bare gRPC calls/s from the same client",
             against_limit("submit_vs_grpc"), 0.5, True),
        Goal("e2e_vs_fork_exec", "trivial jobs/s end to end vs bare fork/exec",
             against_limit("e2e_vs_fork_exec"), 0.5, True),
        Goal("train_makespan_vs_ideal", "training makespan vs the ideal (trainer's time x "
             "jobs / slots)", _makespan_ratio(ty, limits, 1.05), 1.05, False),
    ]


def ratios(ty: Mapping[str, Any], peers: Mapping[str, Mapping[str, Any]]
           ) -> dict[str, float | None]:
    """Trainyard / peer for every numeric figure both have: `<figure>_vs_<peer>`."""
    out: dict[str, float | None] = {}
    for peer, figures in peers.items():
        for key, value in figures.items():
            mine = ty.get(key)
            if isinstance(value, int | float) and isinstance(mine, int | float) \
                    and not isinstance(value, bool):
                out[f"{key}_vs_{peer}"] = num(ratio(float(mine), float(value)), 3)
    return out


def _cap_move(limits: Mapping[str, Any]) -> str:
    """What the kernel alone made of each local job's start, where it was measured."""
    moved = limits.get("cap_move_p50_ms")
    if not isinstance(moved, int | float):
        return ""
    return (f"joining a process cap (a pids cgroup) waits {moved:.1f} ms in the kernel, "
            f"measured alone in this run (on cgroup v1 an RCU grace period): standby wrappers "
            f"join theirs ahead of their jobs, and only a launch that finds none ready waits "
            f"for it")


def why_missed(goal: Goal, ty: Mapping[str, Any], peers: Mapping[str, Mapping[str, Any]],
               limits: Mapping[str, Any], cpus: int) -> str:
    """A missed goal's sentence, from the figures of the same run: what it needed, and
    where the time or CPU went."""
    def get(figures: Mapping[str, Any], key: str) -> float:
        value = figures.get(key)
        return float(value) if isinstance(value, int | float) else math.nan

    peer = peers.get(goal.key.rsplit("_vs_", 1)[-1], {})
    if goal.key in AGAINST_LIMITS:  # the limit stands where a peer's figure would
        figure, limit = AGAINST_LIMITS[goal.key]
        peer = {figure: get(limits, limit)}
    if goal.key.startswith("submit_vs_"):
        need = goal.target * get(peer, "submit_per_s")
        sys_ms, client_ms = get(ty, "submit_system_cpu_ms"), get(ty, "submit_client_cpu_ms")
        ceiling = cpus * 1000 / (sys_ms + client_ms)
        return (f"needs {need:,.0f} submits/s, measured {get(ty, 'submit_per_s'):,.0f}/s. "
                f"While submitting, each durable submit took {client_ms:.2f} ms of the "
                f"client's CPU and {sys_ms:.2f} ms of the rest of the machine's (the server, "
                f"and the jobs it started meanwhile): {cpus} CPUs allow at most "
                f"{ceiling:,.0f}/s that way, and even a bare gRPC health check from the same "
                f"client reaches only {get(limits, 'grpc_calls_per_s'):,.0f}/s")
    if goal.key == "train_makespan_vs_ideal":
        run, bare = get(ty, "train_run_p50_s"), get(limits, "trainer_run_in_slots_s")
        return (f"{get(ty, 'train_makespan_s'):.1f} s against an ideal "
                f"{get(limits, 'train_makespan_ideal_s'):.1f} s: the trainer itself ran "
                f"{run:.3f} s (p50) under the service against {bare:.3f} s started "
                f"{cpus} at a time without it ({ratio(run, bare):.2f}x, the CPU the service "
                f"and the jobs' wrappers took beside it; "
                f"{get(limits, 'trainer_run_s'):.3f} s alone), the slots were busy "
                f"{get(ty, 'slots_busy_pct'):.0f}% of the "
                f"makespan, and the idle between consecutive jobs was "
                f"{get(ty, 'idle_gap_p50_ms'):.1f} ms (p50)")
    if goal.key == "idle_gap":
        return (f"a slot idled {get(ty, 'idle_gap_p50_ms'):.1f} ms (p50) from one job's last "
                f"line to the next one's first: the ended job's reaping and final commit, the "
                f"next one's admission, LAUNCHING commit and process, and its wrapper's "
                f"start" + (f"; {cap}" if (cap := _cap_move(limits)) else ""))
    if goal.key.startswith("e2e_vs_"):
        need = goal.target * get(peer, "e2e_jobs_per_s")
        cycle = get(ty, "trivial_cycle_p50_ms")
        return (f"needs {need:,.1f} jobs/s, measured {get(ty, 'e2e_jobs_per_s'):,.1f}/s. A "
                f"trivial job holds its slot for {cycle:.1f} ms (p50): "
                f"{get(ty, 'trivial_launch_p50_ms'):.1f} ms to launch (its directories, the "
                f"process, the RUNNING commit), "
                f"{get(ty, 'trivial_running_to_final_p50_ms'):.1f} ms from RUNNING to final "
                f"(of which {get(ty, 'trivial_running_to_command_p50_ms'):.1f} ms until its "
                f"command's first line; then its run, the exit, the "
                f"reaping and the final commit) and "
                f"{get(ty, 'trivial_final_to_next_launch_p50_ms'):.1f} ms until the next job "
                f"is admitted to the slot; {cpus} slots / {cycle:.1f} ms = "
                f"{cpus * 1000 / cycle:,.0f} jobs/s. fork/exec of the same command alone runs "
                f"{get(limits, 'fork_exec_e2e_jobs_per_s'):,.0f} jobs/s" +
                (f"; {cap}" if (cap := _cap_move(limits)) else ""))
    return f"measured {goal.value:.3g} {goal.unit} against {goal.target:.3g} {goal.unit}"
