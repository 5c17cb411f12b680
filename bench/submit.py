"""Submit-path benchmark over real gRPC on loopback, against servers this script starts.

Phases, on server A (SQLite in a fresh data dir unless --database-url, --max-concurrent 1):
  a. health   bare grpc.health.v1.Health/Check calls/s: the transport ceiling;
  b. submit   durable Train calls/s with p50/p99 latency;
  c. status   GetTrainingStatus calls/s on the ids from (b);
  r. rest     durable submits/s over the HTTP API (POST /api/v1/jobs), each of a few
              clients on one keep-alive connection, in the same rounds as (a) and (b).
A blocker job (`sleep`) holds the only slot, so every job from (b) stays WAITING and no job
process competes with the server for CPU while it is measured.

Phase d, run first, on server B (fresh data dir, --max-concurrent 4, empty queue): submit
trivial jobs one at a time, each after the previous one finished, and read submit->RUNNING
latency from the job's own recorded transitions.

Load generation: each client is a thread with its own channel, and the clients are spread
over several processes. A Python gRPC client spends much of each call in the interpreter,
so one process's GIL would cap the load and the figures would describe the client; several
processes keep the server the bottleneck. Client and server still share the machine's CPUs,
so the rates are a lower bound; the server's CPU time per call (read from /proc) does not
depend on how much CPU the clients took, and is reported beside them.

Authentication (--auth): `none` measures single-user mode (no users, loopback bind, no token).
`token` bootstraps an admin in each server's store before the server starts, as `trainyard
admin bootstrap` does, and every call of every phase (health checks included, so the ratio
stays like-for-like) sends that admin's token, as the SDK does. `token-tls` also makes a
self-signed certificate and runs every call over TLS. The token reaches the client processes
inside the pickled work description, never on a command line.

Usage: .venv/bin/python bench/submit.py [--clients 32] [--rest-clients 4]
                                        [--requests-per-client 150]
                                        [--auth {none,token,token-tls}] [--json PATH]
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import multiprocessing as mp
import os
import platform
import queue
import random
import shlex
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from benchlib import (
    SERVER_START_TIMEOUT_S,
    SERVER_STOP_TIMEOUT_S,
    commit,
    num,
    percentile,
    stop_process,
    verdict,
    wait_for_port,
    write_json,
)
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc
from rich.console import Console
from rich.table import Table

from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

RESULTS_DIR = Path(__file__).resolve().parent / "results"
RESULTS = RESULTS_DIR / "submit.json"  # --auth none; other modes write submit-<mode>.json
AUTH_MODES = ("none", "token", "token-tls")
AUTH_LABELS = {"none": "single-user (no token)", "token": "token auth",
               "token-tls": "token auth over TLS"}
BENCH_ADMIN = "bench-admin"
TOKEN_LIFETIME_S = 6 * 3600  # outlives any run; bounds a token left in a shared database
CALL_TIMEOUT_S = 10.0
BLOCKER_SECONDS = 600
GOAL_SUBMIT_VS_HEALTH = 0.5
GOAL_SUBMIT_TO_RUNNING_P50_MS = 25.0

WAITING = pb.JobState.Value("WAITING")
RUNNING = pb.JobState.Value("RUNNING")
ACTIVE_OR_WAITING = [pb.JobState.Value(s) for s in ("WAITING", "LAUNCHING", "RUNNING")]

# A table wider than the 80 columns rich assumes when writing to a pipe or file.
console = Console(width=None if sys.stdout.isatty() else 100)


# --- servers and credentials -----------------------------------------------------------------

Metadata = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Endpoint:
    """How a client reaches a server. It travels to the client processes inside the pickled
    Load (over multiprocessing's pipe, never on a command line); repr=False keeps the token
    out of logs and tracebacks."""

    address: str
    token: str = field(default="", repr=False)
    ca_cert: bytes = field(default=b"", repr=False)  # PEM root of trust; empty: plaintext
    http_port: int = 0  # the server's HTTP API

    @property
    def metadata(self) -> Metadata | None:
        """What every call sends, as the SDK does; None without a token (as before)."""
        return (("authorization", f"Bearer {self.token}"),) if self.token else None

    def http_connection(self) -> http.client.HTTPConnection:
        """A keep-alive connection to the HTTP API, over TLS where gRPC is."""
        if self.ca_cert:
            context = ssl.create_default_context(cadata=self.ca_cert.decode())
            return http.client.HTTPSConnection("127.0.0.1", self.http_port,
                                               timeout=CALL_TIMEOUT_S, context=context)
        return http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=CALL_TIMEOUT_S)

    def channel(self) -> grpc.Channel:
        if self.ca_cert:
            return grpc.secure_channel(
                self.address, grpc.ssl_channel_credentials(root_certificates=self.ca_cert))
        return grpc.insecure_channel(self.address)


class Security:
    """The run's --auth mode: the TLS pair the servers use, and each store's admin token."""

    def __init__(self, mode: str, workdir: Path) -> None:
        self.mode = mode
        self.tls_args: list[str] = []
        self.ca_cert = b""
        self._shared_token = ""  # the last store's token; reused only for a shared database
        if mode == "token-tls":
            from trainyard.auth.certs import generate_self_signed

            pair = generate_self_signed(workdir / "tls")  # localhost and 127.0.0.1
            self.tls_args = ["--tls-cert", str(pair.cert), "--tls-key", str(pair.key)]
            self.ca_cert = pair.cert.read_bytes()

    def token_for(self, data_dir: Path, database_url: str) -> str:
        """An admin token for the store the server on data_dir uses; "" for --auth none."""
        if self.mode == "none":
            return ""
        if database_url and self._shared_token:
            return self._shared_token  # both servers use this store: its admin exists
        self._shared_token = bootstrap_admin(data_dir, database_url)
        return self._shared_token


def bootstrap_admin(data_dir: Path, database_url: str) -> str:
    """Create the first admin and a token directly in the store, as `trainyard admin
    bootstrap` does, before the server opens it. A shared database that already has users
    needs an admin's token in TRAINYARD_TOKEN instead."""
    from trainyard.auth.authenticator import Authenticator
    from trainyard.services.access import AccessService
    from trainyard.store.access import AccessStore
    from trainyard.store.db import open_database, sqlite_url

    db = open_database(database_url or sqlite_url(data_dir.resolve()))
    try:
        store = AccessStore(db)
        if store.any_users():
            token = os.environ.get("TRAINYARD_TOKEN", "")
            if not token:
                raise RuntimeError("the database already has users, so the benchmark cannot "
                                   "bootstrap its admin: set TRAINYARD_TOKEN to an admin's "
                                   "token, or use an empty database")
            return token
        access = AccessService(store, Authenticator(store, loopback_only=True))
        return access.bootstrap(BENCH_ADMIN, expires_in=TOKEN_LIFETIME_S).token
    finally:
        db.close()


@dataclass(frozen=True)
class Server:
    endpoint: Endpoint
    pid: int


@contextmanager
def trainyard_server(workdir: Path, *, max_concurrent: int, database_url: str,
                     security: Security) -> Iterator[Server]:
    """Run a server in a subprocess; yield it once it serves; always stop it."""
    port_file = workdir / "port"
    http_port_file = workdir / "http-port"
    log_path = workdir / "server.log"
    data_dir = workdir / "data"
    token = security.token_for(data_dir, database_url)  # before the server opens the store
    cmd = [sys.executable, "-m", "trainyard.cli.main", "server", "--port", "0", "--http-port", "0",
           "--port-file", str(port_file), "--http-port-file", str(http_port_file),
           "--data-dir", str(data_dir),
           "--max-concurrent", str(max_concurrent),
           # Always explicit, so a TRAINYARD_DATABASE_URL in the environment cannot leak in.
           "--database-url", database_url, *security.tls_args]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        port = wait_for_port(proc, port_file, log_path)
        http_port = wait_for_port(proc, http_port_file, log_path)
        endpoint = Endpoint(f"127.0.0.1:{port}", token, security.ca_cert, http_port)
        if token:
            require_token(endpoint)
        yield Server(endpoint, proc.pid)
    finally:
        stop_process(proc)


def require_token(endpoint: Endpoint) -> None:
    """The server must refuse a call without the token, or it is in single-user mode and the
    figures would not describe token authentication."""
    with replace(endpoint, token="").channel() as channel:
        try:
            pb_grpc.TrainingServiceStub(channel).ListJobs(pb.ListJobsRequest(page_size=1),
                                                          timeout=CALL_TIMEOUT_S)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.UNAUTHENTICATED:
                return
            raise
    raise RuntimeError("the server answered a call without a token: it is not asking for one")


def server_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) the process has used; None where /proc is missing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- load workers (run in child processes) ---------------------------------------------------


