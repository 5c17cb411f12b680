"""`trainyard sim --from-store`: the service's own history, fetched from the server, replayed
under the policy in force ("current") and under a candidate policy file ("candidate"), with
the figures the store recorded beside them.

The history is a trace (cli/history.py makes it): each job's submit, and the seconds it held
its resources (launching and running, in all its attempts). The policy in force is rebuilt
from what the server sends: its policy file's text, with each pool's capacity as the
scheduler counts it now (a cluster's engine may have filled it in), replayed by the queue
policy (`default`); without a file, FIFO on the server's pools (one per executor) under its
limit on running jobs (`fifo`). The server's policy as it is now: a history that ran partly
under an earlier file is replayed under today's."""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from trainyard.cli.history import history_trace
from trainyard.client.history import History, HistoryJob, PolicyInForce

if TYPE_CHECKING:
    from trainyard.domain import policy as cfg
    from trainyard.sim.cluster import Cluster
    from trainyard.sim.engine import Outcome
    from trainyard.sim.trace import Trace

CURRENT = "current"
CANDIDATE = "candidate"


class StoreReplayError(Exception):
    """One sentence, naming the option where one is to blame."""


@dataclass(frozen=True)
class StoreReplay:
    report: dict[str, Any]
    outcomes: dict[str, Outcome]
    summaries: dict[str, dict[str, Any]]


def policy_in_force(policy: PolicyInForce, queues: Sequence[str]) -> tuple[cfg.Policy, str]:
    """The policy the history ran under, and the replay's name for its scheduler."""
    from trainyard.domain import policy as cfg
    from trainyard.domain.pools import PoolCapacity
    from trainyard.services.policy_file import PolicyError, parse_policy

    capacities = {p.name: PoolCapacity(p.name, max_jobs=p.max_jobs, cpus=p.cpus,
                                       memory_mb=p.memory_mb, gpu_ids=p.gpu_ids)
                  for p in policy.pools}
    if not policy.text:
        pools = {p.name: cfg.Pool(capacities[p.name], executor=p.executor)
                 for p in policy.pools}
        # Without a file any queue name is open, on every pool.
        open_queues = {name: cfg.Queue(name, pools=tuple(pools))
                       for name in sorted({*queues, "default"})}
        return cfg.Policy(pools=pools, queues=open_queues, admins=frozenset(policy.admins),
                          max_running=max(1, policy.max_running)), "fifo"
    try:
        declared = parse_policy(policy.text, policy.format or "toml",
                                source=policy.source or "the server's policy file")
    except PolicyError as exc:
        raise StoreReplayError("the server's policy file does not read here: " +
                               "; ".join(exc.problems)) from exc
    pools = {name: replace(pool, capacity=replace(
        capacities[name], node_cpus=pool.capacity.node_cpus,
        node_memory_mb=pool.capacity.node_memory_mb, node_gpus=pool.capacity.node_gpus))
        if name in capacities else pool for name, pool in declared.pools.items()}
    return replace(declared, pools=pools, admins=frozenset(policy.admins)), "default"


def recorded(jobs: Sequence[HistoryJob]) -> dict[str, Any]:
    """What the store recorded: JCT (submit to end) and wait (the part of it the job did
    not hold its resources: before its first launch, and between attempts)."""
    jct = [job.jct_s for job in jobs]
    wait = [max(0.0, job.jct_s - job.ran_s - job.launch_s) for job in jobs]
    return {"jobs": len(jobs), "mean_jct": statistics.fmean(jct),
            "median_jct": statistics.median(jct), "p95_jct": _p95(jct),
            "mean_wait": statistics.fmean(wait), "median_wait": statistics.median(wait),
            "p95_wait": _p95(wait),
            "mean_launch": statistics.fmean(job.launch_s for job in jobs),
            "mean_wait_felt": statistics.fmean(job.wait_s for job in jobs)}


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(0.95 * len(ordered))) - 1))]


