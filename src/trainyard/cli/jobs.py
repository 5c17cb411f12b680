"""The job commands: submit, sweep, status, list, logs, cancel, watch, and the queues they
wait in. All go through the SDK."""

from __future__ import annotations

import sys
from typing import Annotated

import click
import typer
from rich.markup import escape

from trainyard.cli.common import OutputOpt, ServerOpt, client_for, duration, pairs, size
from trainyard.cli.output import (
    Output,
    console,
    print_json,
    render_jobs,
    render_queues,
    render_status,
    styled_state,
)
from trainyard.client import Resources, TrainSpec
from trainyard.client.spec import DEFAULT_QUEUE


def given_resources(ctx: typer.Context, cpus: float, memory: str, gpus: int) -> Resources:
    """The resources as typed; each option left out is 0 on the wire, "not given": the job's
    algorithm's default, else the server's."""

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT

    return Resources(cpus=cpus if given("cpus") else 0.0,
                     memory_mb=size(memory, "--memory") if given("memory") else 0,
                     gpus=gpus)


ALGORITHM_HELP = ("A registered algorithm, NAME[:VERSION|@ALIAS], in place of --command and "
                  "--image; resolved now to the version the job keeps.")


def submit(
    ctx: typer.Context,
    name: Annotated[str, typer.Option(help="Job name; also the model's name.")],
    command: Annotated[str, typer.Option(
        help="Shell command to run; with --image, replaces the image's command.")] = "",
    algorithm: Annotated[str, typer.Option(help=ALGORITHM_HELP)] = "",
    git_commit: Annotated[str, typer.Option(
        help="The code's git commit, recorded on the run.")] = "",
    model_name: Annotated[str, typer.Option(
        help="The model its files become a version of [default: --name].")] = "",
    image: Annotated[str, typer.Option(
        help="Run as a container of this local image (the server needs --docker).")] = "",
    dataset: Annotated[str, typer.Option(help="NAME:VERSION of a registered dataset.")] = "",
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="Hyperparameter KEY=VALUE (repeatable).")] = None,
    label: Annotated[list[str] | None, typer.Option(help="Label KEY=VALUE (repeatable).")] = None,
    cpus: Annotated[float, typer.Option(help="CPU cores.")] = Resources.cpus,
    memory: Annotated[str, typer.Option(
        help='Memory: "512M", "4G", "4Gi", or a number of MiB.')] = str(Resources.memory_mb),
    gpus: Annotated[int, typer.Option(help="GPUs.")] = 0,
    workers: Annotated[int, typer.Option(
        min=1, help="Workers started together, each with --cpus, --memory and --gpus, "
                    "told its RANK and its peers.")] = 1,
    framework: Annotated[str, typer.Option(
        help="Worker variables a group gets: pytorch, tensorflow or none [default: "
             "both sets].")] = "",
    queue: Annotated[str, typer.Option(help="Queue name.")] = DEFAULT_QUEUE,
    priority: Annotated[int, typer.Option(help="Higher runs earlier.")] = 0,
    request_id: Annotated[str, typer.Option(help="Makes a retried submit idempotent.")] = "",
    pipeline: Annotated[str, typer.Option(
        help="Your pipeline this job joins (made on its first job).")] = "",
    pipeline_max_parallel: Annotated[int, typer.Option(
        help="The pipeline's running limit from now on; 0 keeps its limit.")] = 0,
    max_attempts: Annotated[int, typer.Option(
        min=0, max=100, help="Attempts it may use: a lost one (its node failed, its engine "
        "restarted, its container vanished) is retried up to this [default: the queue's, "
        "else 3].")] = 0,
    retry_on_failure: Annotated[bool, typer.Option(
        "--retry-on-failure", help="Retry a failed attempt (non-zero exit) too.")] = False,
    retry_exit_code: Annotated[list[int] | None, typer.Option(
        min=1, max=255, help="Retry a failed attempt that exits with this code "
        "(repeatable).")] = None,
    time_limit: Annotated[str, typer.Option(
        help="Each attempt's running time, e.g. 2h: then TERM, KILL after the grace, and "
             "the job fails [default: the queue's, else none].")] = "",
    pending_timeout: Annotated[str, typer.Option(
        help="Cancel it if still waiting to start after this long, e.g. 1d.")] = "",
    after: Annotated[list[str] | None, typer.Option(
        help="Wait for this job: JOB_ID or JOB_ID:succeeded (start once it succeeds; "
             "cancelled if it fails or is cancelled) or JOB_ID:finished (once it ends, "
             "however) (repeatable).")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Show live state and "
                                         "progress until the job ends.")] = False,
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Submit a training job and print its id."""
    if dataset and ":" not in dataset:
        raise typer.BadParameter("expected NAME:VERSION", param_hint="--dataset")
    spec = TrainSpec(
        name=name, command=command, image=image, dataset=dataset, algorithm=algorithm,
        hyperparameters=pairs(param or [], "--param"), labels=pairs(label or [], "--label"),
        resources=given_resources(ctx, cpus, memory, gpus),
        queue=queue, priority=priority, client_request_id=request_id, workers=workers,
        pipeline=pipeline, pipeline_max_parallel=pipeline_max_parallel,
        git_commit=git_commit, model_name=model_name, framework=framework,
        max_attempts=max_attempts, retry_on_failure=retry_on_failure,
        retry_exit_codes=tuple(retry_exit_code or ()),
        time_limit_s=duration(time_limit, "--time-limit") if time_limit else 0.0,
        pending_timeout_s=duration(pending_timeout, "--pending-timeout") if pending_timeout
        else 0.0, after=tuple(after or ()),
    )
    with client_for(server) as client:
        submitted = client.train(spec)
        if output is Output.json and not follow:
            print_json({"job_id": submitted.job_id, "existing": submitted.existing})
            return
        if output is Output.text:
            console.print(submitted.job_id if not follow else f"submitted {submitted.job_id}")
        if follow:
            from trainyard.cli.follow import follow_job

            final = follow_job(client, submitted.job_id, quiet=output is Output.json)
            if output is Output.json:
                print_json(final.to_dict())
            if final.state != "SUCCEEDED":
                raise typer.Exit(1)


def _ranges(values: list[str]) -> dict[str, tuple[float, float, bool]]:
    out: dict[str, tuple[float, float, bool]] = {}
    for key, spec in pairs(values, "--range").items():
        parts = spec.split(":")
        try:
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "log"):
                raise ValueError
            out[key] = (float(parts[0]), float(parts[1]), len(parts) == 3)
        except ValueError:
            raise typer.BadParameter(f"{key}={spec}: expected NAME=LOW:HIGH or "
                                     "NAME=LOW:HIGH:log", param_hint="--range") from None
    return out


def sweep(
    ctx: typer.Context,
    name: Annotated[str, typer.Option(help="Sweep name; trials are NAME-1, NAME-2, ...")],
    command: Annotated[str, typer.Option(help="Shell command of every trial.")] = "",
    image: Annotated[str, typer.Option(help="Container image of every trial.")] = "",
    algorithm: Annotated[str, typer.Option(help=ALGORITHM_HELP + " One version for every "
                                           "trial.")] = "",
    git_commit: Annotated[str, typer.Option(
        help="The code's git commit, recorded on each run.")] = "",
    model_name: Annotated[str, typer.Option(
        help="The model every trial's files become a version of [default: each trial's "
        "name].")] = "",
    dataset: Annotated[str, typer.Option(help="NAME:VERSION of a registered dataset.")] = "",
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="A fixed hyperparameter KEY=VALUE (repeatable).")] = None,
    grid: Annotated[list[str] | None, typer.Option(
        help="Grid search: KEY=V1,V2,... (repeatable; every combination runs).")] = None,
    choice: Annotated[list[str] | None, typer.Option(
        help="Random search: KEY=V1,V2,... drawn per trial (repeatable).")] = None,
    range_: Annotated[list[str] | None, typer.Option(
        "--range", help="Random search: KEY=LOW:HIGH, or KEY=LOW:HIGH:log (repeatable).")] =
        None,
    trials: Annotated[int, typer.Option(help="Random search: how many trials.")] = 0,
    seed: Annotated[int, typer.Option(help="Random search: the seed (same seed, same "
                                           "trials).")] = 0,
    max_parallel: Annotated[int, typer.Option(help="Trials that may run at once (0: no limit "
                                                   "of its own).")] = 0,
    cpus: Annotated[float, typer.Option(help="CPU cores per trial.")] = Resources.cpus,
    memory: Annotated[str, typer.Option(
        help='Memory per trial: "512M", "4G", "4Gi", or a number of MiB.')] =
        str(Resources.memory_mb),
    gpus: Annotated[int, typer.Option(help="GPUs per trial.")] = 0,
    workers: Annotated[int, typer.Option(min=1, help="Workers per trial, each with --cpus, "
                                                     "--memory and --gpus.")] = 1,
    queue: Annotated[str, typer.Option(help="Queue name.")] = DEFAULT_QUEUE,
    priority: Annotated[int, typer.Option(help="Higher runs earlier.")] = 0,
    label: Annotated[list[str] | None, typer.Option(help="Label KEY=VALUE (repeatable).")] = None,
    objective: Annotated[str, typer.Option(
        help="The metric trials are judged on: METRIC:max or METRIC:min (e.g. "
        "test_accuracy:max).")] = "",
    early_stop: Annotated[str, typer.Option(
        help="Stop losing trials on --objective: median, asha or none.")] = "none",
    min_steps: Annotated[int, typer.Option(
        help="The first step the rule judges (median) or the first rung (asha) "
        "[default: 1].")] = 0,
    reduction: Annotated[int, typer.Option(
        help="asha: rungs at min-steps x reduction^k; a trial goes on in the top "
        "1/reduction [default: 3].")] = 0,
    max_trials: Annotated[int, typer.Option(
        help="At most this many trials launched in all (0: no limit).")] = 0,
    max_gpu_hours: Annotated[float, typer.Option(
        help="GPU-hours of all trials together; once used, no more trials start "
        "(0: no limit).")] = 0.0,
    max_cpu_hours: Annotated[float, typer.Option(
        help="CPU-hours of all trials together, likewise (0: no limit).")] = 0.0,
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Submit a grid or random search over hyperparameters as one sweep of jobs."""
    if dataset and ":" not in dataset:
        raise typer.BadParameter("expected NAME:VERSION", param_hint="--dataset")
    if trials and grid:
        raise typer.BadParameter("a sweep is a grid (--grid) or random (--trials with "
                                 "--choice/--range), not both", param_hint="--grid")
    split = {k: v.split(",") for k, v in pairs(grid or [], "--grid").items()}
    choices = {k: v.split(",") for k, v in pairs(choice or [], "--choice").items()}
    template = TrainSpec(
        name=name, command=command, image=image, dataset=dataset, algorithm=algorithm,
        hyperparameters=pairs(param or [], "--param"), labels=pairs(label or [], "--label"),
        resources=given_resources(ctx, cpus, memory, gpus),
        queue=queue, priority=priority, workers=workers, git_commit=git_commit,
        model_name=model_name)
    with client_for(server, {"parameters.values": "--choice" if choice else "--grid"}
                    ) as client:
        sweep_id, job_ids = client.sweep(template, grid=split, choices=choices,
                                         ranges=_ranges(range_ or []), trials=trials,
                                         seed=seed, max_parallel=max_parallel,
                                         objective=objective, early_stop=early_stop,
                                         min_steps=min_steps, reduction=reduction,
                                         max_trials=max_trials, max_gpu_hours=max_gpu_hours,
                                         max_cpu_hours=max_cpu_hours)
    if output is Output.json:
        print_json({"sweep_id": sweep_id, "job_ids": job_ids})
        return
    limit = f", at most {max_parallel} at once" if max_parallel else ""
    console.print(f"sweep {sweep_id}: {len(job_ids)} jobs{limit}", highlight=False)
    for job_id in job_ids:
        console.print(job_id, highlight=False)