@dataclass(frozen=True)
class Load:
    kind: str  # health | submit | rest | status | cancel
    endpoint: Endpoint
    requests: int  # per client; "cancel" instead does each of its ids once
    cap_s: float  # wall-clock cap per client
    job_ids: tuple[str, ...] = ()


@dataclass
class ClientResult:
    latencies_s: list[float] = field(default_factory=list)
    job_ids: list[str] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""
    start: float = math.inf  # time.monotonic(): system-wide on Linux, so comparable
    end: float = 0.0


def _caller(load: Load, channel: grpc.Channel, ids: Sequence[str]) -> Callable[[int], str]:
    """The one call a client repeats; returns a job id for submits, "" otherwise."""
    stub = pb_grpc.TrainingServiceStub(channel)
    health = health_pb2_grpc.HealthStub(channel)
    check_request = health_pb2.HealthCheckRequest(service="")
    train_request = pb.TrainRequest(name="bench-submit", command="true")
    md = load.endpoint.metadata  # health checks carry it too: the same bytes on the wire

    def check(_i: int) -> str:
        health.Check(check_request, timeout=CALL_TIMEOUT_S, metadata=md)
        return ""

    def train(_i: int) -> str:
        return str(stub.Train(train_request, timeout=CALL_TIMEOUT_S, metadata=md).job_id)

    pick = random.Random(os.getpid() * 1000 + threading.get_ident()).choice

    def status(_i: int) -> str:
        stub.GetTrainingStatus(pb.GetTrainingStatusRequest(job_id=pick(ids)),
                               timeout=CALL_TIMEOUT_S, metadata=md)
        return ""

    def cancel(i: int) -> str:
        stub.CancelJob(pb.CancelJobRequest(job_id=ids[i]), timeout=CALL_TIMEOUT_S,
                       metadata=md)
        return ""

    calls = {"health": check, "submit": train, "status": status, "cancel": cancel,
             "rest": _rest_submit(load.endpoint)}
    return calls[load.kind]


