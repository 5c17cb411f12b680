"""Trace replays as plain data: every policy's summary and each job's start, end and
preemptions, for the golden record that refactorings of the scheduler must reproduce."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainyard.sim.cluster import Cluster, generated_policy
from trainyard.sim.compare import _json_safe, compare
from trainyard.sim.policies import POLICIES
from trainyard.sim.trace import Trace, generate_trace, queue_per_team, read_trace

# The project's shared data: TRAINYARD_TRACES, or shared/ inside the checkout or beside it.
_ROOT = Path(__file__).resolve().parents[2]
_CANDIDATES = [Path(os.environ["TRAINYARD_TRACES"])] if "TRAINYARD_TRACES" in os.environ \
    else [root / "shared" / "data" / "traces" for root in (_ROOT, _ROOT.parent)]
TRACES = next((path for path in _CANDIDATES if path.exists()), _CANDIDATES[-1])
PHILLY = TRACES / "philly-3vc.csv"
GPUS = 64
# Wall-clock figures, which differ from run to run.
UNTIMED = ("sim_seconds",)


def philly(per_team: bool) -> Trace:
    trace = read_trace(PHILLY)
    return queue_per_team(trace) if per_team else trace


def generated() -> Trace:
    jobs = generate_trace(3000, 32, seed=14)
    return queue_per_team(Trace(tuple(jobs), "generated", "trainyard", {}))


def replay(trace: Trace, gpus: int, policies: tuple[str, ...] = POLICIES) -> dict[str, Any]:
    cluster = Cluster(generated_policy(trace.jobs, gpus), generated=True)
    comparison = compare(trace, cluster, list(policies))
    result: dict[str, Any] = {}
    for name, outcome in comparison.outcomes.items():
        summary = {k: v for k, v in comparison.summaries[name].items() if k not in UNTIMED}
        jobs = [[job.pending.job_id, job.first_start, job.finish, job.preemptions]
                for job in outcome.jobs]
        result[name] = {"summary": _json_safe(summary), "jobs": jobs}
    return result


RECORDS: dict[str, Callable[[], dict[str, Any]]] = {
    "philly-queue-per-team": lambda: replay(philly(True), GPUS),
    "philly-one-queue": lambda: replay(philly(False), GPUS, ("default",)),
    "generated-3000": lambda: replay(generated(), 32),
}


def all_replays() -> dict[str, dict[str, Any]]:
    return {name: make() for name, make in RECORDS.items()}
