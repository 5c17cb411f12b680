"""Container launch benchmark: Trainyard's Docker executor beside raw `docker run`.

Start latency (sample loop; every sample on an empty engine, kinds interleaved and their order
rotated each round so drift on a shared machine hits all of them alike; the first --warmup
rounds are discarded):
  raw CLI   `docker run -d --network none IMAGE true`: from spawning the CLI until it returns.
            With -d the CLI returns once the engine's start call has returned, i.e. the
            container's process has been started. (--name and --label are added, as Trainyard
            names and labels its containers, so that this bench can remove them.)
  raw SDK   docker-py `containers.run(IMAGE, ["true"], detach=True, network_mode="none")`.
  executor  Trainyard's DockerExecutor.launch() alone, in this process: the same create and
            start calls with Trainyard's container options (bind mounts, --init, limits,
            no capabilities), without the service around it.
  Trainyard submit->RUNNING of a trivial container job (command `true`) on an empty queue,
            one at a time, through the SDK (trainyard.client.Client.train). The figure is the
            job's recorded RUNNING transition time minus the wall-clock time this client read
            just before the Train call: like the raw CLI figure it includes the client's own
            call, and the tracker records RUNNING right after the engine's start call returned.
            (Recorded WAITING->RUNNING leaves out the Train call; it is reported beside it,
            split into WAITING->LAUNCHING, admission, and LAUNCHING->RUNNING, the launch.)

End-to-end throughput: M trivial jobs submitted at once (8 submitting threads) to a server
whose Docker pool and global limit both allow C containers at once, until every job is final;
against the same M containers run by `docker run --rm` from a pool of C threads, each CLI
returning once its container has exited and been removed. Trainyard's clock runs from just
before the first Train call to the latest recorded final transition; the time until its
containers were removed too is reported beside it.

The server is `trainyard server --docker` in a subprocess, SQLite in a temp data dir, on
loopback. Every container this bench starts, and every one its server instance starts, is
removed at the end, also after a failure or Ctrl-C.

Usage: .venv/bin/python bench/launch.py [--samples 20] [--jobs 50] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker
import docker.errors
import grpc
from benchlib import commit, num, percentile, stop_process, wait_for_port, write_json
from rich.console import Console
from rich.table import Table

from trainyard.client import Client, TrainSpec
from trainyard.domain.spec import Resources
from trainyard.executors.base import JobFiles, LaunchRequest
from trainyard.executors.docker import LABEL_INSTANCE, DockerConfig, DockerExecutor
from trainyard.metadata.workspace import Workspace
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

RESULTS = Path(__file__).resolve().parent / "results" / "launch.json"
GOAL_START_RATIO_P50 = 1.15  # Trainyard submit->RUNNING p50 / raw `docker run -d` p50
DOCKER_SOCKET = "unix:///var/run/docker.sock"
BENCH_LABEL = "org.trainyard.bench"  # on the raw containers: this run's token
CALL_TIMEOUT_S = 30.0
CONTAINER_TIMEOUT_S = 60.0  # one docker CLI call, or one job from submit to final
GONE_TIMEOUT_S = 15.0  # for a job's container to be removed after it is final
SUBMIT_THREADS = 8
JOB_CPUS = 1.0  # what a job gets by default; the pool is sized so only C limits it
JOB_MEMORY_MB = 1024

# A table wider than the 80 columns rich assumes when writing to a pipe or file.
console = Console(width=None if sys.stdout.isatty() else 110)


# --- figures ---------------------------------------------------------------------------------


@dataclass
class Samples:
    """Latencies of one kind, in ms, and how many attempts failed."""

    values_ms: list[float] = field(default_factory=list)
    failures: int = 0
    first_error: str = ""

    def fail(self, error: str) -> None:
        self.failures += 1
        self.first_error = self.first_error or error

    def p(self, q: float) -> float:
        return percentile(sorted(self.values_ms), q)


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


@dataclass
class StartLatency:
    cli: Samples = field(default_factory=Samples)  # docker run -d
    sdk: Samples = field(default_factory=Samples)  # docker-py containers.run(detach=True)
    executor: Samples = field(default_factory=Samples)  # DockerExecutor.launch alone
    trainyard: Samples = field(default_factory=Samples)  # client before Train -> RUNNING
    # Parts of the Trainyard figure, from the job's recorded transitions.
    train_call: Samples = field(default_factory=Samples)  # Train call, as the client saw it
    waiting_to_running: Samples = field(default_factory=Samples)
    waiting_to_launching: Samples = field(default_factory=Samples)  # admission
    launching_to_running: Samples = field(default_factory=Samples)  # the launch
    rounds: int = 0


@dataclass(frozen=True)
class Throughput:
    jobs: int
    succeeded: int
    seconds: float  # until every job is final (or every CLI returned)
    seconds_removed: float | None = None  # Trainyard: until its containers were removed too
    first_error: str = ""

    @property
    def jobs_per_s(self) -> float:
        return self.succeeded / self.seconds if self.seconds > 0 else math.nan


# --- the engine and clean-up -----------------------------------------------------------------


class Engine:
    """The local engine, and every container this run made or had made, for removal."""

    def __init__(self, socket: str, token: str) -> None:
        self.socket = socket
        self.token = token
        self.client = docker.DockerClient(base_url=socket, timeout=CALL_TIMEOUT_S)
        self.api = self.client.api
        # Label filters: this run's raw containers, and each Trainyard instance it ran.
        self.filters: list[str] = [f"{BENCH_LABEL}={token}"]
        # The docker CLI and the server talk to this engine only, whatever the environment
        # says (DOCKER_HOST, a docker context pointing elsewhere).
        self.env = {k: v for k, v in os.environ.items() if k != "DOCKER_CONTEXT"}
        self.env["DOCKER_HOST"] = socket

    def own(self, instance: str) -> None:
        label = f"{LABEL_INSTANCE}={instance}"
        if label not in self.filters:
            self.filters.append(label)

    def containers(self, label: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.api.containers(all=True, filters={"label": label})
        return found

    def remove(self, ident: str) -> None:
        with contextlib.suppress(docker.errors.NotFound):
            self.api.remove_container(ident, force=True)

    def sweep(self, label: str | None = None) -> int:
        """Remove the containers under one label, or under all of this run's; count them."""
        removed = 0
        for lbl in [label] if label else self.filters:
            for summary in self.containers(lbl):
                self.remove(summary["Id"])
                removed += 1
        return removed

    def wait_gone(self, label: str, timeout_s: float = GONE_TIMEOUT_S) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.containers(label):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def versions(self) -> dict[str, Any]:
        version = self.client.version()
        info = self.client.info()
        cli = subprocess.run(["docker", "version", "--format", "{{.Client.Version}}"],
                             capture_output=True, text=True, timeout=CALL_TIMEOUT_S,
                             env=self.env, check=False).stdout.strip()
        return {"docker_server_version": version.get("Version"),
                "docker_api_version": version.get("ApiVersion"),
                "docker_cli_version": cli or None,
                "storage_driver": info.get("Driver"),
                "cgroup_driver": info.get("CgroupDriver"),
                "cgroup_version": info.get("CgroupVersion"),
                "engine_cpus": info.get("NCPU")}