def replay_store(history: History, since_s: float | None, candidate: cfg.Policy | None,
                 candidate_per_team: bool, *, restart_overhead: float, window: float,
                 time_limit: float, saving: tuple[float, float | None] | None = None
                 ) -> StoreReplay:
    from trainyard.sim.cluster import Cluster
    from trainyard.sim.trace import queue_per_team

    jobs = list(history.jobs)
    if not jobs:
        within = "" if since_s is None else " within --since"
        raise StoreReplayError(f"the server has no finished jobs{within} to replay (a job "
                               "counts once it ran and ended)")
    trace = history_trace(history, jobs)
    current, scheduler = policy_in_force(history.policy, sorted({j.queue for j in jobs}))
    runs: list[tuple[str, Cluster, str, Trace]] = [(CURRENT, Cluster(current), scheduler,
                                                    trace)]
    if candidate is not None:
        # Loaded by this server, its queues would take the store's admins' jobs too.
        candidate = replace(candidate, admins=candidate.admins | frozenset(
            history.policy.admins))
        runs.append((CANDIDATE, Cluster(candidate), "default",
                     queue_per_team(trace) if candidate_per_team else trace))
    outcomes: dict[str, Outcome] = {}
    summaries: dict[str, dict[str, Any]] = {}
    clusters: dict[str, Any] = {}
    refused: dict[str, dict[str, int]] = {}
    kept: set[str] = set()
    for name, cluster, policy_name, replayed in runs:
        outcome, summary, left = _replay(replayed, cluster, policy_name, restart_overhead,
                                         window, time_limit, saving)
        if name == CURRENT:
            kept = {job.pending.job_id for job in outcome.jobs}
        if not outcome.jobs:
            first = next(iter(left), "")
            option = "the policy in force" if name == CURRENT else "--config"
            raise StoreReplayError(f"{option} refuses every job of the history, e.g.: "
                                   f"{first}")
        outcomes[name], summaries[name], refused[name] = outcome, summary, left
        clusters[name] = _cluster_json(cluster, policy_name)
    from trainyard.sim.compare import _json_safe

    report = {
        "trace": {"source": trace.source, "format": "trainyard", "rows": len(jobs),
                  "jobs": len(kept), "skipped": {}, "refused": refused[CURRENT],
                  "since_s": since_s},
        "cluster": clusters[CURRENT],
        "clusters": clusters,
        "policy_in_force": {"source": history.policy.source or "FIFO (no policy file)",
                            "scheduler": scheduler,
                            "max_running": history.policy.max_running},
        # Of the jobs the policy in force takes (one of a queue it no longer has is not).
        "recorded": _json_safe(recorded([job for job in jobs if job.job_id in kept])),
        "policies": {name: _json_safe(summary) for name, summary in summaries.items()},
    }
    if candidate is not None:
        report["trace"]["refused_by_candidate"] = refused[CANDIDATE]
    return StoreReplay(report, outcomes, summaries)


def _replay(trace: Trace, cluster: Cluster, policy_name: str, restart_overhead: float,
            window: float, time_limit: float,
            saving: tuple[float, float | None] | None = None
            ) -> tuple[Outcome, dict[str, Any], dict[str, int]]:
    """One replay, as sim.compare runs each, on a cluster that may count no GPU (its
    utilization is then 0: utilization is of GPUs)."""
    from trainyard.sim.checkpoints import NO_CHECKPOINTS, checkpointing
    from trainyard.sim.cluster import submit
    from trainyard.sim.compare import fair_weights
    from trainyard.sim.metrics import summarize
    from trainyard.sim.policies import replay_for

    submitted = submit(trace.jobs, cluster.policy)
    teams = sorted({job.team for job in submitted.jobs})
    checkpoints = NO_CHECKPOINTS if saving is None else \
        checkpointing(cluster.policy, *saving)
    replay = replay_for(policy_name, cluster.policy, max(1, cluster.gpus), teams,
                        restart_overhead, checkpoints)
    outcome = replay.run(submitted.pending, [job.duration for job in submitted.jobs],
                         [job.team for job in submitted.jobs], time_limit)
    summary = summarize(outcome, fair_weights(cluster, teams), window,
                        work_lost=checkpoints.modelled)
    return outcome, summary, dict(submitted.refused)


