"""End to end: start a Trainyard server, register the digits dataset, register
examples/trainer.py as the algorithm `digits-mlp` (a code directory, promoted to
`digits-mlp@production`), run a learning-rate sweep of it by that handle, follow the jobs live,
compare the runs (CompareRuns) and show the lineage of the best model, promoted to the model
alias `digits-mlp@production`.

Run from the repository root: `make demo` (or `.venv/bin/python examples/demo.py`).
With `--docker` the algorithm is registered from an image built from examples/Dockerfile
(the base image is made first if the engine lacks it), pinned by its id, and the same sweep
runs as its containers; that needs a running Docker engine.
With `--slurm` (`make demo-slurm`) it runs on a two-node Slurm cluster started here for the
demo (trainyard.testbed.slurm_cluster), through a policy file with one Slurm pool whose jobs
pull the dataset and push their metrics, logs and model through the job runtime; that needs
slurm-wlm and munge.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import FrameType
from urllib.parse import urlparse
from urllib.request import url2pathname

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Column, Table
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from trainyard.cli.models import render_lineage
from trainyard.cli.output import styled_state
from trainyard.cli.plot import chart_table, curves
from trainyard.cli.runs import chart_width, render_comparison, run_labels
from trainyard.client import Client, JobStatus, Resources, TrainSpec, TrainyardError
from trainyard.testbed import slurm_cluster

REPO = Path(__file__).resolve().parent.parent
DEMO_DIR = REPO / ".trainyard-demo"
TRAINER = REPO / "examples" / "trainer.py"
DEMO_IMAGE = "trainyard/demo-trainer"  # examples/Dockerfile: the trainer on the base image
LEARNING_RATES = ("0.01", "0.05", "0.1", "0.5")
EPOCHS = 15
MAX_CONCURRENT = 2  # fewer slots than jobs, so the queue shows
SWEEP_LABEL = "digits-lr"
MODEL_NAME = "digits-mlp"  # every run's weights become a version of this one model
# The trainer registered as an algorithm; the sweep names it by handle, resolved at submit.
ALGORITHM = "digits-mlp"
ALGORITHM_ALIAS = "production"
# With --docker each container is held to the CPUs it asks for, from a pool with as many CPUs
# as this host (the server's default). MAX_CONCURRENT counts containers too, so 2 run at once
# however little they ask (at 0.5 CPU, 4 would fit a 2-CPU pool, but each would only run at
# half speed). So 1 CPU each, as the local jobs get by default, or half of a 1-CPU host.
CONTAINER_RESOURCES = Resources(cpus=min(1.0, (os.cpu_count() or 1) / MAX_CONCURRENT))
# With --slurm: two nodes of 2 CPUs each; a job asks for 1 CPU, as local jobs get by default.
SLURM_NODE_CPUS = 2
SLURM_POOL = "cluster"
SERVER_START_TIMEOUT = 30.0
SWEEP_TIMEOUT = 300.0
CANCEL_TIMEOUT = 20.0
POLL_INTERVAL = 0.3
UNFINISHED = ["WAITING", "LAUNCHING", "RUNNING", "PREEMPTED"]

console = Console()


class DemoError(Exception):
    """A step of the demo that cannot go on; the message says why."""


# --- the server ------------------------------------------------------------------------------

def start_server(demo_dir: Path, docker: bool, extra_args: list[str] | None = None,
                 extra_env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    # Its own session: Ctrl-C reaches only the demo, which then shuts things down in order.
    with (demo_dir / "server.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "trainyard.cli.main", "server", "--port", "0",
             "--http-port", "0",
             "--port-file", str(demo_dir / "port"), "--data-dir", str(demo_dir),
             "--max-concurrent", str(MAX_CONCURRENT), *(["--docker"] if docker else []),
             *(extra_args or [])],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, **(extra_env or {})}, start_new_session=True,
        )


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_for_port(server: subprocess.Popen[bytes], demo_dir: Path) -> int:
    port_file = demo_dir / "port"
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if port_file.exists():
            return int(port_file.read_text())
        if server.poll() is not None:
            raise DemoError(f"the server exited with status {server.returncode}; "
                            f"{demo_dir / 'server.log'} ends with:\n"
                            f"{log_tail(demo_dir / 'server.log')}")
        time.sleep(0.1)
    raise DemoError(f"the server wrote no port file within {SERVER_START_TIMEOUT:.0f}s; "
                    f"{demo_dir / 'server.log'} ends with:\n{log_tail(demo_dir / 'server.log')}")


def stop_server(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def cancel_unfinished(client: Client) -> None:
    """Cancel jobs still queued or running, so none outlives the demo's server."""
    try:
        jobs, _ = client.list_jobs(states=UNFINISHED)
        for job in jobs:
            client.cancel(job.job_id)
        deadline = time.monotonic() + CANCEL_TIMEOUT
        while jobs and time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL)
            jobs, _ = client.list_jobs(states=UNFINISHED)
    except TrainyardError as exc:
        console.print(f"[red]could not cancel the remaining jobs[/]: {exc}")


