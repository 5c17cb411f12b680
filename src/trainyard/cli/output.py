"""Rendering for people (rich) and for scripts (--output json)."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from trainyard.client import Dataset, JobStatus, JobSummary
from trainyard.quantities import describe_duration, hours, period_words

if TYPE_CHECKING:  # the Docker SDK is imported only by the commands that need it
    from trainyard.services.images import ImageInfo

console = Console()
errors = Console(stderr=True)

STATE_STYLE = {
    "WAITING": "yellow", "LAUNCHING": "cyan", "RUNNING": "blue", "SUCCEEDED": "green",
    "FAILED": "red", "CANCELLED": "magenta", "PREEMPTED": "yellow",
}


class Output(StrEnum):
    text = "text"
    json = "json"


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=False, default=str))


def styled_state(state: str) -> str:
    return f"[{STATE_STYLE.get(state, 'white')}]{state}[/]"


def _attempts(st: JobStatus) -> str:
    """How many attempts it may use and which it retries, e.g. "at most 3 (lost ones and
    failed ones retried); 1 retried"."""
    spec = st.spec
    retried = ["lost ones"]
    if spec.get("retry_on_failure"):
        retried.append("failed ones")
    elif spec.get("retry_exit_codes"):
        codes = ", ".join(str(c) for c in spec["retry_exit_codes"])
        retried.append(f"those exiting with {codes}")
    most = spec.get("max_attempts") or 1
    said = f"at most {most}" + (f" ({' and '.join(retried)} retried)" if most > 1 else "")
    return said + (f"; {st.retries} retried" if st.retries else "")


def work_lost_text(seconds: float, preemptions: int | None = None) -> str:
    """The work preemption cost, e.g. "preempted 2 times; 3 min 20 s of work lost (run
    past the last checkpoint)"; for one run (`preemptions` None) the seconds alone."""
    lost = f"{describe_duration(round(seconds, 1))} of work lost (run past the last checkpoint)"
    if preemptions is None:
        return lost
    times = "once" if preemptions == 1 else f"{preemptions} times"
    return f"preempted {times}; {lost}"


def render_status(st: JobStatus) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    # Everything a user wrote (commands, names, messages) is escaped: "[adam]" or "[/]"
    # in a command must print as written, not be read as markup.
    table.add_row("job", f"{escape(st.job_id)} ({escape(st.name)})")
    if st.sample_job_id:
        table.add_row("sample job id", str(st.sample_job_id))
    ended = " [dim](stopped early)[/]" if st.end_reason == "STOPPED_EARLY" else ""
    table.add_row("state", styled_state(st.state) + ended)
    if st.state == "WAITING":
        table.add_row("position", f"{st.queue_position} in queue {escape(st.queue)}")
        if st.pending_reason:
            table.add_row("waiting", f"{escape(st.pending_reason['message'])} "
                                     f"[dim]({st.pending_reason['code']})[/]")
        if st.predicted_start:
            table.add_row("start", f"{escape(st.predicted_start.describe())} "
                                   f"[dim]({st.predicted_start.age()})[/]")
    if st.message:
        table.add_row("message", escape(st.message))
    if st.after:
        table.add_row("after", escape(", ".join(d.describe() for d in st.after)))
    spec = st.spec
    if spec.get("algorithm"):
        code = f", code {spec['code_hash'][:12]}" if spec.get("code_hash") else ""
        table.add_row("algorithm", escape(spec["algorithm"]) + code)
    if spec["image"]:
        table.add_row("image", escape(spec["image"]))
    if spec["command"] or not spec["image"]:
        table.add_row("command", escape(spec["command"]))
    res, workers = spec["resources"], spec.get("workers", 1)
    each = " each" if workers > 1 else ""
    table.add_row("workers", str(workers))
    table.add_row("resources", f"{res['cpus']:g} CPUs, {res['memory_mb']} MiB, "
                               f"{res['gpus']} GPUs{each}")
    if st.executor:
        gpus = f", GPUs {','.join(st.gpu_ids)}" if st.gpu_ids else ""
        table.add_row("runs on", f"{escape(st.executor)}, attempt {st.attempt}{gpus}")
    table.add_row("attempts", _attempts(st))
    if st.preemptions:
        table.add_row("preempted", work_lost_text(st.work_lost_seconds, st.preemptions))
    if st.last_checkpoint_at:
        table.add_row("checkpoint", f"last saved {st.last_checkpoint_at[:19]}")
    limits = [f"{what} {describe_duration(spec[key])}" for what, key in (
        ("runs at most", "time_limit_seconds"), ("waits at most", "pending_timeout_seconds"))
        if spec.get(key)]
    if limits:
        table.add_row("limits", ", ".join(limits))
    if spec["dataset"]:
        table.add_row("dataset", escape(f"{spec['dataset']['name']}:"
                                        f"{spec['dataset']['version'][:12]}"))
    if spec["hyperparameters"]:
        table.add_row("params", escape(" ".join(f"{k}={v}"
                                                for k, v in spec["hyperparameters"].items())))
    for key, m in sorted(st.metrics.items()):
        table.add_row(f"metric {escape(key)}", f"{m['value']:.6g} (step {m['step']})")
    if st.malformed_metric_lines:
        table.add_row("metrics", f"[yellow]{st.malformed_metric_lines} malformed line(s) "
                                 "skipped[/]")
    if st.model:
        table.add_row("model", f"{escape(st.model['model_name'])} v{st.model['version']} "
                               f"sha256:{st.model['content_hash'][:12]} {st.model['uri']}")
    for t in st.transitions:
        table.add_row("", f"[dim]{t.time}[/] {t.from_state or '-'} -> {t.to_state}: "
                          f"{escape(t.reason)}")
    console.print(table)


