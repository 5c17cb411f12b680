"""`trainyard server`: the training service in this process until interrupted. The server
side is imported inside the command, so that client commands never load it."""

from __future__ import annotations

import logging
import math
import os
import re
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from trainyard.cli.common import duration, size
from trainyard.cli.output import errors
from trainyard.quantities import MIB

if TYPE_CHECKING:
    from trainyard.executors.docker import DockerConfig


def server(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one).")] = 50051,
    data_dir: Annotated[Path, typer.Option(help="Where the SQLite store, datasets, logs and "
                                                "artifacts live.")] = Path(".trainyard"),
    database_url: Annotated[str, typer.Option(
        envvar="TRAINYARD_DATABASE_URL",
        help="postgresql://... to use PostgreSQL instead of SQLite.")] = "",
    max_concurrent: Annotated[int, typer.Option(help="Jobs that may run at once.")] = 4,
    retry_backoff: Annotated[str, typer.Option(
        help="The wait before a job's first retry, doubled at each next one (drawn between "
             "half of it and all of it).")] = "10s",
    retry_backoff_max: Annotated[str, typer.Option(
        help="The longest wait before a retry.")] = "10m",
    predict_every: Annotated[str, typer.Option(
        help="How often the waiting jobs' predicted starts are refreshed, in the "
        'background ("30s", "2m"); 0 for none.')] = "30s",
    port_file: Annotated[Path | None, typer.Option(help="Write the bound port here once "
                                                        "serving.")] = None,
    http_port: Annotated[int, typer.Option(
        help="Port of the HTTP API, dashboard and /metrics, on --host (0 picks a free "
        "one).")] = 8080,
    http: Annotated[bool, typer.Option(
        "--http/--no-http", help="Serve the HTTP API, dashboard and /metrics.")] = True,
    http_port_file: Annotated[Path | None, typer.Option(
        help="Write the bound HTTP port here once serving.")] = None,
    docker: Annotated[bool, typer.Option(
        "--docker/--no-docker", help="Run jobs submitted with --image as containers in the "
        "local Docker engine.")] = False,
    docker_cpus: Annotated[float, typer.Option(
        help="CPUs of the Docker pool [default: this host's].")] = 0.0,
    docker_memory: Annotated[str, typer.Option(
        help='Memory of the Docker pool: "64G", "512Gi", or a number of MiB [default: this '
        "host's].")] = "0",
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
    max_log_size: Annotated[str, typer.Option(
        help='Each attempt\'s log is cut at this size ("1G", "512M", "2Gi"), with a last '
        "line that says so.")] = "1G",
    max_metric_points: Annotated[int, typer.Option(
        min=1, help="Metric points each attempt keeps; those past it are dropped and "
        "counted on its run.")] = 100_000,
    policy: Annotated[Path | None, typer.Option(
        help="Queueing policy (TOML or YAML): pools, queues, teams, quotas. SIGHUP re-reads "
        "it [default: FIFO with one open queue].")] = None,
) -> None:
    """Run the training service (gRPC, and HTTP at --http-port) until interrupted."""
    from trainyard.domain.retry import Backoff
    from trainyard.server.assembly import ServerConfig, TrainyardServer
    from trainyard.tracker import TrackerConfig
    from trainyard.tracker.forecasts import ForecastConfig

    if max_concurrent < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--max-concurrent")
    backoff = Backoff(duration(retry_backoff, "--retry-backoff"),
                      duration(retry_backoff_max, "--retry-backoff-max"))
    docker_config = _docker_pool(docker_cpus, size(docker_memory, "--docker-memory"),
                                 docker_max_containers,
                                 docker_gpu_ids, docker_user) if docker else None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    if (tls_cert is None) != (tls_key is None):
        raise typer.BadParameter("give both --tls-cert and --tls-key, or neither",
                                 param_hint="--tls-cert")
    for option, path in (("--tls-cert", tls_cert), ("--tls-key", tls_key)):
        if path is not None and not path.is_file():
            raise typer.BadParameter(f"{path} is not a readable file", param_hint=option)
    for option, number in (("--port", port), ("--http-port", http_port)):
        if not 0 <= number <= 65535:
            raise typer.BadParameter("must be between 0 and 65535", param_hint=option)
    config = ServerConfig(data_dir=data_dir, database_url=database_url, host=host, port=port,
                          http_port=http_port if http else None,
                          tracker=TrackerConfig(
                              max_concurrent=max_concurrent, retry_backoff=backoff,
                              forecasts=ForecastConfig(
                                  interval_s=duration(predict_every, "--predict-every",
                                                      zero=True))),
                          docker=docker_config, tls_cert=tls_cert, tls_key=tls_key,
                          share_team_jobs=share_team_jobs, policy_file=policy,
                          max_log_bytes=_log_bytes(max_log_size),
                          max_metric_points=max_metric_points)
    try:
        srv = TrainyardServer(config)
        bound = srv.start()
    except Exception as exc:  # a start-up failure is a sentence, not a traceback
        errors.print(f"[red]error[/]: cannot start the server: {escape(str(exc))}",
                     highlight=False)
        raise typer.Exit(1) from None
    if http_port_file is not None and srv.http is not None:
        _write_port(http_port_file, srv.http_port)
    if port_file is not None:  # last: a reader of it may rely on both
        _write_port(port_file, bound)
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
            srv.reload_policy()
    srv.stop()


def _log_bytes(text: str) -> int:
    mib = size(text, "--max-log-size")
    if mib < 1:
        raise typer.BadParameter("must be at least 1 MiB", param_hint="--max-log-size")
    return mib * MIB


def _write_port(path: Path, port: int) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(str(port))
    tmp.replace(path)


def _docker_pool(cpus: float, memory: int, max_containers: int, gpu_ids: str,
                 user: str) -> DockerConfig:
    """The Docker pool from the server's options, checked; the host's size by default."""
    from dataclasses import replace

    from trainyard.server.config import docker_pool_defaults

    pool = docker_pool_defaults(instance="")
    if not 0 <= cpus < math.inf:
        raise typer.BadParameter("must be a positive number", param_hint="--docker-cpus")
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
