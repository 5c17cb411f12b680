"""`trainyard sim TRACE`: replay a job trace through the scheduler and compare policies.

Offline: no server. The cluster and policy come from `--config FILE`, a policy file as the
server reads it with an optional `[sim]` section, or from `--gpus N`. With `--from-store`
the trace is the server's own history and the policy the one in force there (cli/sim_store.py),
and `--config` is the candidate replayed beside it."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trainyard.cli.common import ServerOpt
from trainyard.cli.history import SinceOpt
from trainyard.cli.output import errors

# Wide enough for the tables when the output is a file or a pipe.
console = Console(width=None if sys.stdout.isatty() else 150)

SIM_KEYS = ("qos", "queue_per_team")
POLICY_NAMES = "fifo,priority,default,srtf-oracle,las"
MAX_GPUS = 1_000_000  # a generated pool lists its device ids
MIN_WINDOW_S = 1.0


class SimError(Exception):
    """A problem with the command's inputs: one sentence, exit 1."""


def sim(
    ctx: typer.Context,
    trace: Annotated[Path | None, typer.Argument(
        help="Job trace: the project's CSV format or the Alibaba openb pod list (not with "
        "--from-store).", show_default=False)] = None,
    gpus: Annotated[int | None, typer.Option(
        help="Replay on one pool of N GPUs under a generated policy (see README).")] = None,
    config: Annotated[Path | None, typer.Option(
        help="Cluster and policy: a policy file (TOML or YAML) as the server reads it, with "
        "an optional [sim] section.")] = None,
    policies: Annotated[str, typer.Option(
        help="Policies to compare, comma-separated.")] = POLICY_NAMES,
    json_path: Annotated[Path | None, typer.Option(
        "--json", help="Write the report as JSON here.")] = None,
    plots: Annotated[Path | None, typer.Option(
        help="Write PNG plots (JCT CDF, utilization, team shares) into this directory.")] =
        None,
    restart_overhead: Annotated[float, typer.Option(
        help="Seconds a preempted job spends restarting before it makes progress again.")] =
        0.0,
    checkpoint_interval: Annotated[str | None, typer.Option(
        help="Jobs save a checkpoint this often while they run (\"30m\"): a preemption "
        "loses the work since the last, reported as GPU-hours lost. Without it a preempted "
        "job resumes where it stopped.", show_default=False)] = None,
    checkpoint_time: Annotated[str | None, typer.Option(
        help="How long a checkpoint takes (\"2m\"): jobs of queues whose preempt_grace is "
        "at least this save one on notice and lose nothing (needs --checkpoint-interval).",
        show_default=False)] = None,
    window: Annotated[float, typer.Option(
        help="Seconds per window of the share and fairness timeline.")] = 3600.0,
    trace_format: Annotated[str, typer.Option(
        "--format", help="auto, trainyard or alibaba.")] = "auto",
    queue_per_team: Annotated[bool, typer.Option(
        "--queue-per-team", help="Each job waits in a queue named after its team, not the "
        "trace's queue.")] = False,
    time_limit: Annotated[float, typer.Option(
        help="Stop a policy's replay after this many seconds of wall-clock time and report "
        "how far it got (0: no limit).")] = 0.0,
    from_store: Annotated[bool, typer.Option(
        "--from-store", help="Replay the server's own finished jobs under its policy in "
        "force and, with --config, under that candidate, beside what the store recorded.")] =
        False,
    since: SinceOpt = None,
    server: ServerOpt = None,
) -> None:
    """Replay a job trace through the scheduler with a simulated clock and executor, and
    compare policies: completion times, queueing delay, utilization, fairness."""
    try:
        saving = checkpoint_options(checkpoint_interval, checkpoint_time)
        if from_store:
            if trace is not None:
                raise SimError("give either a TRACE or --from-store, not both")
            from trainyard.cli.sim_store import run_from_store

            outcomes, summaries, report = run_from_store(
                server, since, gpus, config, policies != POLICY_NAMES, restart_overhead,
                window, trace_format, queue_per_team, time_limit, saving)
        else:
            if trace is None:  # as the parser says it of a required argument
                ctx.fail("Missing argument 'trace'.")
            if since is not None:
                raise SimError("--since needs --from-store")
            report, comparison = _run(trace, gpus, config, policies, restart_overhead,
                                      window, trace_format, queue_per_team, time_limit,
                                      saving)
            outcomes, summaries = comparison.outcomes, comparison.summaries
        render(report)
        if json_path is not None:
            _write_json(json_path, report)
            console.print(f"report: {escape(str(json_path))}", highlight=False)
        if plots is not None:
            from trainyard.sim.plots import write_plots

            try:
                written = write_plots(outcomes, summaries, plots)
            except OSError as exc:
                raise SimError(f"cannot write plots to {plots}: {exc.strerror or exc}") \
                    from exc
            console.print("plots: " + ", ".join(escape(str(p)) for p in written),
                          highlight=False)
    except SimError as exc:
        errors.print(f"[red]error[/]: {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None


def checkpoint_options(interval: str | None, checkpoint: str | None
                       ) -> tuple[float, float | None] | None:
    """--checkpoint-interval and --checkpoint-time as seconds; None without an interval."""
    from trainyard.quantities import DURATION_HINT, duration_seconds

    if interval is None:
        if checkpoint is not None:
            raise SimError("--checkpoint-time needs --checkpoint-interval")
        return None
    every = duration_seconds(interval)
    if every is None or every <= 0:
        raise SimError(f"--checkpoint-interval must be {DURATION_HINT}, more than 0; got "
                       f"{interval!r}")
    if checkpoint is None:
        return every, None
    takes = duration_seconds(checkpoint)
    if takes is None:
        raise SimError(f"--checkpoint-time must be {DURATION_HINT}; got {checkpoint!r}")
    return every, takes


def checkpoint_config(saving: tuple[float, float | None] | None) -> dict[str, Any]:
    """The report's config entries of the checkpoint options (none without them)."""
    if saving is None:
        return {}
    return {"checkpoint_interval_s": saving[0], "checkpoint_time_s": saving[1]}


def _run(trace_path: Path, gpus: int | None, config: Path | None, names: str,
         restart_overhead: float, window: float, trace_format: str,
         per_team: bool, time_limit: float,
         saving: tuple[float, float | None] | None = None) -> tuple[dict[str, Any], Any]:
    from trainyard.sim.checkpoints import NO_CHECKPOINTS, checkpointing
    from trainyard.sim.cluster import Cluster, generated_policy
    from trainyard.sim.compare import compare
    from trainyard.sim.policies import POLICIES
    from trainyard.sim.trace import DEFAULT_QOS_QUEUES, TraceError, queue_per_team, read_trace

    if (gpus is None) == (config is None):
        raise SimError("give either --gpus N or --config FILE")
    if gpus is not None and gpus < 1:
        raise SimError("--gpus must be at least 1")
    if gpus is not None and gpus > MAX_GPUS:
        raise SimError(f"--gpus must be at most {MAX_GPUS:,}")
    _check_numbers(restart_overhead, window, time_limit)
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in POLICIES]
    if unknown or not chosen:
        raise SimError(f"unknown policy {', '.join(map(repr, unknown)) or 'list'}; choose "
                       f"from {', '.join(POLICIES)}")
    qos: Mapping[str, str] = DEFAULT_QOS_QUEUES
    policy = None
    if config is not None:
        policy, options = _read_config(config)
        qos = options.get("qos", qos)
        per_team = per_team or bool(options.get("queue_per_team", False))
    try:
        trace = read_trace(trace_path, trace_format, qos)
    except TraceError as exc:
        raise SimError(str(exc)) from exc
    if per_team:
        trace = queue_per_team(trace)
    if not trace.jobs:
        raise SimError(f"{trace_path}: no jobs to replay")
    if policy is None:
        assert gpus is not None
        cluster = Cluster(generated_policy(trace.jobs, gpus), generated=True)
    else:
        cluster = Cluster(policy)
    if cluster.gpus == 0:
        raise SimError("the cluster has no GPUs")
    checkpoints = NO_CHECKPOINTS if saving is None else \
        checkpointing(cluster.policy, *saving)
    comparison = compare(trace, cluster, list(dict.fromkeys(chosen)),
                         restart_overhead=restart_overhead, window=window,
                         time_limit=time_limit, checkpoints=checkpoints)
    if not comparison.submitted.jobs:
        first = next(iter(comparison.submitted.refused), "")
        raise SimError(f"the policy refuses every job of the trace, e.g.: {first}")
    report = comparison.report()
    report["config"] = {"restart_overhead_s": restart_overhead, "window_s": window,
                        "time_limit_s": time_limit,
                        "queue_per_team": per_team, "qos_queues": dict(qos),
                        **checkpoint_config(saving)}
    return report, comparison


