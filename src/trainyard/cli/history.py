"""`trainyard history export`: the service's finished jobs as a trace in the project's CSV
format, for `trainyard sim` (or any tool that reads it). For admins.

A job counts when it ended (SUCCEEDED, FAILED or CANCELLED) after it ran: one cancelled
while it waited, or whose every launch failed, held nothing and is left out. Its row:
`submit_time`, seconds from the first exported job's submit; `duration`, the seconds it held
its resources (launching and running) in all its attempts; `num_gpus`, `cpus` and
`memory_mb`, the whole job's (every worker's together); `team` (the quota it drew on),
`user`, `queue`, `priority` and `name` as submitted. `--policy FILE` also writes the policy
in force, for `trainyard sim TRACE --config FILE`: the server's policy file as it last read
it, or, without one, FIFO's pools and limit as a policy file with every exported queue."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer
from rich.markup import escape

from trainyard.cli.common import ServerOpt, client_for, duration
from trainyard.cli.output import errors
from trainyard.client.history import History, HistoryJob, PolicyInForce

if TYPE_CHECKING:
    from trainyard.sim.trace import Trace, TraceJob

history_app = typer.Typer(help="The service's own history: its finished jobs as a trace.",
                          no_args_is_help=True)

SinceOpt = Annotated[str | None, typer.Option(
    help="Only jobs submitted within this long before now (\"30d\", \"12h\", \"90m\", or "
    "seconds); without it, every one.")]
HISTORY_SOURCE = "the server's history"


def since_epoch(since: str | None) -> float | None:
    """--since as a time since the epoch; a bad value is refused naming the option."""
    return None if since is None else time.time() - duration(since, "--since")


def trace_job(job: HistoryJob, origin: float) -> TraceJob:
    from trainyard.sim.trace import TraceJob

    return TraceJob(job_id=job.job_id, submit_time=max(0.0, job.submitted_at - origin),
                    duration=job.ran_s + job.launch_s, gpus=job.gpus, team=job.team,
                    user=job.owner, queue=job.queue, priority=job.priority,
                    name=job.name or job.job_id, cpus=job.cpus, memory_mb=job.memory_mb)


def history_trace(history: History, jobs: Sequence[HistoryJob]) -> Trace:
    """The jobs as a trace, times from the first one's submit."""
    from trainyard.sim.trace import Trace

    origin = history.first_submit if history.first_submit is not None else \
        min(job.submitted_at for job in jobs)
    ordered = sorted((trace_job(job, origin) for job in jobs), key=lambda j: j.submit_time)
    return Trace(tuple(ordered), HISTORY_SOURCE, "trainyard", {})


def _rows(history: History, queues: set[str]) -> Iterator[TraceJob]:
    origin = history.first_submit or 0.0
    for job in history.jobs:
        queues.add(job.queue)
        yield trace_job(job, origin)


def fifo_policy_file(policy: PolicyInForce, queues: Iterable[str]) -> str:
    """A server's FIFO (no policy file) as a policy file: its pools, one per executor, its
    limit on running jobs, and each queue open on every pool (without a file any queue name
    is one). `trainyard sim --policies fifo` replays it as the server scheduled."""
    lines = ["# The policy in force: FIFO (the server has no policy file).",
             f"max_running = {max(1, policy.max_running)}", ""]
    for pool in policy.pools:
        lines += [f"[pools.{pool.name}]", f"executor = {json.dumps(pool.executor)}",
                  f"max_jobs = {pool.max_jobs}"]
        if pool.cpus is not None:
            lines.append(f"cpus = {pool.cpus!r}")
        if pool.memory_mb is not None:
            lines.append(f"memory_mb = {pool.memory_mb}")
        if pool.gpu_ids:
            lines.append(f"gpu_ids = {json.dumps(list(pool.gpu_ids))}")
        lines.append("")
    pools = json.dumps([pool.name for pool in policy.pools])
    for queue in sorted({*queues, "default"}):
        lines += [f"[queues.{queue}]", f"pools = {pools}", ""]
    return "\n".join(lines)


def _write_policy(path: Path, policy: PolicyInForce, queues: Iterable[str]) -> None:
    if policy.text:
        wanted = (".toml",) if policy.format == "toml" else (".yaml", ".yml")
        if path.suffix.lower() not in wanted:
            raise typer.BadParameter(f"the policy in force is {policy.format.upper()}: name "
                                     f"the file {wanted[0]}", param_hint="--policy")
        text = policy.text
    else:
        if path.suffix.lower() != ".toml":
            raise typer.BadParameter("the policy in force is written as TOML: name the file "
                                     ".toml", param_hint="--policy")
        text = fifo_policy_file(policy, queues)
    _atomically(path, "--policy", lambda file: file.write(text))


def _write(jobs: Iterable[TraceJob], out: TextIO) -> int:
    from trainyard.sim.trace import write_rows

    counted = 0

    def counting() -> Iterator[TraceJob]:
        nonlocal counted
        for job in jobs:
            counted += 1
            yield job

    write_rows(counting(), out)
    return counted


@history_app.command("export")
def export(
    since: SinceOpt = None,
    output: Annotated[Path | None, typer.Option(
        "--output", help="Write the trace to this file, not to standard output.")] = None,
    policy: Annotated[Path | None, typer.Option(
        "--policy", help="Also write the policy in force to this file (.toml, or .yaml for "
        "a YAML policy file), for trainyard sim --config.")] = None,
    server: ServerOpt = None,
) -> None:
    """Write the finished jobs that ran as a trace (CSV, the project's format) for
    `trainyard sim`."""
    after = since_epoch(since)
    queues: set[str] = set()
    counted: list[int] = []
    with client_for(server) as client:
        history = client.export_history(after)
        if policy is not None and history.policy.text:
            _write_policy(policy, history.policy, ())  # the file's name checked first
        rows = _rows(history, queues)
        if output is None:
            counted.append(_write(rows, sys.stdout))
        else:
            _atomically(output, "--output", lambda file: counted.append(_write(rows, file)))
        if policy is not None and not history.policy.text:
            _write_policy(policy, history.policy, queues)
    count = counted[0]
    errors.print(f"exported {count:,} finished job{'s' if count != 1 else ''}"
                 f"{'' if since is None else f' submitted in the last {since.strip()}'}",
                 highlight=False)


def _atomically(path: Path, option: str, write: Callable[[TextIO], object]) -> None:
    """The file written whole, or not at all; a failure is one sentence naming the option."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", newline="", encoding="utf-8") as file:
            write(file)
        tmp.replace(path)
    except OSError as exc:
        errors.print(f"[red]error[/]: {option}: cannot write {escape(str(path))}: "
                     f"{escape(exc.strerror or str(exc))}", highlight=False)
        raise typer.Exit(1) from None