# --- the Trainyard server --------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    address: str
    pid: int
    instance: str  # labels its containers


@contextmanager
def trainyard_server(workdir: Path, engine: Engine, concurrency: int) -> Iterator[Server]:
    """`trainyard server --docker` in a subprocess; yield it once it serves; always stop it,
    then remove whatever containers of its instance are left."""
    port_file = workdir / "port"
    log_path = workdir / "server.log"
    data_dir = workdir / "data"
    cmd = [sys.executable, "-m", "trainyard.cli.main", "server", "--port", "0", "--http-port", "0",
           "--port-file", str(port_file), "--data-dir", str(data_dir),
           # Always explicit, so a TRAINYARD_DATABASE_URL in the environment cannot leak in.
           "--database-url", "",
           # The global limit, the pool's container limit and its CPUs and memory all allow
           # exactly `concurrency` default-sized jobs at once.
           "--max-concurrent", str(concurrency), "--docker",
           "--docker-max-containers", str(concurrency),
           "--docker-cpus", str(concurrency * JOB_CPUS),
           "--docker-memory", str(concurrency * JOB_MEMORY_MB), "--docker-gpu-ids", "none"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=engine.env)
    instance = ""
    try:
        port = wait_for_port(proc, port_file, log_path)
        instance = (data_dir / "instance-id").read_text().strip()
        engine.own(instance)
        yield Server(f"127.0.0.1:{port}", proc.pid, instance)
    finally:
        stop_process(proc)
        if not instance:  # it stopped before we read it: read it now, if it was written
            with contextlib.suppress(OSError):
                instance = (data_dir / "instance-id").read_text().strip()
        if instance:
            engine.own(instance)
            left = engine.sweep(f"{LABEL_INSTANCE}={instance}")
            if left:
                console.log(f"removed {left} leftover container(s) of the server")


