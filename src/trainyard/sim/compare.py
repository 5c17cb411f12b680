"""One trace, one cluster, several policies: the report `trainyard sim` prints and writes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainyard.sim.checkpoints import NO_CHECKPOINTS, Checkpointing
from trainyard.sim.cluster import Cluster, Submitted, submit
from trainyard.sim.engine import Outcome
from trainyard.sim.metrics import DEFAULT_WINDOW_S, summarize
from trainyard.sim.policies import POLICIES, replay_for
from trainyard.sim.trace import Trace


@dataclass(frozen=True)
class Comparison:
    trace: Trace
    cluster: Cluster
    submitted: Submitted
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        """The JSON report: {"policies": {NAME: {...}}, with the trace and cluster."""
        submitted = self.submitted
        return {
            "trace": {"source": self.trace.source, "format": self.trace.kind,
                      "rows": len(self.trace.jobs) + sum(self.trace.skipped.values()),
                      "jobs": len(submitted.jobs), "skipped": dict(self.trace.skipped),
                      "refused": dict(submitted.refused)},
            "cluster": {"gpus": self.cluster.gpus, "generated": self.cluster.generated,
                        "pools": {name: {"gpus": pool.capacity.gpus,
                                         "max_jobs": pool.capacity.max_jobs,
                                         "cpus": pool.capacity.cpus,
                                         "memory_mb": pool.capacity.memory_mb,
                                         "executor": pool.executor}
                                  for name, pool in self.cluster.policy.pools.items()},
                        "queues": sorted(self.cluster.policy.queues),
                        "team_quota_gpus": self.cluster.team_quotas},
            "policies": {name: _json_safe(summary) for name, summary in self.summaries.items()},
        }


def fair_weights(cluster: Cluster, teams: Sequence[str]) -> dict[str, float]:
    """Each team's weight in the fair share: its GPU quota when every team has one, else 1."""
    quotas = cluster.team_quotas
    if teams and all(quotas.get(team, 0) > 0 for team in teams):
        return {team: float(quotas[team]) for team in teams}
    return {team: 1.0 for team in teams}


def compare(trace: Trace, cluster: Cluster, policies: Sequence[str] = POLICIES, *,
            restart_overhead: float = 0.0, window: float = DEFAULT_WINDOW_S,
            time_limit: float = 0.0, checkpoints: Checkpointing = NO_CHECKPOINTS
            ) -> Comparison:
    """Replay the trace under each policy; `time_limit` (seconds, 0: none) stops one whose
    replay takes longer, reporting what it reached; `checkpoints`: what a preemption loses
    (sim/checkpoints.py), and then each policy's GPU-hours lost."""
    submitted = submit(trace.jobs, cluster.policy)
    teams = sorted({job.team for job in submitted.jobs})
    weights = fair_weights(cluster, teams)
    result = Comparison(trace, cluster, submitted)
    durations = [job.duration for job in submitted.jobs]
    job_teams = [job.team for job in submitted.jobs]
    for name in policies:
        replay = replay_for(name, cluster.policy, cluster.gpus, teams, restart_overhead,
                            checkpoints)
        outcome = replay.run(submitted.pending, durations, job_teams, time_limit)
        result.outcomes[name] = outcome
        result.summaries[name] = summarize(outcome, weights, window,
                                           work_lost=checkpoints.modelled)
    return result


def _json_safe(value: Any) -> Any:
    """Rounded floats (6 significant decimals for fractions, 3 for seconds), None for NaN."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        return round(value, 6) if abs(value) < 10 else round(value, 3)
    if isinstance(value, Mapping):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return value