def status(
    job_id: str, server: ServerOpt = None, output: OutputOpt = Output.text,
) -> None:
    """Show a job's state, why it waits, its metrics, model and history."""
    with client_for(server) as client:
        st = client.status(job_id)
    if output is Output.json:
        print_json(st.to_dict())
    else:
        render_status(st)


def list_jobs(
    state: Annotated[list[str] | None, typer.Option(help="Only these states (repeatable).")]
    = None,
    queue: Annotated[str, typer.Option(help="Only this queue.")] = "",
    label: Annotated[list[str] | None, typer.Option(help="KEY=VALUE (repeatable).")] = None,
    limit: Annotated[int, typer.Option(help="Page size.")] = 50,
    page_token: Annotated[str, typer.Option(help="Continue from a previous page.")] = "",
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """List jobs, newest first."""
    with client_for(server) as client:
        jobs, token = client.list_jobs(states=state, queue=queue,
                                       labels=pairs(label or [], "--label"),
                                       page_size=limit, page_token=page_token)
    if output is Output.json:
        print_json({"jobs": [j.to_dict() for j in jobs], "next_page_token": token})
        return
    render_jobs(jobs)
    if token:
        console.print(f"[dim]more: --page-token {token}[/]")


def logs(
    job_id: str,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep streaming until the job "
                                         "ends.")] = False,
    server: ServerOpt = None,
) -> None:
    """Print a job's output (stdout and stderr)."""
    with client_for(server) as client:
        for chunk in client.logs(job_id, follow=follow):
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()


def cancel(job_id: str, server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """Cancel a waiting or running job."""
    with client_for(server) as client:
        state = client.cancel(job_id)
    if output is Output.json:
        print_json({"job_id": job_id, "state": state})
    elif state == "CANCELLED":
        console.print(f"{job_id} {styled_state(state)}")
    else:
        console.print(f"{job_id} is {styled_state(state)}; it is being stopped")


def watch(job_id: str, server: ServerOpt = None) -> None:
    """Print each state change of a job until it is final."""
    with client_for(server) as client:
        for t in client.watch(job_id):
            console.print(f"[dim]{t.time}[/] {t.from_state or '-'} -> "
                          f"{styled_state(t.to_state)}: {escape(t.reason)}")


def queues(server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """The queueing policy in force: queues with their waiting and running jobs, pools with
    their use, and teams with their use against their quotas."""
    with client_for(server) as client:
        view = client.queues()
    if output is Output.json:
        print_json(view)
        return
    render_queues(view)