def _check_numbers(restart_overhead: float, window: float, time_limit: float) -> None:
    if not restart_overhead >= 0 or math.isinf(restart_overhead):
        raise SimError("--restart-overhead must be a number of seconds, at least 0")
    if not window > 0 or math.isinf(window):
        raise SimError("--window must be a number of seconds, more than 0")
    if window < MIN_WINDOW_S:
        # The timeline has a row per window: a tiny window over a long trace never ends.
        raise SimError(f"--window must be at least {MIN_WINDOW_S:g} second")
    if not time_limit >= 0:
        raise SimError("--time-limit must be a number of seconds, at least 0")


def _read_config(path: Path) -> tuple[Any, dict[str, Any]]:
    """The policy and the [sim] options of a config file."""
    from trainyard.domain.spec import NAME_RE
    from trainyard.services.policy_file import PolicyError, load_policy_document

    try:
        document = load_policy_document(path, sections=("sim",))
    except PolicyError as exc:
        raise SimError("; ".join(exc.problems)) from exc
    section = document.sections.get("sim")
    options: dict[str, Any] = {}
    if section is None:
        return document.policy, options
    if not isinstance(section, dict):
        raise SimError(f"{document.where(('sim',))}: must be a table")
    for key, value in section.items():
        if key not in SIM_KEYS:
            raise SimError(f"{document.where(('sim', str(key)))}: unknown key (expected one "
                           f"of: {', '.join(SIM_KEYS)})")
        if key == "queue_per_team":
            if not isinstance(value, bool):
                raise SimError(f"{document.where(('sim', key))}: must be true or false")
            options[key] = value
        elif key == "qos":
            if not isinstance(value, dict):
                raise SimError(f"{document.where(('sim', key))}: must be a table of QoS "
                               "class = queue")
            for qos, queue in value.items():
                if not isinstance(queue, str) or not NAME_RE.match(queue):
                    raise SimError(f"{document.where(('sim', key, str(qos)))}: must be a "
                                   f"queue name, got {queue!r}")
            options[key] = dict(value)
    return document.policy, options