def _iso_s(value: str | None) -> float | None:
    return None if value is None else datetime.fromisoformat(value).timestamp()


class Trainyard:
    """The SDK client for submits and status, and a stub to follow jobs with a deadline (the
    SDK's watch has none)."""

    def __init__(self, server: Server, image: str) -> None:
        self.server = server
        self.client = Client(server.address, timeout=CALL_TIMEOUT_S)
        self.channel = grpc.insecure_channel(server.address)
        self.stub = pb_grpc.TrainingServiceStub(self.channel)  # type: ignore[no-untyped-call]
        self.image = image

    def close(self) -> None:
        self.client.close()
        self.channel.close()

    def submit(self, name: str) -> str:
        return self.client.train(TrainSpec(name=name, image=self.image, command="true")).job_id

    def wait_final(self, job_id: str, timeout_s: float) -> None:
        """Follow WatchJob until the job is final; it pushes changes, so no poll delay."""
        stream = self.stub.WatchJob(pb.WatchJobRequest(job_id=job_id), timeout=timeout_s)
        for event in stream:
            if event.final:
                return
        raise RuntimeError(f"the watch of job {job_id} ended before the job did")

    def times(self, job_id: str) -> tuple[str, dict[str, float]]:
        """The job's state and the recorded time (epoch s) of each state it entered."""
        status = self.client.status(job_id)
        times = {t.to_state: s for t in status.transitions if (s := _iso_s(t.time)) is not None}
        return status.state, times


# --- start latency ---------------------------------------------------------------------------