# --- container images (--docker) -------------------------------------------------------------

def prepare_images() -> None:
    """The base image (cached by its inputs, as `trainyard images build-base`), then the
    trainer image from examples/ (as `trainyard images build examples --tag ...`)."""
    from trainyard.services.images import BaseInputs, ImageError, build_base, build_image, engine

    def say(line: str) -> None:
        console.print(f"  {line}", style="dim", markup=False, highlight=False)

    cache_dir = Path(os.environ.get("TRAINYARD_IMAGE_CACHE")
                     or Path.home() / ".cache" / "trainyard" / "images")
    try:
        docker = engine()
    except ImageError:
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise DemoError(f"--docker needs a Docker engine and none answers at {where}; start "
                        "one with 'dockerd --bridge=none --iptables=false --ip-masq=false &' "
                        "(as root) and run the demo again, or run it without --docker") from None
    try:
        with console.status("making the base image (the first time takes a few minutes)"):
            base = build_base(docker, BaseInputs(), cache_dir, say=say)
        with console.status(f"building {DEMO_IMAGE} from examples/"):
            trainer = build_image(docker, REPO / "examples", DEMO_IMAGE)
    except ImageError as exc:
        raise DemoError(str(exc)) from None
    console.print(f"base image {base.tag}{' (cached)' if base.cached else ''}", highlight=False)
    console.print(f"built {trainer.tag} ({trainer.image_id[7:19]}) from examples/Dockerfile",
                  highlight=False)


# --- a Slurm cluster (--slurm) -------------------------------------------------------------

def check_slurm() -> None:
    if slurm_cluster.available() is not None:
        raise DemoError("--slurm needs slurm-wlm and munge: apt-get install slurm-wlm munge")


def slurm_policy(cluster: slurm_cluster.SlurmCluster, cache_root: Path) -> str:
    """One Slurm pool on the cluster's partition (capacity read from the controller), jobs
    pulling their files through the job runtime, each node its own cache directory."""
    return f"""\
max_running = {MAX_CONCURRENT}

[pools.{SLURM_POOL}]
executor = "slurm"
partition = "{cluster.partition}"
staging = "pull"
cache_dir = "{cache_root}/{{node}}"
python = "{sys.executable}"  # the nodes are this machine: its Python has grpcio
spread = true

[queues.default]
pools = ["{SLURM_POOL}"]
"""


@contextmanager
def slurm_backend(demo_dir: Path) -> Iterator[tuple[list[str], dict[str, str]]]:
    """A two-node cluster in demo_dir/slurm and a policy file with a pool on it; yields the
    server's extra arguments and environment. The cluster stops however the block ends."""
    root = demo_dir / "slurm"
    with contextlib.ExitStack() as stack:
        with console.status("starting a two-node Slurm cluster (munged, slurmctld, 2 slurmd)"):
            try:
                cluster = stack.enter_context(slurm_cluster.cluster(
                    root, slurm_cluster.two_nodes(cpus=SLURM_NODE_CPUS)))
            except (RuntimeError, subprocess.SubprocessError) as exc:
                raise DemoError(f"the Slurm cluster did not start: {exc}; its logs are in "
                                f"{root}") from None
        console.print(f"Slurm cluster: nodes {', '.join(cluster.node_names)}, partition "
                      f"{cluster.partition} (state and logs in {root.relative_to(REPO)}/)",
                      highlight=False)
        policy = demo_dir / "policy.toml"
        policy.write_text(slurm_policy(cluster, root / "nodes"))
        yield ["--policy", str(policy)], cluster.env


