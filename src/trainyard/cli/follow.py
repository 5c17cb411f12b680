"""`submit --follow`: live state and a progress bar fed by the job's metrics."""

from __future__ import annotations

import time

from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from trainyard.cli.output import console, styled_state
from trainyard.client import Client, JobStatus

PROGRESS_KEYS = ("epochs", "total_steps", "max_steps")


def _progress(st: JobStatus) -> tuple[float | None, float]:
    """(total, completed) from the job's metrics: a `progress` in [0,1], else the step
    against an `epochs`/`total_steps` hyperparameter."""
    if "progress" in st.metrics:
        return 1.0, float(st.metrics["progress"]["value"])
    params = {k.lower(): v for k, v in st.spec["hyperparameters"].items()}
    steps = [int(m["step"]) for m in st.metrics.values()]
    for key in PROGRESS_KEYS:
        try:
            total = float(params[key])
        except (KeyError, ValueError):
            continue
        return total, float(max(steps, default=0))
    return None, float(max(steps, default=0))


def _summary(st: JobStatus) -> str:
    shown = [f"{k}={v['value']:.4g}" for k, v in sorted(st.metrics.items())][:4]
    return " ".join(shown)


def follow_job(client: Client, job_id: str, *, quiet: bool = False,
               interval: float = 0.25) -> JobStatus:
    st = client.status(job_id)
    columns = (TextColumn("{task.fields[state]}"), BarColumn(),
               TextColumn("{task.fields[info]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=quiet, transient=False) as bar:
        task = bar.add_task(job_id, total=None, state=styled_state(st.state), info="")
        while True:
            total, done = _progress(st)
            info = (st.pending_reason or {}).get("message", "") if st.state == "WAITING" \
                else _summary(st)
            bar.update(task, total=total, completed=done, state=styled_state(st.state),
                       info=escape(info))
            if st.is_final:
                break
            time.sleep(interval)
            st = client.status(job_id)
    if not quiet:
        console.print(f"{job_id} {styled_state(st.state)}: {escape(st.message)}")
    return st
