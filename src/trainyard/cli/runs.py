"""`trainyard runs ...`: list, show, compare and reproduce runs (every attempt of every
job)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from trainyard.cli.common import OutputOpt, ServerOpt, client_for, pairs
from trainyard.cli.output import (
    Output,
    console,
    errors,
    print_json,
    styled_state,
    work_lost_text,
)
from trainyard.cli.plot import chart_table, curves, sparkline, write_png

runs_app = typer.Typer(help="Runs: every attempt of every job, with its dataset version, "
                       "code, hyperparameters, metrics, log and model.", no_args_is_help=True)

STATES = ("WAITING", "LAUNCHING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "PREEMPTED")


def thresholds(values: list[str]) -> list[tuple[str, str, float]]:
    from trainyard.domain.errors import InvalidArgument
    from trainyard.domain.runs import parse_threshold

    out = []
    for text in values:
        try:
            t = parse_threshold(text)
        except InvalidArgument as exc:
            raise typer.BadParameter(exc.problem, param_hint="--metric") from None
        out.append((t.key, t.op.value, t.value))
    return out


def short(value: str, n: int = 12) -> str:
    return value[7:7 + n] if value.startswith("sha256:") else value[:n]


def dataset_text(spec: dict[str, Any]) -> str:
    ds = spec.get("dataset")
    return f"{ds['name']}:{ds['version'][:12]}" if ds else "-"


def code_text(code: dict[str, Any]) -> str:
    if code["image"]:
        ident = f" ({short(code['image_id'])})" if code["image_id"] else ""
        text = f"{code['image']}{ident}" if not code["image"].startswith("sha256:") else \
            f"image {short(code['image'])}"
    else:
        text = code["command"] if len(code["command"]) <= 40 else code["command"][:37] + "..."
    if code["git_commit"]:
        text += f" @{code['git_commit'][:10]}"
    return text


def metrics_text(metrics: dict[str, dict[str, Any]], first: str = "", limit: int = 3) -> str:
    keys = sorted(metrics, key=lambda k: (k != first, k))[:limit]
    more = " ..." if len(metrics) > limit else ""
    return " ".join(f"{k}={metrics[k]['value']:.4g}" for k in keys) + more


@runs_app.command("list")
def runs_list(
    job: Annotated[str, typer.Option(help="Only the runs of this job.")] = "",
    dataset: Annotated[str, typer.Option(help="NAME or NAME:VERSION (a prefix will do).")] =
        "",
    algorithm: Annotated[str, typer.Option(
        help="The 'algorithm' label, or a job name (or its start up to a '-').")] = "",
    image: Annotated[str, typer.Option(help="Image as submitted, or its id.")] = "",
    label: Annotated[list[str] | None, typer.Option(help="KEY=VALUE (repeatable).")] = None,
    state: Annotated[list[str] | None, typer.Option(help="The run's state (repeatable).")] =
        None,
    metric: Annotated[list[str] | None, typer.Option(
        help="A threshold on the last value, e.g. 'accuracy>=0.9' (repeatable).")] = None,
    sort: Annotated[str, typer.Option(help="Sort by this metric's last value.")] = "",
    desc: Annotated[bool, typer.Option("--desc", help="Highest first (with --sort).")] = False,
    limit: Annotated[int, typer.Option(help="Page size.")] = 50,
    page_token: Annotated[str, typer.Option(help="Continue from a previous page.")] = "",
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """List runs, newest first or by a metric; filter by dataset, algorithm, image, label,
    state and metric thresholds."""
    found_states = [s.upper() for s in state or []]
    for s in found_states:
        if s not in STATES:
            raise typer.BadParameter(f"{s} is not one of {', '.join(STATES)}",
                                     param_hint="--state")
    with client_for(server, {"job_id": "--job"}) as client:
        found, token = client.list_runs(
            job_id=job, dataset=dataset, algorithm=algorithm, image=image,
            labels=pairs(label or [], "--label"), states=found_states,
            metrics=thresholds(metric or []), sort=sort, descending=desc, page_size=limit,
            page_token=page_token)
    if output is Output.json:
        print_json({"runs": found, "next_page_token": token})
        return
    table = Table("RUN", "NAME", "STATE", "ALGORITHM", "DATASET", "CODE", "METRICS", "STARTED")
    for r in found:
        table.add_row(escape(r["run_id"]), escape(r["name"]), styled_state(r["state"]),
                      escape(r["algorithm"]), escape(dataset_text(r["spec"])),
                      escape(code_text(r["code"])), escape(metrics_text(r["metrics"], sort)),
                      (r["started_at"] or "")[:19])
    console.print(table)
    if token:
        console.print(f"[dim]more: --page-token {token}[/]")


def render_run(r: dict[str, Any]) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    spec, code = r["spec"], r["code"]
    table.add_row("run", f"{escape(r['run_id'])} (job {escape(r['job_id'])}, attempt "
                         f"{r['attempt']}: {escape(r['name'])})")
    table.add_row("state", styled_state(r["state"]))
    if r["has_exit_code"] or r["message"]:
        exit_code = f"exit code {r['exit_code']}" if r["has_exit_code"] else ""
        table.add_row("ended", escape("; ".join(x for x in (exit_code, r["message"]) if x)))
    table.add_row("owner", escape(r["owner"]))
    pinned = code.get("algorithm")
    table.add_row("algorithm", escape(
        f"{pinned['name']}:{pinned['version']}" + (f", code {code['code_hash'][:12]}"
                                                  if code.get("code_hash") else "")
        if pinned else r["algorithm"]))
    table.add_row("dataset", escape(f"{spec['dataset']['name']}:{spec['dataset']['version']}"
                                    if spec["dataset"] else "-"))
    if code["image"]:
        table.add_row("image", escape(code["image"]))
        table.add_row("image id", escape(code["image_id"] or "(not recorded)"))
    if code["command"]:
        table.add_row("command", escape(code["command"]))
    if code["git_commit"]:
        table.add_row("git commit", escape(code["git_commit"]))
    if spec["hyperparameters"]:
        table.add_row("params", escape(" ".join(f"{k}={v}" for k, v in
                                                sorted(spec["hyperparameters"].items()))))
    res = spec["resources"]
    table.add_row("resources", f"{res['cpus']:g} CPUs, {res['memory_mb']} MiB, {res['gpus']} "
                               f"GPUs; {spec['workers'] or 1} worker(s); queue "
                               f"{escape(spec['queue'])}")
    gpus = f", GPUs {','.join(r['gpu_ids'])}" if r["gpu_ids"] else ""
    table.add_row("ran on", f"{escape(r['executor'])} executor, pool {escape(r['pool'])}{gpus}")
    if r.get("notice_at"):
        saved = f"; checkpoint saved {r['checkpoint_at'][:19]}" if r.get("checkpoint_at") \
            else "; no checkpoint saved"
        table.add_row("notice", f"preemption notice {r['notice_at'][:19]}{saved}")
    if r["state"] == "PREEMPTED":
        table.add_row("work lost", work_lost_text(r.get("work_lost_seconds") or 0.0))
    if spec["labels"]:
        table.add_row("labels", escape(" ".join(f"{k}={v}" for k, v in
                                                sorted(spec["labels"].items()))))
    series = {s["key"]: [p["value"] for p in s["points"]] for s in r.get("series") or []}
    for key, m in sorted(r["metrics"].items()):
        values = series.get(key, [])
        line = sparkline(values, min(values), max(values)) if len(values) > 1 else ""
        table.add_row(f"metric {escape(key)}", f"{m['value']:.6g} (step {m['step']})  "
                                               f"[cyan]{line}[/]")
    if r["model"]:
        model = r["model"]
        aliases = f" @{', @'.join(model['aliases'])}" if model["aliases"] else ""
        table.add_row("model", f"{escape(model['model_name'])}:{model['version']}"
                               f"{escape(aliases)} sha256:{model['content_hash'][:12]}")
    table.add_row("log", f"{escape(r['log_uri'])} ({r['log_size_bytes']} bytes; "
                         f"trainyard logs {escape(r['job_id'])})")
    if r["reproduced_from"]:
        table.add_row("reproduces", escape(r["reproduced_from"]))
    if r.get("reproduced_by"):
        table.add_row("reproduced by", escape(", ".join(r["reproduced_by"])))
    for t in r.get("transitions") or []:
        table.add_row("", f"[dim]{t['time']}[/] {t['from_state'] or '-'} -> "
                          f"{t['to_state']}: {escape(t['reason'])}")
    console.print(table)


@runs_app.command("show")
def runs_show(
    run_id: Annotated[str, typer.Argument(help="JOB-ATTEMPT, or a job id for its latest.")],
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """One run: what it ran, where, when each state began, how it ended, its metrics, log,
    model, and the runs it reproduces or that reproduce it."""
    with client_for(server) as client:
        found = client.get_run(run_id)
    if output is Output.json:
        print_json(found)
    else:
        render_run(found)


def run_labels(runs: list[dict[str, Any]]) -> dict[str, str]:
    """How a run is named in a table: its job's name, with the attempt where it repeats."""
    names = [r["name"] for r in runs]
    return {r["run_id"]: r["name"] if names.count(r["name"]) == 1 and r["attempt"] == 1
            else f"{r['name']}#{r['attempt']}" if names.count(r["name"]) == 1
            else f"{r['name']} ({r['run_id'][-6:]})" for r in runs}