class LatencyRun:
    """One sample of each kind per round, each on an empty engine."""

    def __init__(self, engine: Engine, trainyard: Trainyard, executor: DockerExecutor,
                 exec_dir: Path, image: str) -> None:
        self.engine = engine
        self.trainyard = trainyard
        self.executor = executor
        self.exec_workspace = Workspace(exec_dir)
        self.image = image
        self.out = StartLatency()
        self.labels = {BENCH_LABEL: engine.token}

    def _name(self, kind: str, i: int) -> str:
        return f"trainyard-bench-{self.engine.token}-{kind}-{i}"

    def cli(self, i: int, keep: bool) -> None:
        name = self._name("cli", i)
        cmd = ["docker", "run", "-d", "--network", "none", "--name", name,
               "--label", f"{BENCH_LABEL}={self.engine.token}", self.image, "true"]
        try:
            t0 = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, env=self.engine.env,
                                  timeout=CONTAINER_TIMEOUT_S, check=False)
            elapsed = time.perf_counter() - t0
            if done.returncode != 0:
                self.out.cli.fail(done.stderr.strip()[-300:] or f"exit {done.returncode}")
            elif keep:
                self.out.cli.values_ms.append(elapsed * 1000)
        except subprocess.TimeoutExpired:
            self.out.cli.fail("docker run -d timed out")
        finally:
            self.engine.remove(name)

    def sdk(self, i: int, keep: bool) -> None:
        name = self._name("sdk", i)
        try:
            t0 = time.perf_counter()
            self.engine.client.containers.run(self.image, ["true"], detach=True,
                                              network_mode="none", name=name,
                                              labels=self.labels)
            elapsed = time.perf_counter() - t0
            if keep:
                self.out.sdk.values_ms.append(elapsed * 1000)
        except docker.errors.DockerException as exc:
            self.out.sdk.fail(str(exc))
        finally:
            self.engine.remove(name)

    def executor_launch(self, i: int, keep: bool) -> None:
        job_id = f"bench{self.engine.token}x{i}"
        handle = self._name("exec", i)
        paths = self.exec_workspace.attempt(job_id, 1)
        paths.create()
        data = self.exec_workspace.empty_dataset_dir
        data.mkdir(parents=True, exist_ok=True)
        request = LaunchRequest(
            job_id=job_id, attempt=1, handle=handle, command="true", image=self.image,
            env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                 "PYTHONUNBUFFERED": "1"},
            hyperparameters={}, resources=Resources(JOB_CPUS, JOB_MEMORY_MB, 0), gpu_ids=(),
            files=JobFiles(data=data, model=paths.model_dir, metrics=paths.metrics_path,
                           checkpoint=paths.checkpoint_dir, workdir=paths.workdir,
                           log=paths.log_path))
        try:
            t0 = time.perf_counter()
            self.executor.launch(request)
            elapsed = time.perf_counter() - t0
            if keep:
                self.out.executor.values_ms.append(elapsed * 1000)
        except Exception as exc:  # LaunchError, or anything the engine raised
            self.out.executor.fail(str(exc))
        finally:
            self.executor.release(handle)
            self.engine.remove(handle)

    def trainyard_job(self, i: int, keep: bool) -> None:
        ty = self.trainyard
        out = self.out
        try:
            before = time.time()  # wall clock: compared with the server's recorded times
            t0 = time.perf_counter()
            job_id = ty.submit(f"bench-launch-{i}")
            call_ms = (time.perf_counter() - t0) * 1000
            ty.wait_final(job_id, CONTAINER_TIMEOUT_S)
            state, times = ty.times(job_id)
        except Exception as exc:  # an RPC error, a timeout, a watch that ended early
            out.trainyard.fail(str(exc)[:300])
            return
        finally:
            # The next sample starts on an empty engine: this job's container is removed.
            label = f"{LABEL_INSTANCE}={ty.server.instance}"
            if not self.engine.wait_gone(label):
                self.engine.sweep(label)
        running, waiting = times.get("RUNNING"), times.get("WAITING")
        launching = times.get("LAUNCHING")
        if running is None or waiting is None or launching is None:
            out.trainyard.fail(f"job {job_id} ended {state} without reaching RUNNING")
            return
        if state != "SUCCEEDED":
            out.trainyard.fail(f"job {job_id} ended {state}")
        if not keep:
            return
        out.trainyard.values_ms.append((running - before) * 1000)
        out.train_call.values_ms.append(call_ms)
        out.waiting_to_running.values_ms.append((running - waiting) * 1000)
        out.waiting_to_launching.values_ms.append((launching - waiting) * 1000)
        out.launching_to_running.values_ms.append((running - launching) * 1000)


def measure_start_latency(run: LatencyRun, samples: int, warmup: int,
                          cap_s: float) -> StartLatency:
    kinds: list[Callable[[int, bool], None]] = [run.cli, run.sdk, run.executor_launch,
                                                run.trainyard_job]
    deadline = time.monotonic() + cap_s
    for i in range(warmup + samples):
        if time.monotonic() > deadline:
            console.log(f"[yellow]start latency: stopped at the {cap_s:g} s cap after "
                        f"{run.out.rounds} rounds[/]")
            break
        keep = i >= warmup
        shift = i % len(kinds)
        for kind in kinds[shift:] + kinds[:shift]:
            kind(i, keep)
        if keep:
            run.out.rounds += 1
    return run.out


# --- end-to-end throughput -------------------------------------------------------------------


def trainyard_throughput(ty: Trainyard, engine: Engine, jobs: int, cap_s: float) -> Throughput:
    """`jobs` trivial jobs submitted at once; until every one is final."""
    deadline = time.monotonic() + cap_s
    errors: list[str] = []
    start_wall = time.time()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(jobs, SUBMIT_THREADS),
                            thread_name_prefix="submit") as pool:
        futures = [pool.submit(ty.submit, f"bench-e2e-{i}") for i in range(jobs)]
        ids: list[str] = []
        for f in futures:
            try:
                ids.append(f.result(timeout=CALL_TIMEOUT_S))
            except Exception as exc:
                errors.append(f"submit: {exc}"[:300])
    finals: list[float] = []
    succeeded = 0
    for job_id in ids:
        try:
            ty.wait_final(job_id, max(1.0, deadline - time.monotonic()))
            state, times = ty.times(job_id)
        except Exception as exc:
            errors.append(f"{job_id}: {exc}"[:300])
            continue
        final = times.get(state)
        if final is not None:
            finals.append(final)
        if state == "SUCCEEDED":
            succeeded += 1
        else:
            errors.append(f"job {job_id} ended {state}")
    label = f"{LABEL_INSTANCE}={ty.server.instance}"
    gone = engine.wait_gone(label, max(1.0, min(GONE_TIMEOUT_S, deadline - time.monotonic())))
    removed_s = time.perf_counter() - t0 if gone else None
    seconds = (max(finals) - start_wall) if finals else time.perf_counter() - t0
    return Throughput(jobs, succeeded, seconds, removed_s, errors[0] if errors else "")