# --- dataset and sweep -----------------------------------------------------------------------

def write_digits(directory: Path) -> None:
    """train.csv and test.csv: the label, then the 64 pixel values (0..16) per row."""
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data.astype(np.int64), digits.target, test_size=0.2, random_state=0,
        stratify=digits.target)
    for name, x, y in (("train", x_train, y_train), ("test", x_test, y_test)):
        np.savetxt(directory / f"{name}.csv", np.column_stack([y, x]), fmt="%d", delimiter=",")


def register_digits(client: Client) -> str:
    with tempfile.TemporaryDirectory(prefix="trainyard-digits-") as staging:
        write_digits(Path(staging))
        dataset = client.register_dataset("digits", staging)
    console.print(f"registered dataset [bold]digits:{dataset.version[:12]}[/] "
                  f"({dataset.file_count} files, {dataset.size_bytes / 1024:.0f} KiB)")
    return dataset.version


def git_commit() -> str:
    """This checkout's commit, recorded on each run as its code version ("" outside git)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return out if len(out) in (40, 64) else ""


def register_trainer(client: Client, docker: bool) -> str:
    """The trainer as the next version of the algorithm (or the same one, when nothing
    changed), pointed at by its alias; returns the handle the sweep names.

    Locally (and on Slurm) it is a code directory holding trainer.py alone, run in it by this
    Python, which has numpy; with --docker it is the trainer image, pinned by its id, whose CMD
    runs the trainer. Either way the epochs and seed are its defaults, under each job's own."""
    defaults = {"EPOCHS": str(EPOCHS), "SEED": "0"}
    about = "numpy MLP on the digits dataset (examples/trainer.py)"
    if docker:
        version = client.register_algorithm(
            ALGORITHM, image=DEMO_IMAGE, hyperparameters=defaults,
            resources=CONTAINER_RESOURCES, description=about, git_commit=git_commit())
        what = f"image {version['image_id'][7:19]}"
    else:
        with tempfile.TemporaryDirectory(prefix="trainyard-trainer-") as code:
            shutil.copy2(TRAINER, Path(code) / TRAINER.name)
            version = client.register_algorithm(
                ALGORITHM, code_dir=code,
                command=f"{shlex.quote(sys.executable)} {TRAINER.name}",
                hyperparameters=defaults, description=about, git_commit=git_commit())
        what = f"code {version['code_hash'][:12]}"
    number = version["version"]
    client.set_algorithm_alias(ALGORITHM, ALGORITHM_ALIAS, number)
    handle = f"{ALGORITHM}@{ALGORITHM_ALIAS}"
    console.print(f"{'registered' if version['created'] else 'found'} algorithm "
                  f"[bold]{ALGORITHM}:{number}[/] ({what}) as [bold]{handle}[/]")
    return handle


def submit_sweep(client: Client, dataset_version: str, algorithm: str,
                 docker: bool) -> dict[str, str]:
    """Submit one job of the algorithm per learning rate; returns job id -> learning rate."""
    jobs: dict[str, str] = {}
    for lr in LEARNING_RATES:
        submitted = client.train(TrainSpec(
            name=f"digits-lr-{lr}", algorithm=algorithm, dataset=f"digits:{dataset_version}",
            hyperparameters={"LR": lr}, labels={"sweep": SWEEP_LABEL},
            model_name=MODEL_NAME))
        jobs[submitted.job_id] = lr
    console.print(f"submitted {len(jobs)} jobs of {algorithm}"
                  f"{' as containers' if docker else ''} (labels sweep={SWEEP_LABEL}), at most "
                  f"{MAX_CONCURRENT} run at once")
    return jobs


# --- live progress ---------------------------------------------------------------------------

def epochs_done(st: JobStatus) -> int:
    if st.state == "SUCCEEDED":
        return EPOCHS
    return max((int(m["step"]) for m in st.metrics.values()), default=0)