def render_comparison(comparison: dict[str, Any], all_settings: bool = False) -> None:
    """Side by side; the keys on which the runs differ are marked and highlighted. Settings
    that every run shares are summed up in a line unless `all_settings`."""
    runs = comparison["runs"]
    labels = run_labels(runs)
    keys = [row["key"] for part in ("settings", "hyperparameters", "metrics")
            for row in comparison[part]]
    key_width = min(20, max((len(k) for k in keys), default=3))
    # Each run's column as wide as its name, where the terminal has room for that; its id
    # under the name when there is room for that too, else in a legend below.
    room = max(8, (console.width - key_width - 4) // max(1, len(runs)) - 3)
    with_ids = room >= max(len(r["run_id"]) for r in runs)
    title = "runs compared"
    heads = dict(labels)
    prefix = os.path.commonprefix(list(labels.values()))
    prefix = prefix[:prefix.rfind("-") + 1]
    if not with_ids and len(runs) > 1 and prefix and \
            max(len(v) for v in labels.values()) > room:
        title = f"runs of {prefix}* compared"  # narrow: the names' shared start goes up here
        heads = {k: v[len(prefix):] for k, v in labels.items()}
    table = Table("  KEY", *(escape(heads[r["run_id"]]) + (
                      f"\n[dim]{escape(r['run_id'])}[/]" if with_ids else "") for r in runs),
                  title=f"{escape(title)} ([yellow]*[/] marks the keys that differ)",
                  show_edge=False, pad_edge=False)
    table.columns[0].min_width = key_width + 2
    for column, run in zip(table.columns[1:], runs, strict=True):
        column.overflow = "fold"
        column.min_width = min(room, len(heads[run["run_id"]]))

    def add(section: str, rows: list[dict[str, Any]], fmt: Any) -> None:
        if not rows:
            return
        table.add_section()
        table.add_row(f"[bold]{section}[/]", *("" for _ in runs))
        for row in rows:
            cells = [escape(fmt(v["value"])) if v["present"] else "[dim]-[/]"
                     for v in row["values"]]
            table.add_row(("* " if row["differs"] else "  ") + escape(row["key"]), *cells,
                          style="bold yellow" if row["differs"] else None)

    settings = comparison["settings"]
    shared = [] if all_settings else [s["key"] for s in settings if not s["differs"]]
    add("settings", [s for s in settings if s["key"] not in shared],
        lambda v: short(v, 24) if v.startswith("sha256:") else
        (v if len(v) <= 40 else v[:37] + "..."))
    add("params", comparison["hyperparameters"], str)
    add("metrics", comparison["metrics"], lambda v: f"{v:.6g}")
    console.print(table)
    if not with_ids:
        console.print("[dim]runs: " + escape(", ".join(f"{labels[r['run_id']]} = {r['run_id']}"
                                                      for r in runs)) + "[/]",
                      highlight=False)
    if shared:
        console.print(f"[dim]the same in every run: {escape(', '.join(shared))} "
                      "(--all-settings shows them)[/]", highlight=False)


def chart_width(runs: int) -> int:
    """As wide a curve as the terminal leaves room for, within reason."""
    return max(12, min(48, console.width - 48))


@runs_app.command("compare")
def runs_compare(
    run_ids: Annotated[list[str], typer.Argument(help="Runs to compare (JOB-ATTEMPT or job "
                                                      "ids).")],
    chart: Annotated[bool, typer.Option("--chart", help="Also draw each metric's curve in "
                                        "the terminal.")] = False,
    all_settings: Annotated[bool, typer.Option(
        "--all-settings", help="Show the settings every run shares too.")] = False,
    plot: Annotated[Path | None, typer.Option(help="Write the metric curves to this PNG.")] =
        None,
    metric: Annotated[list[str] | None, typer.Option(
        help="Only these metrics in the curves (repeatable).")] = None,
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Hyperparameters, settings and final metrics side by side, differences highlighted;
    optionally the metric curves, in the terminal or to a PNG."""
    if plot is not None and plot.suffix.lower() != ".png":
        raise typer.BadParameter("the plot is written as PNG: give FILE.png",
                                 param_hint="--plot")
    with client_for(server) as client:
        found = client.compare_runs(run_ids, series=chart or plot is not None)
    by_metric = curves(found["runs"])
    drawn: list[str] = []
    if plot is not None:
        try:
            drawn = write_png(by_metric, plot, metric or (), title="runs compared")
        except (ValueError, OSError) as exc:
            errors.print(f"[red]error[/]: cannot write {escape(str(plot))}: "
                         f"{escape(str(exc))}", highlight=False)
            raise typer.Exit(1) from None
    if output is Output.json:
        if plot is not None:
            found["plot"] = {"path": str(plot), "metrics": drawn}
        print_json(found)
        return
    render_comparison(found, all_settings)
    if chart:
        table = chart_table(by_metric, metric or (), run_labels(found["runs"]),
                            chart_width(len(found["runs"])))
        console.print(table if table is not None else "[dim]no metric points to draw[/]")
    if plot is not None:
        console.print(f"wrote {escape(str(plot))} ({', '.join(drawn)})", highlight=False)


@runs_app.command("reproduce")
def runs_reproduce(
    run_id: Annotated[str, typer.Argument(help="JOB-ATTEMPT, or a job id for its latest.")],
    request_id: Annotated[str, typer.Option(help="Makes a retried call idempotent.")] = "",
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Submit the run again with its pinned spec (same dataset version, image id,
    hyperparameters, resources, workers and queue); prints the new job's id."""
    with client_for(server) as client:
        found = client.reproduce_run(run_id, client_request_id=request_id)
    if output is Output.json:
        print_json(found)
        return
    console.print(found["job_id"], highlight=False)
    image = found["spec"]["image"]
    pinned = f", image pinned to {short(image)}" if image.startswith("sha256:") else ""
    errors.print(f"reproduces {escape(found['reproduces'])}{pinned}", highlight=False)
