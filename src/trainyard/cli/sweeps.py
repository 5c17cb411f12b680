"""`trainyard sweeps list|show|cancel|pause|resume`: a sweep as one unit. Through the SDK."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from trainyard.cli.common import OutputOpt, ServerOpt, client_for
from trainyard.cli.output import Output, console, print_json, styled_state

sweeps_app = typer.Typer(help="Sweeps as one unit: list, show, cancel, pause and resume "
                         "all of a sweep's trials.", no_args_is_help=True)

SweepArg = Annotated[str, typer.Argument(help="The sweep's id (trainyard sweeps list).")]
_NAMES = {"sweep_id": "SWEEP"}
STATE_STYLE = {"RUNNING": "cyan", "FINISHED": "green", "PAUSED": "yellow",
               "CANCELLED": "magenta", "BUDGET": "yellow"}


def _num(value: float) -> str:
    return f"{value:.4g}"


def _counts(sweep: dict[str, Any]) -> str:
    counts = sweep["trial_counts"]
    parts = [f"{counts[s]} {s.lower()}" for s in ("RUNNING", "LAUNCHING", "WAITING",
                                                   "SUCCEEDED", "FAILED", "CANCELLED")
             if counts.get(s)]
    if sweep["stopped_early"]:
        parts.append(f"{sweep['stopped_early']} stopped early")
    return ", ".join(parts) or "no trials"


def _state(sweep: dict[str, Any]) -> str:
    state = sweep["state"]
    return f"[{STATE_STYLE.get(state, 'white')}]{state}[/]"


def _rule(sweep: dict[str, Any]) -> str:
    rule = sweep["early_stop"]
    if not rule:
        return "none"
    if rule == "asha":
        return f"asha (min steps {sweep['min_steps']}, reduction {sweep['reduction']})"
    return f"median (from step {sweep['min_steps']})"


def _budget(sweep: dict[str, Any]) -> str:
    parts = [f"{sweep['launched_trials']}"
             + (f" of {sweep['max_trials']}" if sweep["max_trials"] else "")
             + " trials launched",
             f"{_num(sweep['gpu_hours'])}"
             + (f" of {sweep['max_gpu_hours']:g}" if sweep["max_gpu_hours"] else "")
             + " GPU-hours",
             f"{_num(sweep['cpu_hours'])}"
             + (f" of {sweep['max_cpu_hours']:g}" if sweep["max_cpu_hours"] else "")
             + " CPU-hours"]
    return ", ".join(parts)


@sweeps_app.command("list")
def sweeps_list(
    limit: Annotated[int, typer.Option(help="Page size.")] = 50,
    page_token: Annotated[str, typer.Option(help="Continue from a previous page.")] = "",
    server: ServerOpt = None, output: OutputOpt = Output.text,
) -> None:
    """Sweeps you may see, newest first: their state and trials by state."""
    with client_for(server, _NAMES) as client:
        found, token = client.list_sweeps(page_size=limit, page_token=page_token)
    if output is Output.json:
        print_json({"sweeps": found, "next_page_token": token})
        return
    table = Table("SWEEP", "NAME", "OWNER", "STATE", "TRIALS", "OBJECTIVE", "MESSAGE")
    for s in found:
        table.add_row(escape(s["sweep_id"]), escape(s["name"]), escape(s["owner"]), _state(s),
                      _counts(s), escape(s["objective"] or "-"), escape(s["message"]))
    console.print(table)
    if token:
        console.print(f"[dim]more: --page-token {token}[/]")


def render_sweep(sweep: dict[str, Any]) -> None:
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("sweep", escape(f"{sweep['sweep_id']} ({sweep['name']}, by "
                                 f"{sweep['owner']})"))
    head.add_row("state", _state(sweep) + (f": {escape(sweep['message'])}"
                                           if sweep["message"] else ""))
    head.add_row("trials", f"{sweep['total_trials']}: {_counts(sweep)}")
    if sweep["max_parallel"]:
        head.add_row("at once", f"at most {sweep['max_parallel']}")
    head.add_row("objective", escape(sweep["objective"] or "none"))
    head.add_row("early stop", _rule(sweep))
    head.add_row("used", _budget(sweep))
    best = sweep.get("best")
    if best and best["job_id"]:
        head.add_row("best", escape(f"{best['job_id']} ({best['name']}): "
                                    f"{sweep['objective'].rpartition(':')[0]} "
                                    f"{_num(best['best'])}"))
    console.print(head)
    metrics = sorted({k for t in sweep["trials"] for k in t["latest_metrics"]})
    table = Table("JOB", "NAME", "STATE", "HYPERPARAMETERS", *(m.upper() for m in metrics),
                  "MESSAGE")
    for t in sweep["trials"]:
        params = " ".join(f"{k}={v}" for k, v in sorted(t["hyperparameters"].items()))
        state = styled_state(t["state"] or "")
        if t["end_reason"] == "STOPPED_EARLY":
            state += " [dim](stopped early)[/]"
        table.add_row(escape(t["job_id"]), escape(t["name"]), state, escape(params),
                      *(_num(t["latest_metrics"][m]) if m in t["latest_metrics"] else "-"
                        for m in metrics), escape(t["message"]))
    console.print(table)


@sweeps_app.command("show")
def sweeps_show(sweep: SweepArg, server: ServerOpt = None,
                output: OutputOpt = Output.text) -> None:
    """A sweep's trials with their state, hyperparameters and latest metrics, the best trial
    so far on its objective, how many were stopped early and what it used."""
    with client_for(server, _NAMES) as client:
        found = client.get_sweep(sweep)
    if output is Output.json:
        print_json(found)
        return
    render_sweep(found)


def _act(verb: str, sweep: str, server: str | None, output: Output) -> None:
    with client_for(server, _NAMES) as client:
        found = getattr(client, f"{verb}_sweep")(sweep)
    if output is Output.json:
        print_json(found)
        return
    console.print(f"sweep {escape(sweep)} {_state(found)}: {_counts(found)}"
                  + (f"; {escape(found['message'])}" if found["message"] else ""),
                  highlight=False)


@sweeps_app.command("cancel")
def sweeps_cancel(sweep: SweepArg, server: ServerOpt = None,
                  output: OutputOpt = Output.text) -> None:
    """Cancel every trial: waiting ones at once, running ones are stopped."""
    _act("cancel", sweep, server, output)


@sweeps_app.command("pause")
def sweeps_pause(sweep: SweepArg, server: ServerOpt = None,
                 output: OutputOpt = Output.text) -> None:
    """Launch no new trial; the running ones finish."""
    _act("pause", sweep, server, output)


@sweeps_app.command("resume")
def sweeps_resume(sweep: SweepArg, server: ServerOpt = None,
                  output: OutputOpt = Output.text) -> None:
    """Launch a paused sweep's trials again."""
    _act("resume", sweep, server, output)