def progress_info(st: JobStatus) -> str:
    if st.state == "WAITING" and st.pending_reason:
        return st.pending_reason["message"]
    if st.state in ("FAILED", "CANCELLED"):
        return st.message
    shown = [f"{label} {st.metrics[key]['value']:.3f}"
             for key, label in (("loss", "loss"), ("test_accuracy", "test acc"))
             if key in st.metrics]
    return "  ".join(shown)


def update_task(bar: Progress, task: TaskID, st: JobStatus) -> None:
    # The elapsed clock runs only while the job holds a slot.
    started = next(t.started for t in bar.tasks if t.id == task)
    if st.state in ("LAUNCHING", "RUNNING") and not started:
        bar.start_task(task)
    bar.update(task, completed=epochs_done(st), state=styled_state(st.state),
               info=progress_info(st))
    if st.is_final and started:
        bar.stop_task(task)


def follow(client: Client, jobs: dict[str, str]) -> dict[str, JobStatus]:
    columns = (TextColumn("{task.description}"), TextColumn("{task.fields[state]}"),
               BarColumn(bar_width=12), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[info]}",
                          table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis")))
    statuses: dict[str, JobStatus] = {}
    # expand: the info column takes what is left of the line, the others keep their width.
    with Progress(*columns, console=console, expand=True) as bar:
        tasks = {job_id: bar.add_task(f"LR={lr}", total=EPOCHS, start=False,
                                      state=styled_state("WAITING"), info="")
                 for job_id, lr in jobs.items()}
        deadline = time.monotonic() + SWEEP_TIMEOUT
        while True:
            for job_id, task in tasks.items():
                statuses[job_id] = client.status(job_id)
                update_task(bar, task, statuses[job_id])
            if all(st.is_final for st in statuses.values()):
                return statuses
            if time.monotonic() > deadline:
                raise DemoError(f"the sweep did not finish within {SWEEP_TIMEOUT:.0f}s")
            time.sleep(POLL_INTERVAL)


# --- results ---------------------------------------------------------------------------------

def run_seconds(st: JobStatus) -> float | None:
    """From the last start of the process to the job's final state."""
    starts = [t.time for t in st.transitions if t.to_state == "RUNNING" and t.time]
    end = st.transitions[-1].time if st.transitions and st.is_final else None
    if not starts or end is None:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(starts[-1])).total_seconds()


def metric(st: JobStatus, key: str) -> float | None:
    return float(st.metrics[key]["value"]) if key in st.metrics else None


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def best_run(statuses: dict[str, JobStatus]) -> JobStatus | None:
    done = [st for st in statuses.values()
            if st.state == "SUCCEEDED" and st.model and metric(st, "test_accuracy") is not None]
    return max(done, key=lambda st: metric(st, "test_accuracy") or 0.0, default=None)


def results_table(statuses: dict[str, JobStatus], best: JobStatus | None) -> Table:
    table = Table(title="digits: learning-rate sweep", show_edge=False)
    for name in ("job", "LR", "state", "loss", "train acc", "test acc", "time"):
        table.add_column(name, justify="left" if name in ("job", "state") else "right")
    for st in sorted(statuses.values(), key=lambda st: float(st.spec["hyperparameters"]["LR"])):
        table.add_row(
            st.job_id, st.spec["hyperparameters"]["LR"], styled_state(st.state),
            fmt(metric(st, "loss"), ".4f"), fmt(metric(st, "train_accuracy"), ".4f"),
            fmt(metric(st, "test_accuracy"), ".4f"), fmt(run_seconds(st), ".1f") + "s",
            style="bold" if st is best else None)
    return table


def model_dir(uri: str) -> Path:
    return Path(url2pathname(urlparse(uri).path))


def compare_and_trace(client: Client, statuses: dict[str, JobStatus],
                      best: JobStatus | None) -> None:
    """The sweep's runs side by side (CompareRuns) with their curves, then the best model
    promoted to an alias and traced back to its run, dataset version and code."""
    done = [st for st in statuses.values() if st.attempt > 0]
    order = sorted(done, key=lambda st: float(st.spec["hyperparameters"]["LR"]))
    if len(order) > 1:
        comparison = client.compare_runs([f"{st.job_id}-{st.attempt}" for st in order],
                                         series=True)
        render_comparison(comparison)
        table = chart_table(curves(comparison["runs"]), ["test_accuracy", "loss"],
                            run_labels(comparison["runs"]), chart_width(len(order)))
        if table is not None:
            console.print(table)
    if best is None or best.model is None:
        return
    version = best.model["version"]
    client.set_model_alias(MODEL_NAME, "production", version)
    console.print(f"promoted [bold]{MODEL_NAME}:{version}[/] to "
                  f"[bold]{MODEL_NAME}@production[/]; its lineage:")
    render_lineage(client.model_lineage(f"{MODEL_NAME}@production"))