def docker_throughput(engine: Engine, image: str, jobs: int, concurrency: int,
                      cap_s: float) -> Throughput:
    """The same jobs as `docker run --rm` from `concurrency` threads; until every CLI returned
    (after its container exited and was removed)."""
    stop = threading.Event()
    deadline = time.monotonic() + cap_s

    def one(i: int) -> str:
        if stop.is_set() or time.monotonic() > deadline:
            return "not run: stopped or past the cap"
        cmd = ["docker", "run", "--rm", "--network", "none",
               "--name", f"trainyard-bench-{engine.token}-e2e-{i}",
               "--label", f"{BENCH_LABEL}={engine.token}", image, "true"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, env=engine.env,
                                  timeout=CONTAINER_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return "docker run --rm timed out"
        return "" if done.returncode == 0 else (done.stderr.strip()[-300:] or "failed")

    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="docker-run")
    try:
        t0 = time.perf_counter()
        results = list(pool.map(one, range(jobs)))
        seconds = time.perf_counter() - t0
    finally:
        stop.set()  # on an interrupt, start no more; the running CLIs end within their timeout
        pool.shutdown(wait=True, cancel_futures=True)
    errors = [r for r in results if r]
    return Throughput(jobs, jobs - len(errors), seconds, None, errors[0] if errors else "")


# --- the run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    latency: StartLatency
    trainyard_e2e: Throughput
    docker_e2e: Throughput
    machine: dict[str, Any]


def run(args: argparse.Namespace, engine: Engine) -> Outcome:
    machine = {"cpu_count": os.cpu_count(), "python": platform.python_version(),
               "platform": platform.platform(), **engine.versions()}
    engine.client.images.get(args.image)  # fail early, with the engine's sentence
    exec_instance = f"bench-{engine.token}"
    engine.own(exec_instance)
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-launch-") as tmp:
        workdir = Path(tmp, "server")
        workdir.mkdir()
        executor = DockerExecutor(DockerConfig(
            instance=exec_instance, cpus=args.concurrency * JOB_CPUS,
            memory_mb=args.concurrency * JOB_MEMORY_MB, max_containers=args.concurrency,
            base_url=engine.socket))
        try:
            with trainyard_server(workdir, engine, args.concurrency) as server:
                ty = Trainyard(server, args.image)
                try:
                    console.log(f"start latency: {args.samples} rounds (+{args.warmup} "
                                "warm-up) of docker run -d, SDK run, executor launch and "
                                "Trainyard submit->RUNNING")
                    latency = measure_start_latency(
                        LatencyRun(engine, ty, executor, Path(tmp, "executor"), args.image),
                        args.samples, args.warmup, args.phase_seconds)
                    console.log(f"throughput: {args.jobs} Trainyard jobs at once, "
                                f"{args.concurrency} containers at a time")
                    trainyard_e2e = trainyard_throughput(ty, engine, args.jobs,
                                                         args.phase_seconds)
                finally:
                    ty.close()
        finally:
            executor.close()
    console.log(f"throughput: {args.jobs} x docker run --rm, {args.concurrency} at a time")
    docker_e2e = docker_throughput(engine, args.image, args.jobs, args.concurrency,
                                   args.phase_seconds)
    return Outcome(latency, trainyard_e2e, docker_e2e, machine)