class RestRefused(Exception):
    """The HTTP API answered a submit with something other than 201."""


def _rest_submit(endpoint: Endpoint) -> Callable[[int], str]:
    """POST /api/v1/jobs on one keep-alive connection (a new one after a failure)."""
    body = json.dumps({"name": "bench-submit", "command": "true"}).encode()
    headers = {"Content-Type": "application/json"}
    if endpoint.token:
        headers["Authorization"] = f"Bearer {endpoint.token}"
    conn: list[http.client.HTTPConnection] = []

    def submit(_i: int) -> str:
        if not conn:
            conn.append(endpoint.http_connection())
        try:
            conn[0].request("POST", "/api/v1/jobs", body=body, headers=headers)
            response = conn[0].getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            conn.pop().close()
            raise
        if response.status != 201:
            raise RestRefused(f"HTTP {response.status}: {data[:200]!r}")
        return str(json.loads(data)["job_id"])

    return submit


def _client(load: Load, ids: Sequence[str], ready: threading.Barrier, go: threading.Event,
            out: ClientResult) -> None:
    with load.endpoint.channel() as channel:
        try:
            # Connect before the clock starts, so set-up is not part of any figure.
            grpc.channel_ready_future(channel).result(timeout=CALL_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            ready.abort()  # the whole process gives up at once
            return
        call = _caller(load, channel, ids)
        try:
            ready.wait()
        except threading.BrokenBarrierError:
            return
        go.wait()
        count = len(ids) if load.kind == "cancel" else load.requests
        out.start = time.monotonic()
        deadline = out.start + load.cap_s
        for i in range(count):
            if time.monotonic() > deadline:
                break
            t0 = time.monotonic()
            try:
                job_id = call(i)
            except grpc.RpcError as exc:
                out.errors += 1
                out.first_error = out.first_error or f"{exc.code()}: {exc.details()}"
                continue
            except (OSError, http.client.HTTPException, RestRefused) as exc:
                out.errors += 1
                out.first_error = out.first_error or f"{type(exc).__name__}: {exc}"
                continue
            out.latencies_s.append(time.monotonic() - t0)
            if job_id:
                out.job_ids.append(job_id)
        out.end = time.monotonic()


def _ids_for(load: Load, index: int, parts: int) -> tuple[str, ...]:
    """Cancels split the ids so no job is cancelled twice; status reads sample all of them."""
    return load.job_ids[index::parts] if load.kind == "cancel" else load.job_ids


def _worker(load: Load, threads: int, ready: Any, go: Any, results: Any) -> None:
    """One client process: `threads` clients, started together when the parent says go."""
    outs = [ClientResult() for _ in range(threads)]
    local_ready = threading.Barrier(threads + 1)
    local_go = threading.Event()
    slices = [_ids_for(load, i, threads) for i in range(threads)]
    pool = [threading.Thread(target=_client, args=(load, slices[i], local_ready, local_go,
                                                   outs[i]), daemon=True)
            for i in range(threads)]
    for t in pool:
        t.start()
    try:
        local_ready.wait(timeout=SERVER_START_TIMEOUT_S)
    except threading.BrokenBarrierError:
        sys.exit(1)  # a client could not connect; the parent sees the exit code
    ready.put(os.getpid())
    if not go.wait(timeout=2 * SERVER_START_TIMEOUT_S):
        sys.exit(1)
    local_go.set()
    for t in pool:
        t.join(load.cap_s + 2 * CALL_TIMEOUT_S)
    results.put(outs)


# --- load phases (parent) --------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    calls: int
    errors: int
    first_error: str
    seconds: float
    per_s: float
    p50_ms: float
    p99_ms: float
    job_ids: tuple[str, ...]
    # Server CPU per call: the server's own cost, free of how much CPU the clients took.
    server_cpu_ms_per_call: float | None = None


def run_load(load: Load, clients: int, processes: int) -> Figures:
    """Run `clients` clients over `processes` processes; rates use the whole busy window."""
    ctx = mp.get_context("spawn")  # no fork: gRPC's core does not survive one
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    id_slices = [_ids_for(load, p, processes) for p in range(processes)]
    threads = [clients // processes + (p < clients % processes) for p in range(processes)]
    procs = [ctx.Process(target=_worker, daemon=True,
                         args=(replace(load, job_ids=id_slices[p]), threads[p], ready, go,
                               results))
             for p in range(processes) if threads[p]]
    outs: list[ClientResult] = []
    try:
        for p in procs:
            p.start()
        _await_ready(procs, ready)
        go.set()
        for _ in procs:
            outs.extend(results.get(timeout=load.cap_s + 3 * CALL_TIMEOUT_S))
    finally:
        # After a failure or an interrupt, stop the clients at once instead of letting them
        # finish their calls.
        grace = 5.0 if len(outs) == clients else 0.0
        for p in procs:
            if p.pid is None:
                continue  # never started
            p.join(grace)
            if p.is_alive():
                p.kill()
                p.join()
    return _figures(outs)


def _await_ready(procs: Sequence[Any], ready: Any) -> None:
    """Wait until every client process has connected; fail fast if one died instead."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    pending = len(procs)
    while pending:
        try:
            ready.get(timeout=0.2)
            pending -= 1
        except queue.Empty:
            if any(p.exitcode is not None for p in procs):
                raise RuntimeError("a client process exited before the load started") from None
            if time.monotonic() > deadline:
                raise TimeoutError("client processes did not connect in time") from None


def _figures(outs: Sequence[ClientResult]) -> Figures:
    latencies = sorted(lat for o in outs for lat in o.latencies_s)
    window = max(o.end for o in outs) - min(o.start for o in outs)
    errors = [o for o in outs if o.errors]
    return Figures(
        calls=len(latencies), errors=sum(o.errors for o in errors),
        first_error=errors[0].first_error if errors else "", seconds=window,
        per_s=len(latencies) / window if window > 0 else 0.0,
        p50_ms=percentile(latencies, 50) * 1000, p99_ms=percentile(latencies, 99) * 1000,
        job_ids=tuple(j for o in outs for j in o.job_ids),
    )


# --- single-client helpers ---------------------------------------------------------------------


def _seconds(ts: Timestamp) -> float:
    return float(ts.seconds + ts.nanos / 1e9)


@dataclass(frozen=True)
class Api:
    """A channel's TrainingService stub and the metadata each call on it sends."""

    stub: pb_grpc.TrainingServiceStub
    md: Metadata | None


@contextmanager
def connect(endpoint: Endpoint) -> Iterator[Api]:
    with endpoint.channel() as channel:
        yield Api(pb_grpc.TrainingServiceStub(channel), endpoint.metadata)


def wait_for_state(api: Api, job_id: str, state: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        status = api.stub.GetTrainingStatus(pb.GetTrainingStatusRequest(job_id=job_id),
                                            timeout=CALL_TIMEOUT_S, metadata=api.md)
        if status.state == state:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} stayed {pb.JobState.Name(status.state)}")
        time.sleep(0.02)


def wait_final(api: Api, job_id: str, timeout_s: float) -> None:
    """Follow WatchJob until the job is final; it pushes changes, so no poll delay is added."""
    for event in api.stub.WatchJob(pb.WatchJobRequest(job_id=job_id), timeout=timeout_s,
                                   metadata=api.md):
        if event.final:
            return


def require_empty_queue(api: Api) -> None:
    """A shared database must hold no unfinished job, or the figures would include it."""
    page = api.stub.ListJobs(pb.ListJobsRequest(states=ACTIVE_OR_WAITING, page_size=1),
                             timeout=CALL_TIMEOUT_S, metadata=api.md)
    if page.jobs:
        raise RuntimeError("the database already holds unfinished jobs; use an empty one")


def blocker_command(marker: Path) -> str:
    """Sleep up to BLOCKER_SECONDS, but only while `marker` exists: a job outlives a server
    that stops, so if cancelling fails, removing the bench's temp dir still ends it."""
    return (f"i=0; while [ $i -lt {BLOCKER_SECONDS} ] && [ -e {shlex.quote(str(marker))} ]; "
            "do sleep 1; i=$((i+1)); done")


@contextmanager
def blocker_job(api: Api, marker: Path) -> Iterator[str]:
    """Hold the only run slot with a sleeping job, and cancel it (and wait for that) after."""
    marker.touch()
    request = pb.TrainRequest(name="bench-blocker", command=blocker_command(marker))
    job_id = api.stub.Train(request, timeout=CALL_TIMEOUT_S, metadata=api.md).job_id
    try:
        wait_for_state(api, job_id, RUNNING, timeout_s=15)
        yield job_id
    finally:
        try:
            api.stub.CancelJob(pb.CancelJobRequest(job_id=job_id), timeout=CALL_TIMEOUT_S,
                               metadata=api.md)
            wait_final(api, job_id, timeout_s=SERVER_STOP_TIMEOUT_S)
        except grpc.RpcError as exc:
            # Do not hide the error that got us here; the marker's removal ends the job.
            console.log(f"[yellow]could not cancel the blocker job: {exc.code()}[/]")


@dataclass(frozen=True)
class Latency:
    jobs: int
    failures: int
    first_error: str
    recorded_ms: list[float]  # WAITING -> RUNNING, both times from the job's own transitions
    observed_ms: list[float]  # client's submit-call start -> recorded RUNNING time


def measure_submit_to_running(endpoint: Endpoint, jobs: int, cap_s: float) -> Latency:
    """Phase d: trivial jobs one at a time on an empty queue."""
    recorded: list[float] = []
    observed: list[float] = []
    failures, first_error = 0, ""
    deadline = time.monotonic() + cap_s
    with connect(endpoint) as api:
        require_empty_queue(api)
        request = pb.TrainRequest(name="bench-latency", command="true")
        for _ in range(jobs):
            if time.monotonic() > deadline:
                break
            started = time.time()  # wall clock: compared with the server's recorded times
            try:
                times = _run_trivial_job(api, request)
            except grpc.RpcError as exc:
                failures += 1
                first_error = first_error or f"{exc.code()}: {exc.details()}"
                continue
            if WAITING not in times or RUNNING not in times:
                failures += 1
                first_error = first_error or "a job never reached RUNNING"
                continue
            recorded.append((times[RUNNING] - times[WAITING]) * 1000)
            observed.append((times[RUNNING] - started) * 1000)
    return Latency(len(recorded) + failures, failures, first_error, sorted(recorded),
                   sorted(observed))


def _run_trivial_job(api: Api, request: pb.TrainRequest) -> dict[int, float]:
    """Submit, wait until final, return the recorded time of each state it entered."""
    job_id = api.stub.Train(request, timeout=CALL_TIMEOUT_S, metadata=api.md).job_id
    wait_final(api, job_id, timeout_s=CALL_TIMEOUT_S)
    status = api.stub.GetTrainingStatus(pb.GetTrainingStatusRequest(job_id=job_id),
                                        timeout=CALL_TIMEOUT_S, metadata=api.md)
    return {t.to_state: _seconds(t.time) for t in status.transitions}


# --- the run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    health: Figures
    submit: Figures
    status: Figures
    latency: Latency
    round_ratios: list[float]
    rest: Figures  # durable submits over the HTTP API


def run(args: argparse.Namespace) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-") as tmp:
        server_a, server_b = Path(tmp, "a"), Path(tmp, "b")
        server_a.mkdir()
        server_b.mkdir()
        security = Security(args.auth, Path(tmp))
        # Phase d first: it needs an empty queue, and on a shared PostgreSQL database the
        # load phases leave thousands of jobs behind.
        console.log(f"d. submit->RUNNING, {args.latency_jobs} jobs one at a time "
                    f"(auth: {args.auth})")
        with trainyard_server(server_b, max_concurrent=4, database_url=args.database_url,
                              security=security) as server:
            latency = measure_submit_to_running(server.endpoint, args.latency_jobs,
                                                args.phase_seconds)
        health, submit, status, ratios, rest = load_phases(args, server_a, security)
    return Outcome(health, submit, status, latency, ratios, rest)


def load_phases(args: argparse.Namespace, workdir: Path, security: Security
                ) -> tuple[Figures, Figures, Figures, list[float], Figures]:
    """Phases a-c and r on one server whose only run slot a blocker job holds."""
    def load(kind: str, requests: int, ids: tuple[str, ...] = ()) -> Figures:
        cpu_before = server_cpu_s(server.pid)
        clients = args.rest_clients if kind == "rest" else args.clients
        figures = run_load(Load(kind, server.endpoint, requests, args.phase_seconds, ids),
                           clients, min(args.processes, clients))
        cpu_after = server_cpu_s(server.pid)
        if cpu_before is None or cpu_after is None or not figures.calls:
            return figures
        return replace(figures,
                       server_cpu_ms_per_call=(cpu_after - cpu_before) * 1000 / figures.calls)

    with (trainyard_server(workdir, max_concurrent=1, database_url=args.database_url,
                           security=security) as server,
          connect(server.endpoint) as api):
        require_empty_queue(api)
        with blocker_job(api, workdir / "blocker-alive"):
            # Health and submit rounds alternate, so a burst of load from elsewhere on a
            # shared machine hits both sides of the ratio; the median round is reported.
            rounds: list[tuple[Figures, Figures]] = []
            rests: list[Figures] = []
            for r in range(1, args.rounds + 1):
                console.log(f"a. health checks, round {r}/{args.rounds}")
                health = load("health", args.requests_per_client)
                console.log(f"b. submits (all stay WAITING behind the blocker), round {r}")
                submit = load("submit", args.requests_per_client)
                if not submit.job_ids:
                    raise RuntimeError(f"no submit succeeded: {submit.first_error}")
                rounds.append((health, submit))
                console.log(f"r. submits over HTTP, {args.rest_clients} keep-alive clients, "
                            f"round {r}")
                rests.append(load("rest", args.requests_per_client))
            health, submit = median_round(rounds)
            rest = sorted(rests, key=lambda f: f.per_s)[(len(rests) - 1) // 2]
            all_ids = tuple(j for _, sub in rounds for j in sub.job_ids) + tuple(
                j for f in rests for j in f.job_ids)
            console.log("c. status queries")
            status = load("status", args.requests_per_client, all_ids)
            if args.database_url:
                # The next server shares this database, and its queue must start empty.
                console.log("   cancelling the submitted jobs")
                load("cancel", 0, all_ids)
    return health, submit, status, [round_ratio(r) for r in rounds], rest


def round_ratio(pair: tuple[Figures, Figures]) -> float:
    health, submit = pair
    return submit.per_s / health.per_s if health.per_s else 0.0


def median_round(rounds: list[tuple[Figures, Figures]]) -> tuple[Figures, Figures]:
    return sorted(rounds, key=round_ratio)[(len(rounds) - 1) // 2]


def results_dict(outcome: Outcome, args: argparse.Namespace) -> dict[str, Any]:
    h, s, st, lat = outcome.health, outcome.submit, outcome.status, outcome.latency
    ratio = s.per_s / h.per_s if h.per_s else 0.0
    recorded_p50 = percentile(lat.recorded_ms, 50)
    figures: dict[str, Any] = {}
    for name, f in (("health", h), ("submit", s), ("status", st),
                    ("rest_submit", outcome.rest)):
        figures[f"{name}_calls_per_s" if name == "health" else f"{name}_per_s"] = num(f.per_s, 1)
        figures[f"{name}_p50_ms"] = num(f.p50_ms)
        figures[f"{name}_p99_ms"] = num(f.p99_ms)
        figures[f"{name}_server_cpu_ms_per_call"] = num(f.server_cpu_ms_per_call, 3)
    return {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(), "grpcio": grpc.__version__},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "config": {"clients": args.clients, "client_processes": args.processes,
                   "requests_per_client": args.requests_per_client, "rounds": args.rounds,
                   "latency_jobs": args.latency_jobs, "rest_clients": args.rest_clients,
                   "database": "postgresql" if args.database_url else "sqlite",
                   "auth": args.auth},
        **figures,
        "submit_to_running_p50_ms": num(recorded_p50),
        "submit_to_running_p99_ms": num(percentile(lat.recorded_ms, 99)),
        "submit_call_to_running_p50_ms": num(percentile(lat.observed_ms, 50)),
        "submit_call_to_running_p99_ms": num(percentile(lat.observed_ms, 99)),
        "counts": {"health_calls": h.calls, "submits": s.calls, "status_calls": st.calls,
                   "rest_submits": outcome.rest.calls, "latency_jobs": lat.jobs,
                   "errors": h.errors + s.errors + st.errors + lat.failures
                   + outcome.rest.errors},
        "ratios": {"submit_vs_health": num(ratio, 3),
                   "rest_submit_vs_grpc_submit": num(
                       outcome.rest.per_s / s.per_s if s.per_s else 0.0, 3),
                   "submit_vs_health_rounds": [num(r, 3) for r in outcome.round_ratios]},
        "goals": {
            "submit_vs_health_at_least": {"target": GOAL_SUBMIT_VS_HEALTH,
                                          "value": num(ratio, 3),
                                          "pass": ratio >= GOAL_SUBMIT_VS_HEALTH},
            "submit_to_running_p50_ms_at_most": {
                "target": GOAL_SUBMIT_TO_RUNNING_P50_MS, "value": num(recorded_p50),
                "pass": recorded_p50 <= GOAL_SUBMIT_TO_RUNNING_P50_MS},
        },
    }


def render(outcome: Outcome, results: dict[str, Any]) -> None:
    config = results["config"]
    table = Table(title=f"Trainyard submit benchmark: {config['database']}, "
                        f"{AUTH_LABELS[config['auth']]}, {config['clients']} clients in "
                        f"{config['client_processes']} processes",
                  caption="CPU ms: the server process's CPU time per call")
    for col in ("figure", "calls/s", "p50 ms", "p99 ms", "CPU ms", "calls", "errors"):
        table.add_column(col, justify="left" if col == "figure" else "right", no_wrap=True)
    for name, f in (("a. health check (ceiling)", outcome.health),
                    ("b. durable submit (Train)", outcome.submit),
                    ("c. status (GetTrainingStatus)", outcome.status),
                    (f"r. durable submit over HTTP ({config['rest_clients']} clients)",
                     outcome.rest)):
        cpu = "" if f.server_cpu_ms_per_call is None else f"{f.server_cpu_ms_per_call:.3f}"
        table.add_row(name, f"{f.per_s:,.0f}", f"{f.p50_ms:.2f}", f"{f.p99_ms:.2f}", cpu,
                      str(f.calls), str(f.errors))
    lat = outcome.latency
    for name, values in (("d. submit->RUNNING, recorded", lat.recorded_ms),
                         ("   submit call->RUNNING, client", lat.observed_ms)):
        table.add_row(name, "", f"{percentile(values, 50):.2f}",
                      f"{percentile(values, 99):.2f}", "", str(len(values)), str(lat.failures))
    console.print(table)
    rounds = ", ".join(f"{r:.0%}" for r in outcome.round_ratios)
    console.print(f"submits/health checks by round: {rounds} (the median round is shown)")
    console.print(goals_table(results["goals"]))
    for name, f in (("health", outcome.health), ("submit", outcome.submit),
                    ("status", outcome.status), ("rest submit", outcome.rest)):
        if f.errors:
            console.print(f"[yellow]{name}: {f.errors} errors, first: {f.first_error}[/]")
    if lat.failures:
        console.print(f"[yellow]submit->RUNNING: {lat.failures} failed, first: "
                      f"{lat.first_error}[/]")


def goals_table(goals: dict[str, Any]) -> Table:
    table = Table(title="Goals")
    for col in ("goal", "target", "measured", "result"):
        table.add_column(col, no_wrap=True)
    ratio = goals["submit_vs_health_at_least"]
    table.add_row("submits/s vs health checks/s", f">= {ratio['target']:.0%}",
                  f"{ratio['value']:.0%}", verdict(ratio["pass"]))
    p50 = goals["submit_to_running_p50_ms_at_most"]
    measured = "n/a" if p50["value"] is None else f"{p50['value']:.2f} ms"
    table.add_row("submit->RUNNING p50, empty queue", f"<= {p50['target']:g} ms", measured,
                  verdict(p50["pass"]))
    return table


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--clients", type=int, default=32, help="concurrent clients (threads)")
    p.add_argument("--rest-clients", type=int, default=4,
                   help="concurrent HTTP API clients, each on one keep-alive connection")
    p.add_argument("--processes", type=int, default=4,
                   help="client processes the clients are spread over")
    p.add_argument("--requests-per-client", type=int, default=150,
                   help="calls per client in each load phase")
    p.add_argument("--rounds", type=int, default=3,
                   help="alternating health/submit rounds; the median round is reported")
    p.add_argument("--latency-jobs", type=int, default=100,
                   help="trivial jobs for submit->RUNNING")
    p.add_argument("--phase-seconds", type=float, default=25.0,
                   help="wall-clock cap of each phase")
    p.add_argument("--auth", choices=AUTH_MODES, default="none",
                   help="none: single-user mode; token: every call sends an admin's token; "
                        "token-tls: that, over TLS with a self-signed certificate")
    p.add_argument("--json", type=Path, default=None,
                   help="where to write the results [default: bench/results/submit.json, "
                        "or submit-<auth>.json for a token mode]")
    p.add_argument("--database-url", default="",
                   help="postgresql://... to benchmark PostgreSQL instead of SQLite; "
                        "the database must hold no unfinished jobs (and, for a token mode, "
                        "no users, or an admin's token must be in TRAINYARD_TOKEN)")
    args = p.parse_args(argv)
    if min(args.clients, args.rest_clients, args.processes, args.requests_per_client,
           args.rounds) < 1:
        p.error("--clients, --rest-clients, --processes, --requests-per-client and --rounds "
                "must be at least 1")
    args.processes = min(args.processes, args.clients)
    if args.json is None:
        args.json = RESULTS if args.auth == "none" else RESULTS_DIR / f"submit-{args.auth}.json"
    return args


def main() -> int:
    args = parse_args()
    # Turn SIGTERM into an exit that runs the clean-up (servers, blocker job, temp dir).
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(128 + signal.SIGTERM))
    outcome = run(args)
    results = results_dict(outcome, args)
    render(outcome, results)
    write_json(results, args.json)
    console.print(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