def report(client: Client, statuses: dict[str, JobStatus]) -> None:
    best = best_run(statuses)
    console.print(results_table(statuses, best))
    for st in statuses.values():
        if st.state != "SUCCEEDED":
            logs = b"".join(client.logs(st.job_id)).decode(errors="replace").splitlines()
            console.print(f"[red]{st.job_id} {st.state}[/]: {st.message}; its log ends with:")
            console.print("\n".join(logs[-10:]), markup=False, highlight=False)
    if best is not None and best.model is not None:
        model = best.model
        console.print(f"best run: [bold]{best.name}[/] "
                      f"(test accuracy {metric(best, 'test_accuracy'):.4f})")
        console.print(f"its model {model['model_name']} v{model['version']} "
                      f"(content {model['content_hash'][:12]}) is stored in")
        console.print(f"  {model_dir(model['uri'])}", highlight=False, soft_wrap=True)
    compare_and_trace(client, statuses, best)


# --- putting it together ---------------------------------------------------------------------

def run_demo(client: Client, docker: bool) -> bool:
    version = register_digits(client)
    algorithm = register_trainer(client, docker)
    jobs = submit_sweep(client, version, algorithm, docker)
    statuses = follow(client, jobs)
    report(client, statuses)
    return all(st.state == "SUCCEEDED" for st in statuses.values())


@contextmanager
def demo_server(docker: bool, slurm: bool = False) -> Iterator[Client]:
    """A fresh server on a free port, stopped (with its jobs) however the block ends; with
    `slurm`, its jobs run on a Slurm cluster started first and stopped last."""
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    DEMO_DIR.mkdir()
    with contextlib.ExitStack() as backend:
        extra_args, extra_env = (backend.enter_context(slurm_backend(DEMO_DIR)) if slurm
                                 else ([], {}))
        server = start_server(DEMO_DIR, docker, extra_args, extra_env)
        client: Client | None = None
        try:
            port = wait_for_port(server, DEMO_DIR)
            console.print(f"trainyard server on 127.0.0.1:{port} "
                          f"(data and logs in {DEMO_DIR.relative_to(REPO)}/)")
            client = Client(f"127.0.0.1:{port}")
            yield client
        finally:
            # A second Ctrl-C must not leave the server, a job or the cluster behind.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if client is not None:
                cancel_unfinished(client)
                client.close()
            stop_server(server)


def on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # run the same cleanup as Ctrl-C


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Start a Trainyard server, run a learning-rate sweep on the digits "
        "dataset and compare the runs.")
    backend = parser.add_mutually_exclusive_group()
    backend.add_argument(
        "--docker", action="store_true",
        help="run the jobs as containers of the image trainyard/demo-trainer, built from "
        "examples/Dockerfile (the base image first if missing), instead of local processes; "
        "needs a running Docker engine")
    backend.add_argument(
        "--slurm", action="store_true",
        help="start a two-node Slurm cluster here and run the jobs on it through a Slurm "
        "pool (the job runtime pulls the dataset and pushes metrics, logs and the model); "
        "needs slurm-wlm and munge")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    started = time.monotonic()
    try:
        if args.docker:
            prepare_images()
        if args.slurm:
            check_slurm()
        with demo_server(args.docker, args.slurm) as client:
            ok = run_demo(client, args.docker)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: stopped the jobs and the server")
        return 130
    except (DemoError, TrainyardError) as exc:
        console.print(f"[red]demo failed[/]: {exc}", highlight=False)
        return 1
    console.print(f"{'all jobs succeeded' if ok else '[red]some jobs did not succeed[/]'} "
                  f"in {time.monotonic() - started:.1f}s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
