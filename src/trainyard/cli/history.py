"""`trainyard history export`: the service's finished jobs as a trace in the project's CSV
format, for `trainyard sim` (or any tool that reads it). For admins.

A job counts when it ended (SUCCEEDED, FAILED or CANCELLED) after it ran: one cancelled
while it waited, or whose every launch failed, held nothing and is left out. Its row:
`submit_time`, seconds from the first exported job's submit; `duration`, the seconds it held
its resources (launching and running) in all its attempts; `num_gpus`, `cpus` and
`memory_mb`, the whole job's (every worker's together); `team` (the quota it drew on),
`user`, `queue`, `priority` and `name` as submitted."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer
from rich.markup import escape

from trainyard.cli.common import ServerOpt, client_for, duration
from trainyard.cli.output import errors
from trainyard.client.history import History, HistoryJob

if TYPE_CHECKING:
    from trainyard.sim.trace import Trace, TraceJob

history_app = typer.Typer(help="The service's own history: its finished jobs as a trace.",
                          no_args_is_help=True)

SinceOpt = Annotated[str | None, typer.Option(
    help="Only jobs submitted within this long before now (\"30d\", \"12h\", \"90m\", or "
    "seconds) [default: every one].")]
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


def _rows(history: History) -> Iterator[TraceJob]:
    origin = history.first_submit or 0.0
    for job in history.jobs:
        yield trace_job(job, origin)


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
        "--output", help="Write the trace to this file [default: standard output].")] = None,
    server: ServerOpt = None,
) -> None:
    """Write the finished jobs that ran as a trace (CSV, the project's format) for
    `trainyard sim`."""
    after = since_epoch(since)
    with client_for(server) as client:
        history = client.export_history(after)
        if output is None:
            count = _write(_rows(history), sys.stdout)
        else:
            tmp = output.with_name(output.name + ".tmp")
            try:
                with tmp.open("w", newline="", encoding="utf-8") as file:
                    count = _write(_rows(history), file)
                tmp.replace(output)
            except OSError as exc:
                errors.print(f"[red]error[/]: --output: cannot write {escape(str(output))}: "
                             f"{escape(exc.strerror or str(exc))}", highlight=False)
                raise typer.Exit(1) from None
    errors.print(f"exported {count:,} finished job{'s' if count != 1 else ''}"
                 f"{'' if since is None else f' submitted in the last {since.strip()}'}",
                 highlight=False)