def _cluster_json(cluster: Cluster, scheduler: str) -> dict[str, Any]:
    policy = cluster.policy
    return {"gpus": cluster.gpus, "generated": False, "scheduler": scheduler,
            "max_running": policy.max_running,
            "pools": {name: {"gpus": pool.capacity.gpus, "max_jobs": pool.capacity.max_jobs,
                             "cpus": pool.capacity.cpus, "memory_mb": pool.capacity.memory_mb,
                             "executor": pool.executor}
                      for name, pool in policy.pools.items()},
            "queues": sorted(policy.queues), "team_quota_gpus": cluster.team_quotas}


def run_from_store(server: str | None, since: str | None, gpus: int | None,
                   config: Path | None, policies_given: bool, restart_overhead: float,
                   window: float, trace_format: str, per_team: bool, time_limit: float,
                   saving: tuple[float, float | None] | None = None
                   ) -> tuple[dict[str, Outcome], dict[str, dict[str, Any]], dict[str, Any]]:
    """The command's work: check the options, fetch, replay, and the report's config."""
    from trainyard.cli.common import client_for
    from trainyard.cli.history import since_epoch
    from trainyard.cli.sim import SimError, _check_numbers, _read_config, checkpoint_config

    for given, option in ((gpus is not None, "--gpus"), (policies_given, "--policies"),
                          (trace_format != "auto", "--format"),
                          (per_team, "--queue-per-team")):
        if given:
            raise SimError(f"{option} does not apply with --from-store: the history is "
                           "replayed under the policy in force and the --config candidate "
                           "(whose [sim] section may set queue_per_team)")
    _check_numbers(restart_overhead, window, time_limit)
    candidate, candidate_per_team = None, False
    if config is not None:
        candidate, options = _read_config(config)
        candidate_per_team = bool(options.get("queue_per_team", False))
    after = since_epoch(since)
    since_s = None if after is None else time.time() - after
    with client_for(server) as client:
        history = client.export_history(after)
        try:
            done = replay_store(history, since_s, candidate, candidate_per_team,
                                restart_overhead=restart_overhead, window=window,
                                time_limit=time_limit, saving=saving)
        except StoreReplayError as exc:
            raise SimError(str(exc)) from exc
    done.report["config"] = {"restart_overhead_s": restart_overhead, "window_s": window,
                             "time_limit_s": time_limit, "from_store": True,
                             "since": since, "candidate": str(config) if config else None,
                             "queue_per_team": candidate_per_team,
                             **checkpoint_config(saving)}
    return done.outcomes, done.summaries, done.report


def seconds(value: float | None) -> str:
    """Milliseconds below a second, tenths below a minute (a sweep's waits and launches),
    and as `trainyard sim` says the others."""
    from trainyard.cli.sim import hours

    if value is not None and value < 1:
        return f"{value * 1000:.0f} ms"
    if value is not None and value < 60:
        return f"{value:.1f} s"
    return hours(value)


def render_recorded(report: Mapping[str, Any]) -> Table:
    """The replays beside what the store recorded, and how far each is from it."""
    record = report["recorded"]
    table = Table(title="Against the record (wait: the time a job did not hold its "
                        "resources)",
                  caption=f"recorded: mean launch {seconds(record['mean_launch'])}, mean wait "
                          f"as users felt it (launching included) "
                          f"{seconds(record['mean_wait_felt'])}")
    for column in ("", "jobs", "mean wait", "median wait", "p95 wait", "mean JCT",
                   "median JCT", "p95 JCT", "mean wait vs recorded"):
        table.add_column(column, justify="left" if not column else "right", no_wrap=True)
    rows = [("recorded", record), *report["policies"].items()]
    for name, figures in rows:
        off = "" if name == "recorded" else _off(figures["mean_wait"], record["mean_wait"])
        table.add_row(name, f"{figures['jobs']:,}", seconds(figures["mean_wait"]),
                      seconds(figures["median_wait"]), seconds(figures["p95_wait"]),
                      seconds(figures["mean_jct"]), seconds(figures["median_jct"]),
                      seconds(figures["p95_jct"]), off)
    return table


def _off(value: float | None, against: float | None) -> str:
    if value is None or against is None:
        return "-"
    if against == 0:
        return "±0 s" if value == 0 else f"+{value:.0f} s"
    return f"{(value - against) / against:+.1%}"