def results_dict(outcome: Outcome, args: argparse.Namespace) -> dict[str, Any]:
    lat, ty, raw = outcome.latency, outcome.trainyard_e2e, outcome.docker_e2e
    ratio_p50 = ratio(lat.trainyard.p(50), lat.cli.p(50))
    figures: dict[str, Any] = {}
    for key, samples in (("docker_run_start", lat.cli), ("docker_sdk_run_start", lat.sdk),
                         ("executor_launch", lat.executor),
                         ("trainyard_submit_to_running", lat.trainyard),
                         ("trainyard_train_call", lat.train_call),
                         ("trainyard_waiting_to_running", lat.waiting_to_running),
                         ("trainyard_waiting_to_launching", lat.waiting_to_launching),
                         ("trainyard_launching_to_running", lat.launching_to_running)):
        figures[f"{key}_p50_ms"] = num(samples.p(50))
        figures[f"{key}_p90_ms"] = num(samples.p(90))
    return {
        "machine": outcome.machine,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "config": {"image": args.image, "command": "true", "samples": args.samples,
                   "warmup_rounds": args.warmup, "jobs": args.jobs,
                   "concurrency": args.concurrency, "database": "sqlite",
                   "docker_e2e_mode": f"docker run --rm, pool of {args.concurrency} threads",
                   "trainyard_submit_to_running": "recorded RUNNING time minus client wall "
                                                  "time just before the Train call"},
        **figures,
        "ratio_start_p50": num(ratio_p50, 3),
        "ratio_start_p90": num(ratio(lat.trainyard.p(90), lat.cli.p(90)), 3),
        "ratio_executor_launch_p50": num(ratio(lat.executor.p(50), lat.cli.p(50)), 3),
        "trainyard_e2e_seconds": num(ty.seconds, 3),
        "trainyard_e2e_removed_seconds": num(ty.seconds_removed, 3),
        "trainyard_e2e_jobs_per_s": num(ty.jobs_per_s),
        "docker_run_e2e_seconds": num(raw.seconds, 3),
        "docker_run_e2e_jobs_per_s": num(raw.jobs_per_s),
        "ratio_e2e_jobs_per_s": num(ratio(ty.jobs_per_s, raw.jobs_per_s), 3),
        "counts": {"latency_rounds": lat.rounds,
                   "latency_failures": {"docker_run": lat.cli.failures,
                                        "docker_sdk": lat.sdk.failures,
                                        "executor": lat.executor.failures,
                                        "trainyard": lat.trainyard.failures},
                   "trainyard_e2e_succeeded": ty.succeeded,
                   "docker_run_e2e_succeeded": raw.succeeded},
        "goals": {"submit_to_running_vs_docker_run_start_p50_at_most": {
            "target": GOAL_START_RATIO_P50, "value": num(ratio_p50, 3),
            "pass": not math.isnan(ratio_p50) and ratio_p50 <= GOAL_START_RATIO_P50}},
    }


def _ms(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.1f}"


def _x(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}x"