def _write_json(path: Path, report: Mapping[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(report, indent=2) + "\n")
        tmp.replace(path)
    except OSError as exc:
        raise SimError(f"cannot write {path}: {exc.strerror or exc}") from exc


def hours(seconds: float | None) -> str:
    """Seconds, hours or days, as reads best."""
    if seconds is None:
        return "-"
    if seconds >= 4 * 86400:
        return f"{seconds / 86400:.1f} d"
    return f"{seconds / 3600:.2f} h" if seconds >= 360 else f"{seconds:.0f} s"


def render(report: Mapping[str, Any]) -> None:
    trace, cluster = report["trace"], report["cluster"]
    left_out = ", ".join(f"{count} {why}" for why, count in {
        **trace["skipped"], **{"refused at submit": sum(trace["refused"].values())}}.items()
        if count)
    table = Table(title=f"Replay of {escape(trace['source'])}: {trace['jobs']:,} jobs on "
                        f"{cluster['gpus']} GPUs",
                  caption=f"left out: {left_out}" if left_out else None)
    # GPU-hours lost to preemption: a replay with --checkpoint-interval says them.
    lost = any("gpu_hours_lost" in s for s in report["policies"].values())
    for column in ("policy", "jobs", "mean JCT", "median JCT", "p95 JCT", "p99 JCT",
                   "mean wait", "makespan", "util", "Jain", "preempt",
                   *(("lost GPU-h",) if lost else ()), "sim s"):
        table.add_column(column, justify="left" if column == "policy" else "right",
                         no_wrap=True)
    for name, s in report["policies"].items():
        lost_cell = (f"{s.get('gpu_hours_lost') or 0.0:,.1f}",) if lost else ()
        table.add_row(name, f"{s['jobs']:,}", hours(s["mean_jct"]), hours(s["median_jct"]),
                      hours(s["p95_jct"]), hours(s["p99_jct"]), hours(s["mean_wait"]),
                      hours(s["makespan"]), f"{s['utilization']:.1%}",
                      f"{s['jain']:.3f}", f"{s['preemptions']:,}", *lost_cell,
                      f"{s['sim_seconds']:.2f}")
    console.print(table)
    for name, s in report["policies"].items():
        if not s["completed"]:
            errors.print(f"[yellow]{name}[/]: stopped at the time limit after "
                         f"{s['sim_seconds']:.0f} s, at {s['simulated_until'] / 86400:.1f} "
                         f"days of the trace with {s['preemptions']:,} preemptions; its "
                         f"figures cover the {s['jobs']:,} jobs finished by then",
                         highlight=False)
    teams = Table(title="By team")
    for column in ("policy", "team", "jobs", "mean JCT", "p95 JCT", "mean wait",
                   "GPU share", "held / fair", "preempt"):
        teams.add_column(column, justify="left" if column in ("policy", "team") else "right",
                         no_wrap=True)
    for name, s in report["policies"].items():
        for team, t in s["teams"].items():
            ratio = t["fair_share_ratio"]
            teams.add_row(name, escape(team or "(no team)"), f"{t['jobs']:,}",
                          hours(t["mean_jct"]), hours(t["p95_jct"]), hours(t["mean_wait"]),
                          f"{t['share']:.1%}", "-" if ratio is None else f"{ratio:.2f}",
                          f"{t['preemptions']:,}")
    console.print(teams)
    if "recorded" in report:
        from trainyard.cli.sim_store import render_recorded

        console.print(render_recorded(report))
    for why, count in report["trace"]["refused"].items():
        errors.print(f"[yellow]refused[/] {count} job(s): {escape(why)}", highlight=False)
