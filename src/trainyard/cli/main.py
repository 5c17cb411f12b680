"""Entry point: `trainyard COMMAND`. Every command but `server` goes through the SDK."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from trainyard.cli.admin import admin_app
from trainyard.cli.common import OutputOpt, ServerOpt, client_for, pairs
from trainyard.cli.models import datasets_delete, datasets_lineage, models_app
from trainyard.cli.output import (
    Output,
    console,
    errors,
    print_json,
    render_datasets,
    render_images,
    render_jobs,
    render_queues,
    render_status,
    styled_state,
)
from trainyard.cli.runs import runs_app
from trainyard.cli.sim import sim as sim_command
from trainyard.client import Resources, TrainSpec

if TYPE_CHECKING:
    from trainyard.executors.docker import DockerConfig
    from trainyard.server.assembly import TrainyardServer

app = typer.Typer(help="Trainyard: submit, queue, run and track training jobs.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
datasets_app = typer.Typer(help="Register and list immutable dataset versions.",
                           no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")
images_app = typer.Typer(help="Build and list container images in the local Docker engine "
                         "(no registry needed).", no_args_is_help=True)
app.add_typer(images_app, name="images")
app.add_typer(admin_app, name="admin")
app.command("sim")(sim_command)
app.add_typer(runs_app, name="runs")  # cli/runs.py
app.add_typer(models_app, name="models")  # cli/models.py
datasets_app.command("lineage")(datasets_lineage)
datasets_app.command("delete")(datasets_delete)

@app.command()
def server(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one).")] = 50051,
    data_dir: Annotated[Path, typer.Option(help="Where the SQLite store, datasets, logs and "
                                                "artifacts live.")] = Path(".trainyard"),
    database_url: Annotated[str, typer.Option(
        envvar="TRAINYARD_DATABASE_URL",
        help="postgresql://... to use PostgreSQL instead of SQLite.")] = "",
    max_concurrent: Annotated[int, typer.Option(help="Jobs that may run at once.")] = 4,
    port_file: Annotated[Path | None, typer.Option(help="Write the bound port here once "
                                                        "serving.")] = None,
    docker: Annotated[bool, typer.Option(
        "--docker/--no-docker", help="Run jobs submitted with --image as containers in the "
        "local Docker engine.")] = False,
    docker_cpus: Annotated[float, typer.Option(
        help="CPUs of the Docker pool [default: this host's].")] = 0.0,
    docker_memory: Annotated[int, typer.Option(
        help="Memory of the Docker pool in MiB [default: this host's].")] = 0,
    docker_max_containers: Annotated[int, typer.Option(
        help="Containers that may run at once.")] = 8,
    docker_gpu_ids: Annotated[str, typer.Option(
        help="Comma-separated device ids the Docker pool hands out [default: this host's "
        "NVIDIA devices]; 'none' for no GPUs.")] = "",
    docker_user: Annotated[str, typer.Option(
        help="UID:GID jobs run as in containers [default: the server's own user, or 65534 "
        "(nobody) when it runs as root].")] = "",
    tls_cert: Annotated[Path | None, typer.Option(
        help="PEM certificate: serve gRPC over TLS (with --tls-key).")] = None,
    tls_key: Annotated[Path | None, typer.Option(help="PEM private key for --tls-cert.")] =
        None,
    share_team_jobs: Annotated[bool, typer.Option(
        "--share-team-jobs/--no-share-team-jobs",
        help="Members see and cancel their teams' jobs, not only their own.")] = True,
    policy: Annotated[Path | None, typer.Option(
        help="Queueing policy (TOML or YAML): pools, queues, teams, quotas. SIGHUP re-reads "
        "it [default: FIFO with one open queue].")] = None,
) -> None:
    """Run the training service (gRPC) until interrupted."""
    from trainyard.server.assembly import ServerConfig, TrainyardServer
    from trainyard.tracker import TrackerConfig

    if max_concurrent < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--max-concurrent")
    docker_config = _docker_pool(docker_cpus, docker_memory, docker_max_containers,
                                 docker_gpu_ids, docker_user) if docker else None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    if (tls_cert is None) != (tls_key is None):
        raise typer.BadParameter("give both --tls-cert and --tls-key, or neither",
                                 param_hint="--tls-cert")
    for option, path in (("--tls-cert", tls_cert), ("--tls-key", tls_key)):
        if path is not None and not path.is_file():
            raise typer.BadParameter(f"{path} is not a readable file", param_hint=option)
    config = ServerConfig(data_dir=data_dir, database_url=database_url, host=host, port=port,
                          tracker=TrackerConfig(max_concurrent=max_concurrent),
                          docker=docker_config, tls_cert=tls_cert, tls_key=tls_key,
                          share_team_jobs=share_team_jobs, policy_file=policy)
    try:
        srv = TrainyardServer(config)
        bound = srv.start()
    except Exception as exc:  # a start-up failure is a sentence, not a traceback
        errors.print(f"[red]error[/]: cannot start the server: {escape(str(exc))}",
                     highlight=False)
        raise typer.Exit(1) from None
    if port_file is not None:
        tmp = port_file.with_suffix(".tmp")
        tmp.write_text(str(bound))
        tmp.replace(port_file)
    stop = {"now": False}

    def on_signal(signum: int, _frame: object) -> None:
        stop["now"] = True

    reload = {"asked": False}

    def on_hangup(signum: int, _frame: object) -> None:
        reload["asked"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_hangup)  # re-read --policy without a restart
    while not stop["now"]:
        time.sleep(0.2)
        if reload["asked"]:
            reload["asked"] = False
            _reload_policy(srv)
    srv.stop()


def _reload_policy(srv: TrainyardServer) -> None:
    from trainyard.services.policy_file import PolicyError

    try:
        srv.policy.reload()
    except PolicyError as exc:
        logging.getLogger("trainyard.policy").error(
            "policy not reloaded; the one in force stays:\n%s", exc)


def _docker_pool(cpus: float, memory: int, max_containers: int, gpu_ids: str,
                 user: str) -> DockerConfig:
    """The Docker pool from the server's options, checked; the host's size by default."""
    from dataclasses import replace

    from trainyard.server.assembly import docker_pool_defaults

    pool = docker_pool_defaults(instance="")
    if cpus < 0 or cpus != cpus:
        raise typer.BadParameter("must be positive", param_hint="--docker-cpus")
    if memory < 0:
        raise typer.BadParameter("must be positive", param_hint="--docker-memory")
    if max_containers < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--docker-max-containers")
    ids = pool.gpu_ids
    if gpu_ids:
        ids = () if gpu_ids == "none" else tuple(i.strip() for i in gpu_ids.split(","))
        if any(not i or not i.replace("-", "").isalnum() for i in ids) or \
                len(set(ids)) != len(ids):
            raise typer.BadParameter("expected distinct device ids like 0,1,2 or GPU-UUIDs",
                                     param_hint="--docker-gpu-ids")
    if user:
        _check_container_user(user)
    return replace(pool, cpus=cpus or pool.cpus, memory_mb=memory or pool.memory_mb,
                   max_containers=max_containers, gpu_ids=ids, user=user)


def _check_container_user(user: str) -> None:
    """Jobs run as a non-root user who can write the directories the server made."""
    if not re.fullmatch(r"[0-9]+:[0-9]+", user):
        raise typer.BadParameter("expected UID:GID, e.g. 1000:1000", param_hint="--docker-user")
    uid = int(user.split(":")[0])
    if uid == 0:
        raise typer.BadParameter("jobs may not run as root", param_hint="--docker-user")
    own = os.geteuid()
    if own != 0 and uid != own:
        raise typer.BadParameter(
            f"a server running as uid {own} can only give its own directories to uid {own}; "
            "run it as root to choose another user", param_hint="--docker-user")


@app.command()
def submit(
    name: Annotated[str, typer.Option(help="Job name; also the model's name.")],
    command: Annotated[str, typer.Option(
        help="Shell command to run; with --image, replaces the image's command.")] = "",
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
    cpus: Annotated[float, typer.Option(help="CPU cores.")] = 0.0,
    memory: Annotated[int, typer.Option(help="Memory in MiB.")] = 0,
    gpus: Annotated[int, typer.Option(help="GPUs.")] = 0,
    workers: Annotated[int, typer.Option(
        min=1, help="Workers started together on one machine, each with --cpus, --memory "
                    "and --gpus, told its RANK and its peers.")] = 1,
    queue: Annotated[str, typer.Option(help="Queue name.")] = "",
    priority: Annotated[int, typer.Option(help="Higher runs earlier.")] = 0,
    request_id: Annotated[str, typer.Option(help="Makes a retried submit idempotent.")] = "",
    pipeline: Annotated[str, typer.Option(
        help="Your pipeline this job joins (made on its first job).")] = "",
    pipeline_max_parallel: Annotated[int, typer.Option(
        help="The pipeline's running limit from now on; 0 keeps its limit.")] = 0,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Show live state and "
                                         "progress until the job ends.")] = False,
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Submit a training job and print its id."""
    if dataset and ":" not in dataset:
        raise typer.BadParameter("expected NAME:VERSION", param_hint="--dataset")
    spec = TrainSpec(
        name=name, command=command, image=image, dataset=dataset,
        hyperparameters=pairs(param or [], "--param"), labels=pairs(label or [], "--label"),
        resources=Resources(cpus=cpus, memory_mb=memory, gpus=gpus), queue=queue,
        priority=priority, client_request_id=request_id, workers=workers,
        pipeline=pipeline, pipeline_max_parallel=pipeline_max_parallel,
        git_commit=git_commit, model_name=model_name,
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


@app.command()
def sweep(
    name: Annotated[str, typer.Option(help="Sweep name; trials are NAME-1, NAME-2, ...")],
    command: Annotated[str, typer.Option(help="Shell command of every trial.")] = "",
    image: Annotated[str, typer.Option(help="Container image of every trial.")] = "",
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
    cpus: Annotated[float, typer.Option(help="CPU cores per trial.")] = 0.0,
    memory: Annotated[int, typer.Option(help="Memory in MiB per trial.")] = 0,
    gpus: Annotated[int, typer.Option(help="GPUs per trial.")] = 0,
    workers: Annotated[int, typer.Option(min=1, help="Workers per trial, each with --cpus, "
                                                     "--memory and --gpus.")] = 1,
    queue: Annotated[str, typer.Option(help="Queue name.")] = "",
    priority: Annotated[int, typer.Option(help="Higher runs earlier.")] = 0,
    label: Annotated[list[str] | None, typer.Option(help="Label KEY=VALUE (repeatable).")] = None,
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
        name=name, command=command, image=image, dataset=dataset,
        hyperparameters=pairs(param or [], "--param"), labels=pairs(label or [], "--label"),
        resources=Resources(cpus=cpus, memory_mb=memory, gpus=gpus), queue=queue,
        priority=priority, workers=workers, git_commit=git_commit, model_name=model_name)
    with client_for(server) as client:
        sweep_id, job_ids = client.sweep(template, grid=split, choices=choices,
                                         ranges=_ranges(range_ or []), trials=trials,
                                         seed=seed, max_parallel=max_parallel)
    if output is Output.json:
        print_json({"sweep_id": sweep_id, "job_ids": job_ids})
        return
    limit = f", at most {max_parallel} at once" if max_parallel else ""
    console.print(f"sweep {sweep_id}: {len(job_ids)} jobs{limit}", highlight=False)
    for job_id in job_ids:
        console.print(job_id, highlight=False)


@app.command()
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


@app.command("list")
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
        print_json({"jobs": [j.__dict__ for j in jobs], "next_page_token": token})
        return
    render_jobs(jobs)
    if token:
        console.print(f"[dim]more: --page-token {token}[/]")


@app.command()
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


@app.command()
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


@app.command()
def watch(job_id: str, server: ServerOpt = None) -> None:
    """Print each state change of a job until it is final."""
    with client_for(server) as client:
        for t in client.watch(job_id):
            console.print(f"[dim]{t.time}[/] {t.from_state or '-'} -> "
                          f"{styled_state(t.to_state)}: {escape(t.reason)}")


@datasets_app.command("register")
def datasets_register(
    name: str,
    path: Annotated[Path, typer.Argument(help="Directory to store as a new version.")],
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Store a directory as an immutable, content-addressed version; print its hash."""
    with client_for(server) as client:
        ds = client.register_dataset(name, str(path))
    if output is Output.json:
        print_json({"name": ds.name, "version": ds.version, "size_bytes": ds.size_bytes,
                    "file_count": ds.file_count, "created": ds.created})
    else:
        console.print(ds.version)


@datasets_app.command("list")
def datasets_list(
    name: Annotated[str, typer.Argument(help="Only this dataset.")] = "",
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """List registered dataset versions with their size, files, creation time and the runs
    that used them."""
    with client_for(server) as client:
        found = client.list_datasets(name)
    if output is Output.json:
        print_json({"datasets": [d.__dict__ for d in found]})
    else:
        render_datasets(found)



@app.command()
def queues(server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """The queueing policy in force: queues with their waiting and running jobs, pools with
    their use, and teams with their use against their quotas."""
    with client_for(server) as client:
        view = client.queues()
    if output is Output.json:
        print_json(view)
        return
    render_queues(view)


@app.command()
def whoami(server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """Who the server takes you for: user, role, teams, and the token's scope."""
    with client_for(server) as client:
        who = client.whoami()
    if output is Output.json:
        print_json(who)
        return
    if who["single_user"]:
        console.print("single-user mode: no users yet, every local call acts as an admin",
                      highlight=False)
        return
    role = "admin" if who["admin"] else "member"
    scope = "read-only" if who["read_only"] else "read-write"
    teams = ", ".join(who["teams"]) or "no team"
    console.print(f"{escape(who['user'])} ({role}; {teams}; {scope} token {who['token_id']})",
                  highlight=False)


@app.command()
def login(
    server: ServerOpt = None,
    ca_cert: Annotated[str, typer.Option(envvar="TRAINYARD_CA_CERT",
                                         help="PEM file the server's certificate is trusted "
                                         "by (TLS).")] = "",
) -> None:
    """Save the server, a token (asked for, not echoed) and the CA certificate to
    ~/.trainyard/config.toml (mode 0600), after checking the token with the server."""
    from trainyard import credentials
    from trainyard.client import Client, TrainyardError

    token = typer.prompt("token", hide_input=True).strip()
    try:
        with Client(server, token=token, ca_cert=ca_cert or None) as client:
            who = client.whoami()
            address = client.server
    except TrainyardError as exc:
        errors.print(f"[red]error[/] ({exc.code}): {escape(exc.message)}", highlight=False)
        raise typer.Exit(1) from None
    path = credentials.save(credentials.Credentials(server=address, token=token,
                                                    ca_cert=ca_cert))
    console.print(f"logged in to {address} as {escape(who['user'])}; saved to {path}",
                  highlight=False)


# --- images: straight to the local engine, like the docker CLI ------------------------------

@contextlib.contextmanager
def _image_errors() -> Iterator[None]:
    import docker.errors
    import requests.exceptions

    from trainyard.services.images import ImageError

    try:
        yield
    except ImageError as exc:
        errors.print(f"[red]error[/]: {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    except (docker.errors.DockerException, requests.exceptions.RequestException,
            OSError) as exc:
        errors.print(f"[red]error[/]: the Docker engine failed: {escape(str(exc))}",
                     highlight=False)
        raise typer.Exit(1) from None


def _say(line: str) -> None:
    errors.print(escape(line), highlight=False)


@images_app.command("build-base")
def images_build_base(
    mirror: Annotated[str, typer.Option(help="Debian mirror debootstrap reads.")] =
        "http://deb.debian.org/debian",
    suite: Annotated[str, typer.Option(help="Debian release.")] = "bookworm",
    cache_dir: Annotated[Path | None, typer.Option(
        envvar="TRAINYARD_IMAGE_CACHE",
        help="Where root file systems are cached [default: ~/.cache/trainyard/images].")] = None,
    output: OutputOpt = Output.text,
) -> None:
    """Build the base image (Debian with python3, numpy, scikit-learn and trainyard.runtime)
    with debootstrap, tagged trainyard/base:latest. Cached by its inputs."""
    from trainyard.services.images import BaseInputs, build_base, engine

    with _image_errors():
        built = build_base(engine(), BaseInputs(suite=suite, mirror=mirror),
                           cache_dir or Path.home() / ".cache" / "trainyard" / "images",
                           say=_say)
    if output is Output.json:
        print_json({"tag": built.tag, "image_id": built.image_id, "cached": built.cached})
    else:
        note = " (cached)" if built.cached else ""
        console.print(f"{built.tag} {built.image_id[7:19]}{note}", highlight=False)


@images_app.command("build")
def images_build(
    context: Annotated[Path, typer.Argument(help="Directory holding a Dockerfile.")],
    tag: Annotated[str, typer.Option(help="Image name, e.g. trainyard/demo-trainer.")],
    output: OutputOpt = Output.text,
) -> None:
    """Build a trainer image from DIR/Dockerfile, offline (FROM a local image)."""
    from trainyard.domain.errors import InvalidArgument
    from trainyard.domain.spec import JobSpec, validate_spec
    from trainyard.services.images import build_image, engine

    try:
        validate_spec(JobSpec(name="image", image=tag))
    except InvalidArgument as exc:
        raise typer.BadParameter(exc.problem, param_hint="--tag") from None
    if not context.is_dir():
        raise typer.BadParameter(f"{context} is not a directory", param_hint="DIR")
    with _image_errors():
        built = build_image(engine(), context, tag,
                            say=_say if output is Output.text else lambda line: None)
    if output is Output.json:
        print_json({"tag": built.tag, "image_id": built.image_id})
    else:
        console.print(f"{built.tag} {built.image_id[7:19]}", highlight=False)


@images_app.command("list")
def images_list(output: OutputOpt = Output.text) -> None:
    """List the images in the local Docker engine."""
    from dataclasses import asdict

    from trainyard.services.images import engine, list_images

    with _image_errors():
        images = list_images(engine())
    if output is Output.json:
        print_json([asdict(i) for i in images])
    else:
        render_images(images)


if __name__ == "__main__":
    app()
