"""`python3 -m trainyard.runtime run -- COMMAND` end to end: a real agent process running a
real job against the real server's JobRuntime service on loopback (tests/api/runtime_live).

The attempt whose token the agent holds is a RUNNING local job that waits for its go file,
as a remote executor's job would wait for its node; the agent writes into that attempt's
files on this host, where the tests read them, and the waiting job is let go afterwards."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.api.runtime_live import RuntimeWorld, bearer, runtime_world
from tests.liveserver import ACTIVE
from tests.services.conftest import ROOT
from trainyard.domain.algorithms import AlgorithmVersion, Source
from trainyard.domain.spec import AlgorithmRef, DatasetRef, JobSpec
from trainyard.domain.states import JobState
from trainyard.metadata.hashing import store_tree
from trainyard.metadata.workspace import AttemptPaths
from trainyard.store.algorithms import AlgorithmStore
from trainyard.v1 import runtime_pb2 as rpb

SRC = str(Path(__file__).resolve().parents[2] / "src")
HEARTBEAT_S = 0.3  # the service's interval for these attempts: a stop is seen at once
ENDED = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeWorld]:
    # A grace long enough that an agent asked to stop uploads before its attempt is killed.
    with contextmanager(runtime_world)(tmp_path_factory.mktemp("agent"),
                                       cancel_grace=20.0) as world:
        world.server.services.runtime.heartbeat_interval_s = HEARTBEAT_S
        yield world
        # Every test let its waiting jobs go: nothing is left for the teardown to cancel.
        assert world.server.jobs.in_states(ACTIVE) == []


@dataclass
class Attempt:
    """A RUNNING attempt of a local job that waits for its go file, and its job token."""

    world: RuntimeWorld
    job_id: str
    attempt: int
    token: str

    @property
    def paths(self) -> AttemptPaths:
        return self.world.server.workspace.attempt(self.job_id, self.attempt)

    def log(self) -> list[str]:
        return self.paths.log_path.read_text().splitlines()

    def metrics(self) -> list[str]:
        return self.paths.metrics_path.read_text().splitlines()

    def go(self) -> None:
        (self.world.tmp / f"go-trainyard-{self.job_id}-{self.attempt}").touch()

    def termed(self) -> bool:
        return (self.world.tmp / f"termed-trainyard-{self.job_id}-{self.attempt}").exists()

    def finish(self, states: set[JobState] = ENDED) -> None:
        """Let the waiting job end; it leaves nothing running."""
        self.go()
        self.world.wait(self.job_id, states)


def running(world: RuntimeWorld, name: str, dataset: DatasetRef | None = None) -> Attempt:
    """A job that waits for the go file of its current attempt; a TERM (a cancel, a
    preemption) makes it end 143 when that comes, so that its attempt, and the token, last
    until the test lets it go."""
    go, termed = (f"{world.tmp}/{what}-$TRAINYARD_HANDLE" for what in ("go", "termed"))
    command = (f"trap 'code=143; touch {termed}' TERM; code=0; for i in $(seq 1200); do "
               f"[ -e {go} ] && exit $code; sleep 0.05; done; exit 1")
    job_id, _ = world.server.service.train(ROOT, JobSpec(name=name, command=command,
                                                       dataset=dataset))
    return current(world, job_id)


def current(world: RuntimeWorld, job_id: str) -> Attempt:
    world.wait(job_id, {JobState.RUNNING})
    job = world.server.jobs.get(job_id)
    return Attempt(world, job_id, job.attempt, world.server.tracker.launcher.requests.mint(job))


def address(world: RuntimeWorld) -> str:
    return f"127.0.0.1:{world.server.port}"


def agent(service: str, cache: Path, job: str, *options: str, token: str,
          env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "trainyard.runtime", "run", "--service", service,
            "--cache-dir", str(cache / "{node}"), "--retry-for", "10", "--grace", "2",
            *options, "--", sys.executable, "-c", job]
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": SRC, "PYTHONUNBUFFERED": "1",
                   "TRAINYARD_JOB_TOKEN": token, **(env or {})}
    return subprocess.Popen(argv, env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def wait_for(condition: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def files_in(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


TRAIN = '''
import os, sys
from trainyard import runtime
data = runtime.data_path()
print("data:", (data / "train.csv").read_text().split(), (data / "sub/notes.txt").read_text())
print("writable:", os.access(data, os.W_OK) and os.geteuid() != 0)
print("token seen:", "TRAINYARD_JOB_TOKEN" in os.environ)
for step in range(3):
    runtime.log_metric(step=step, loss=1.0 / (step + 1))
print("to stderr", file=sys.stderr)
(runtime.model_path() / "weights.bin").write_bytes(b"w" * 3_000_000)
sys.exit(int(os.environ.get("CODE", "0")))
'''
DATASET = {"train.csv": b"1,2\n3,4\n", "sub/notes.txt": b"hello"}


def test_a_job_gets_its_dataset_and_its_output_arrives_once(world: RuntimeWorld,
                                                             tmp_path: Path) -> None:
    ref = world.dataset("train-data", DATASET)
    job = running(world, "train", ref)
    code, out, err = finish(agent(address(world), tmp_path, TRAIN, token=job.token))
    assert code == 0, err
    assert job.log() == [
        "data: ['1,2', '3,4'] hello", "writable: False", "token seen: False", "to stderr",
        "[trainyard runtime] model uploaded: 1 files, 3000000 bytes"]
    records = [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}, {"step": 2, "loss": 1.0 / 3}]
    assert [json.loads(line) for line in job.metrics()] == records
    # A push applied whose reply was lost goes again from the same line: kept once.
    pushed = job.paths.metrics_path.read_bytes()
    lines = [line.encode() for line in job.metrics()]
    for _ in range(2):
        reply = world.stub.Push(rpb.PushRequest(stream="metrics", rank=0, first_seq=0,
                                                lines=lines), metadata=bearer(job.token),
                                timeout=10)
        assert reply.next_seq == 3
    assert job.paths.metrics_path.read_bytes() == pushed
    # over 1 MiB: several chunks, put together whole where a local job's model would be
    assert files_in(job.paths.model_dir) == {"weights.bin": b"w" * 3_000_000}
    assert world.server.services.runtime.last_heartbeat(job.job_id, job.attempt) is not None
    assert "data: ['1,2', '3,4'] hello" in out  # echoed for the engine's own log too
    # The dataset sits read-only in the node's cache, by content hash, for the next job.
    cached = next(tmp_path.glob(f"*/datasets/{ref.version}"))
    assert (cached / "train.csv").read_bytes() == b"1,2\n3,4\n"
    pulled = (cached / "train.csv").stat()
    job.finish({JobState.SUCCEEDED})
    series = world.server.tracker.metrics.series(job.job_id, "loss")
    assert [(step, value) for step, value in series] == [(r["step"], r["loss"]) for r in records]
    assert world.server.service.status(ROOT, job.job_id).model is not None
    again = running(world, "train-again", ref)
    code, _, err = finish(agent(address(world), tmp_path, TRAIN, token=again.token))
    assert code == 0, err
    assert again.log()[0] == "data: ['1,2', '3,4'] hello"
    # The second job on this node reused the node's copy: the same file, not pulled again.
    kept = (cached / "train.csv").stat()
    assert (kept.st_ino, kept.st_ctime_ns) == (pulled.st_ino, pulled.st_ctime_ns)
    again.finish()



CODE_TRAIN = '''
import os
from trainyard import runtime
code = os.environ["CODE_PATH"]
print("cwd is code:", os.getcwd() == code, sorted(os.listdir(".")))
print("writable:", os.access(code, os.W_OK) and os.geteuid() != 0)
(runtime.model_path() / "m.txt").write_text(open("lib/weights.txt").read())
'''


def test_a_code_job_runs_in_its_code_directory_pulled_once_into_the_nodes_cache(
        world: RuntimeWorld, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "lib" / "weights.txt").write_text("w=0.5\n")
    digest, _ = store_tree(src, world.server.workspace.code_dir, "code")
    go = f"{world.tmp}/go-$TRAINYARD_HANDLE"
    AlgorithmStore(world.server.db).add_version(AlgorithmVersion(
        name="staged", version=0, source=Source.CODE, code_hash=digest.digest,
        command=f"for i in $(seq 1200); do [ -e {go} ] && exit 0; sleep 0.05; done; exit 1"))
    runs = []
    for name in ("code-1", "code-2"):
        job_id, _ = world.server.service.train(ROOT, JobSpec(
            name=name, algorithm=AlgorithmRef("staged")))
        job = current(world, job_id)
        code, _, err = finish(agent(address(world), tmp_path / "cache", CODE_TRAIN,
                                    token=job.token))
        assert code == 0, err
        assert job.log()[:2] == ["cwd is code: True ['lib']", "writable: False"]
        assert files_in(job.paths.model_dir) == {"m.txt": b"w=0.5\n"}
        cached = next((tmp_path / "cache").glob(f"*/code/{digest.digest}"))
        runs.append((cached / "lib" / "weights.txt").stat())
        job.finish({JobState.SUCCEEDED})
    # The second job reused the node's copy, read-only.
    assert (runs[0].st_ino, runs[0].st_ctime_ns) == (runs[1].st_ino, runs[1].st_ctime_ns)
    assert not runs[0].st_mode & 0o222


def test_the_exit_code_passes_through_and_a_failed_job_uploads_no_model(
        world: RuntimeWorld, tmp_path: Path) -> None:
    ref = world.dataset("fail-data", DATASET)
    job = running(world, "fails", ref)
    code, _, err = finish(agent(address(world), tmp_path, TRAIN, token=job.token,
                                env={"CODE": "3"}))
    assert code == 3, err
    assert files_in(job.paths.model_dir) == {}
    assert len(job.metrics()) == 3  # what it wrote still arrived
    assert not any("model uploaded" in line for line in job.log())
    killed = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    code, _, _ = finish(agent(address(world), tmp_path, killed, token=job.token))
    assert code == 128 + signal.SIGKILL
    job.finish()


CHECKPOINTING = '''
import os, signal, sys, time
from trainyard import runtime
state = runtime.checkpoint_path() / "state.txt"
print("resumed from:", state.read_text() if state.exists() else "nothing", flush=True)
def on_term(signum, frame):
    state.write_text("at term")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
state.write_text("step 1")
runtime.checkpoint_saved()
print("saved", flush=True)
time.sleep(60)
'''


def test_checkpoints_are_uploaded_when_saved_and_on_term_and_come_back(
        world: RuntimeWorld, tmp_path: Path) -> None:
    job = running(world, "checkpointing")
    checkpoint = job.paths.checkpoint_dir  # the job's, on the host, for every attempt
    proc = agent(address(world), tmp_path, CHECKPOINTING, token=job.token)
    # Output reaches the service within a second of being printed.
    wait_for(lambda: "saved" in job.log(), timeout=20)
    wait_for(lambda: files_in(checkpoint) == {"state.txt": b"step 1"})
    proc.send_signal(signal.SIGTERM)  # as scancel does: passed on, then the upload
    code, _, err = finish(proc)
    assert code == 0, err
    assert files_in(checkpoint) == {"state.txt": b"at term"}
    uploads = [line for line in job.log() if "checkpoint uploaded" in line]
    assert uploads == [
        "[trainyard runtime] checkpoint uploaded as the job asked: 1 files, 6 bytes",
        "[trainyard runtime] checkpoint uploaded at exit: 1 files, 7 bytes"]
    assert job.log()[-1] == "[trainyard runtime] model uploaded: 0 files, 0 bytes"  # exit 0
    assert job.log()[0] == "resumed from: nothing"
    # The scheduler preempts the attempt; the next one, on another node (another cache),
    # starts from that checkpoint.
    assert world.server.jobs.update_fields(job.job_id, JobState.RUNNING,
                                           preempt_requested=True, message="for a test")
    world.server.tracker.wake()
    wait_for(job.termed, timeout=20)  # the tracker passed the stop on to the attempt
    job.go()
    wait_for(lambda: world.server.jobs.get(job.job_id).attempt == 2, timeout=20)
    second = current(world, job.job_id)
    assert second.attempt == 2
    proc = agent(address(world), tmp_path / "other-node", CHECKPOINTING, token=second.token)
    wait_for(lambda: "saved" in second.log(), timeout=20)
    world.server.service.cancel(ROOT, job.job_id)  # the service asks it to stop: TERM
    code, _, err = finish(proc)
    assert code == 0, err
    assert second.log()[0] == "resumed from: at term"
    assert "[trainyard runtime] checkpoint uploaded at exit: 1 files, 7 bytes" in second.log()
    assert files_in(checkpoint) == {"state.txt": b"at term"}
    second.finish({JobState.CANCELLED})


def test_a_refused_token_fails_in_one_sentence(world: RuntimeWorld, tmp_path: Path) -> None:
    job = running(world, "forged")
    forged = f"tyjob_{job.job_id}_{job.attempt}_" + "s" * 43
    code, out, err = finish(agent(address(world), tmp_path, "print('ran')", token=forged))
    assert code == 70
    assert err.strip().splitlines() == [
        "[trainyard runtime] asking for the attempt failed: the service refused the job token "
        f"(the job token of {job.job_id}-{job.attempt} is not valid here)"]
    assert "ran" not in out
    code, _, err = finish(agent(address(world), tmp_path, "print('ran')",
                                token="tyjob_forged"))
    assert code == 70 and "the job token is malformed" in err
    code, _, err = finish(agent(address(world), tmp_path, "print('ran')", token=""))
    assert code == 70 and "TRAINYARD_JOB_TOKEN is not set" in err
    assert job.log() == []
    job.finish()
    # The token of an attempt that ended is refused too.
    code, _, err = finish(agent(address(world), tmp_path, "print('ran')", token=job.token))
    assert code == 70 and "the service refused the job token" in err


def test_an_unreachable_service_is_retried_then_given_up_in_one_sentence(
        tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = "tyjob_job1_1_" + "s" * 43
    proc = agent(f"127.0.0.1:{port}", tmp_path, "print('ran')", "--retry-for", "1",
                 token=token)
    code, _, err = finish(proc)
    assert code == 70
    assert "did not answer for 1 s (UNAVAILABLE" in err and "Traceback" not in err


def test_shared_staging_pushes_only_metrics_and_heartbeats(world: RuntimeWorld,
                                                           tmp_path: Path) -> None:
    job = running(world, "shared", world.dataset("shared-data", {"train.csv": b"elsewhere"}))
    shared = tmp_path / "shared"
    (shared / "data").mkdir(parents=True)
    (shared / "data" / "train.csv").write_text("9\n")
    env = {"TRAINING_DATA_PATH": str(shared / "data"), "MODEL_SAVE_PATH": str(shared / "model"),
           "CHECKPOINT_PATH": str(shared / "checkpoint"),
           # rank 1 of 2 tasks of a Slurm step
           "SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0",
           "TRAINYARD_MASTER_ADDR": "127.0.0.1", "TRAINYARD_MASTER_PORT": "4000",
           "TRAINYARD_WORKER_HOSTS": "127.0.0.1,127.0.0.1"}
    code_ = '''
import json, os
from trainyard import runtime
print((runtime.data_path() / "train.csv").read_text().strip())
workers = json.loads(os.environ["TF_CONFIG"])["cluster"]["worker"]
print(os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["MASTER_PORT"], workers[1])
runtime.log_metric(step=1, acc=0.5)
(runtime.model_path() / "m").write_text("x")
'''
    started = time.time()
    code, out, err = finish(agent(address(world), tmp_path / "cache", code_, "--staging",
                                  "shared", token=job.token, env=env))
    assert code == 0, err
    assert out.splitlines() == ["[rank 1] 9", "[rank 1] 1 2 4000 127.0.0.1:4002"]
    assert job.metrics() == ['{"step":1,"acc":0.5}']
    assert job.log() == []  # the engine's own log has the output, not the service
    beat = world.server.services.runtime.last_heartbeat(job.job_id, job.attempt)
    assert beat is not None and beat >= started
    assert files_in(job.paths.model_dir) == {} and (shared / "model" / "m").read_text() == "x"
    assert files_in(job.paths.checkpoint_dir) == {}
    assert not list((tmp_path / "cache").glob("*/datasets"))  # nothing pulled
    job.finish()


def test_the_package_runs_as_one_zip_file(world: RuntimeWorld, tmp_path: Path) -> None:
    """As it is shipped to cluster nodes: the package's files and a __main__ in a zipapp,
    run by a python3 that has grpcio but not trainyard."""
    from trainyard.executors.runtime_bundle import runtime_bundle

    job = running(world, "zipped")
    bundle = runtime_bundle()
    pyz = tmp_path / bundle.name
    pyz.write_bytes(bundle.data)
    command = ("from trainyard import runtime; runtime.log_metric(step=1, x=2.0); "
               "print('zipped')")
    done = subprocess.run(
        [sys.executable, "-I", str(pyz), "run", "--service", address(world), "--cache-dir",
         str(tmp_path / "cache"), "--", sys.executable, "-c", command],
        env={"PATH": os.environ["PATH"], "TRAINYARD_JOB_TOKEN": job.token,
             },  # the job imports trainyard.runtime from the zip: the agent offers it
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert job.log()[0] == "zipped"
    assert job.metrics() == ['{"step":1,"x":2.0}']
    job.finish()
    port = subprocess.run([sys.executable, "-I", str(pyz), "free-port"], capture_output=True,
                          text=True, timeout=60, check=True)
    assert int(port.stdout) > 0


def test_the_service_is_reached_over_tls_with_its_ca(tmp_path: Path) -> None:
    from trainyard.auth.certs import generate_self_signed

    pair = generate_self_signed(tmp_path / "tls", hosts=("127.0.0.1",))
    with contextmanager(runtime_world)(tmp_path / "server",
                                       tls=(pair.cert, pair.key)) as tls_world:
        job = running(tls_world, "over-tls")
        service = address(tls_world)
        code, _, err = finish(agent(service, tmp_path, "print('over tls')", "--tls-ca",
                                    str(pair.cert), token=job.token))
        assert code == 0, err
        assert job.log()[0] == "over tls"
        # Or from a variable, as a pod is given it.
        from_env = running(tls_world, "ca-from-env")
        code, _, err = finish(agent(service, tmp_path, "print('ca from env')", "--tls-ca",
                                    "env:THE_CA", token=from_env.token,
                                    env={"THE_CA": pair.cert.read_text()}))
        assert code == 0, err
        assert from_env.log()[0] == "ca from env"
        from_env.finish()
        # Without the CA the handshake fails: retried as UNAVAILABLE, then given up.
        code, _, err = finish(agent(service, tmp_path, "print('x')", "--retry-for", "1",
                                    token=job.token))
        assert code == 70 and "did not answer" in err
        code, _, err = finish(agent(service, tmp_path, "print('x')", "--tls-ca",
                                    str(tmp_path / "missing.pem"), token=job.token))
        assert code == 70 and "cannot read the CA certificate" in err
        job.finish()