def render(outcome: Outcome, results: dict[str, Any]) -> None:
    lat, ty, raw = outcome.latency, outcome.trainyard_e2e, outcome.docker_e2e
    config = results["config"]
    table = Table(title=f"Container launch: Trainyard vs raw docker ({config['image']}, "
                        f"`true`, {config['concurrency']} containers at a time)",
                  caption="start latency on an empty engine; e2e: "
                          f"{config['jobs']} jobs until all final")
    for col in ("figure", "Trainyard", "raw docker", "ratio T/raw", "samples"):
        table.add_column(col, justify="left" if col == "figure" else "right", no_wrap=True)
    for q in (50, 90):
        table.add_row(f"start p{q} ms: submit->RUNNING vs docker run -d",
                      _ms(lat.trainyard.p(q)), _ms(lat.cli.p(q)),
                      _x(ratio(lat.trainyard.p(q), lat.cli.p(q))),
                      f"{len(lat.trainyard.values_ms)}/{len(lat.cli.values_ms)}")
    table.add_row("e2e jobs/s", f"{ty.jobs_per_s:.2f}", f"{raw.jobs_per_s:.2f}",
                  _x(ratio(ty.jobs_per_s, raw.jobs_per_s)), f"{ty.succeeded}/{raw.succeeded}")
    table.add_row("e2e seconds", f"{ty.seconds:.2f}", f"{raw.seconds:.2f}",
                  _x(ratio(ty.seconds, raw.seconds)), f"{ty.jobs}/{raw.jobs}")
    if ty.seconds_removed is not None:
        table.add_row("  Trainyard, until its containers were removed",
                      f"{ty.seconds_removed:.2f}", "", "", "")
    console.print(table)

    parts = Table(title="Where the start latency goes (p50 / p90 ms)")
    for col in ("part", "p50", "p90", "vs docker run -d p50", "samples"):
        parts.add_column(col, justify="left" if col == "part" else "right", no_wrap=True)
    cli_p50 = lat.cli.p(50)
    for name, s in (("raw: docker run -d (CLI)", lat.cli),
                    ("raw: docker SDK containers.run(detach=True)", lat.sdk),
                    ("executor.launch() alone (create+start, Trainyard options)",
                     lat.executor),
                    ("Trainyard: client before Train -> RUNNING", lat.trainyard),
                    ("  Train call (client)", lat.train_call),
                    ("  recorded WAITING -> RUNNING", lat.waiting_to_running),
                    ("    WAITING -> LAUNCHING (admission)", lat.waiting_to_launching),
                    ("    LAUNCHING -> RUNNING (launch)", lat.launching_to_running)):
        parts.add_row(name, _ms(s.p(50)), _ms(s.p(90)), _x(ratio(s.p(50), cli_p50)),
                      str(len(s.values_ms)))
    console.print(parts)

    goal = results["goals"]["submit_to_running_vs_docker_run_start_p50_at_most"]
    goals = Table(title="Goal")
    for col in ("goal", "target", "measured", "result"):
        goals.add_column(col, no_wrap=True)
    measured = "n/a" if goal["value"] is None else f"{goal['value']:.2f}x"
    goals.add_row("submit->RUNNING <= 1.15x raw docker run start latency (p50)",
                  f"<= {goal['target']:.2f}x", measured,
                  "[green]met[/]" if goal["pass"] else "[red]missed[/]")
    console.print(goals)
    for name, s in (("docker run -d", lat.cli), ("SDK run", lat.sdk),
                    ("executor launch", lat.executor), ("Trainyard", lat.trainyard)):
        if s.failures:
            console.print(f"[yellow]{name}: {s.failures} failed, first: {s.first_error}[/]")
    for name, t in (("Trainyard e2e", ty), ("docker run e2e", raw)):
        if t.first_error:
            console.print(f"[yellow]{name}: {t.jobs - t.succeeded} failed, first: "
                          f"{t.first_error}[/]")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--samples", type=int, default=20,
                   help="start-latency samples of each kind")
    p.add_argument("--warmup", type=int, default=2,
                   help="rounds run first and discarded")
    p.add_argument("--jobs", type=int, default=50, help="jobs in the throughput phase")
    p.add_argument("--concurrency", type=int, default=8,
                   help="Trainyard's max containers (and global limit), and the raw "
                        "docker run pool's threads")
    p.add_argument("--image", default="trainyard/demo-trainer", help="a local image")
    p.add_argument("--phase-seconds", type=float, default=300.0,
                   help="wall-clock cap of each phase")
    p.add_argument("--docker-socket", default=DOCKER_SOCKET,
                   help="the local engine's socket (unix://...)")
    p.add_argument("--json", type=Path, default=RESULTS, help="where to write the results")
    args = p.parse_args(argv)
    if min(args.samples, args.jobs, args.concurrency) < 1 or args.warmup < 0:
        p.error("--samples, --jobs and --concurrency must be at least 1, --warmup at least 0")
    if not args.docker_socket.startswith("unix://"):
        p.error("--docker-socket must be a local unix:// socket")
    return args


def main() -> int:
    args = parse_args()
    # Turn SIGTERM into an exit that runs the clean-up (server, containers, temp dir).
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(128 + signal.SIGTERM))
    engine = Engine(args.docker_socket, secrets.token_hex(4))
    try:
        outcome = run(args, engine)
    finally:
        # Also after a failure or Ctrl-C: nothing this run started stays behind.
        try:
            left = engine.sweep()
        except Exception as exc:  # do not hide the error that got us here
            console.log(f"[red]could not remove this run's containers: {exc}; look for "
                        f"label {BENCH_LABEL}={engine.token} or {LABEL_INSTANCE}=...[/]")
        else:
            if left:
                console.log(f"removed {left} leftover container(s)")
    results = results_dict(outcome, args)
    render(outcome, results)
    write_json(results, args.json)
    console.print(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