def render_jobs(jobs: list[JobSummary]) -> None:
    table = Table("JOB", "NAME", "STATE", "QUEUE", "PRI", "SUBMITTED", "STARTS", "MESSAGE")
    for j in jobs:
        starts = j.predicted_start.brief() if j.predicted_start else "-"
        message = j.message or _waits_for(j)
        table.add_row(escape(j.job_id), escape(j.name), styled_state(j.state),
                      escape(j.queue), str(j.priority),
                      (j.submitted_at or "")[:19], escape(starts), escape(message))
    console.print(table)


def _waits_for(job: JobSummary) -> str:
    """What a waiting job still waits for (--after): "after abc123 to succeed (RUNNING)"."""
    open_ = [d.describe() for d in job.after if not d.met]
    return "after " + ", ".join(open_) if job.state == "WAITING" and open_ else ""


def render_images(images: list[ImageInfo]) -> None:
    table = Table("IMAGE", "ID", "SIZE", "CREATED")
    for image in images:
        table.add_row(escape(", ".join(image.tags) or "<none>"), image.image_id[7:19],
                      f"{image.size_bytes / 1e6:.0f} MB", image.created[:19])
    console.print(table)


def render_datasets(datasets: list[Dataset]) -> None:
    table = Table("NAME", "VERSION", "FILES", "BYTES", "CREATED", "RUNS")
    for d in datasets:
        shown = ", ".join(d.run_ids[:3]) + (", ..." if len(d.run_ids) > 3 else "")
        table.add_row(escape(d.name), d.version, str(d.file_count), str(d.size_bytes),
                      (d.created_at or "")[:19],
                      f"{d.run_count}" + (f": {escape(shown)}" if shown else ""))
    console.print(table)


def _amount(usage: dict[str, Any]) -> str:
    parts = [f"{usage.get('gpus', 0)} GPUs", f"{usage.get('cpus', 0):g} CPUs",
             f"{usage.get('memory_mb', 0)} MiB"]
    return ", ".join(parts)


def render_queues(view: dict[str, Any]) -> None:
    source = view["source"] or "built-in: FIFO, one open queue"
    console.print(f"policy: {escape(source)}; {view['running']} of {view['max_running']} job "
                  "slots in use", highlight=False)
    queues = Table("QUEUE", "PRI", "WAITING", "RUNNING", "LIMIT", "POOLS", "WEIGHT", "OPEN TO")
    for q in view["queues"]:
        who = ", ".join([*q["users"], *(f"team {t}" for t in q["teams"])]) or "everyone"
        queues.add_row(escape(q["name"]), str(q["priority"]), str(q["waiting"]),
                       str(q["running"]), str(q["max_running"] or "-"),
                       escape(", ".join(q["pools"])), f"{q['weight']:g}", escape(who))
    console.print(queues)
    pools = Table("POOL", "EXECUTOR", "JOBS", "CPUS", "MEMORY MiB", "GPUS")
    for p in view["pools"]:
        used = p["used"]
        pools.add_row(escape(p["name"]), p["executor"], f"{p['jobs']}/{p['max_jobs']}",
                      f"{used['cpus']:g}/{p['cpus']:g}" if "cpus" in p else f"{used['cpus']:g}",
                      f"{used['memory_mb']}/{p['memory_mb']}" if "memory_mb" in p
                      else str(used["memory_mb"]), f"{used['gpus']}/{p['gpus']}")
    console.print(pools)
    if view["teams"]:
        teams = Table("TEAM", "POOL", "USED", "QUOTA", "MAY BORROW")
        for t in view["teams"]:
            for quota in t["quotas"]:
                teams.add_row(escape(t["name"]), escape(quota["pool"]), _amount(quota["used"]),
                              _amount(quota["quota"]), _amount(quota["borrow_limit"]))
        console.print(teams)
    budgets = [*view.get("team_budgets", ()),
               *(q["budget"] for q in view["queues"] if q.get("budget"))]
    if budgets:
        table = Table("BUDGET", "IN THE LAST", "GPU-HOURS USED", "CPU-HOURS USED")
        for b in budgets:
            table.add_row(escape(f"{b['kind']} {b['name']}"), period_words(b["period_seconds"]),
                          _budget_use(b.get("gpu_hours")), _budget_use(b.get("cpu_hours")))
        console.print(table)


def _budget_use(limited: dict[str, Any] | None) -> str:
    """"982 of 1,000"; "-" for a resource the budget does not limit."""
    if not limited:
        return "-"
    return f"{hours(limited.get('used', 0.0))} of {hours(limited.get('limit', 0.0))}"
