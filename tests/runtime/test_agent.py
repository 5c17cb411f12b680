"""`python3 -m trainyard.runtime run -- COMMAND` end to end: a real agent process running a
real job, against a real gRPC JobRuntime server on loopback (tests/runtime/standin_service)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runtime.standin_service import Served, StandIn, wait_for

SRC = str(Path(__file__).resolve().parents[2] / "src")
TOKEN = "tyjob_job1_1_" + "s" * 43


@pytest.fixture
def service() -> Iterator[Served]:
    served = Served(StandIn(token=TOKEN, dataset={"train.csv": b"1,2\n3,4\n",
                                                  "sub/notes.txt": b"hello"}))
    yield served
    served.close()


def agent(served: Served, cache: Path, job: str, *options: str, token: str = TOKEN,
          env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "trainyard.runtime", "run", "--service", served.address,
            "--cache-dir", str(cache / "{node}"), "--retry-for", "10", "--grace", "2",
            *options, "--", sys.executable, "-c", job]
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": SRC, "PYTHONUNBUFFERED": "1",
                   "TRAINYARD_JOB_TOKEN": token, "JOB_ID": "job1", **(env or {})}
    return subprocess.Popen(argv, env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


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


def test_a_job_gets_its_dataset_and_its_output_arrives_once(service: Served,
                                                             tmp_path: Path) -> None:
    service.servicer.lose_replies = 2  # two pushes applied, their replies lost: resent
    code, out, err = finish(agent(service, tmp_path, TRAIN))
    assert code == 0, err
    standin = service.servicer
    assert standin.lines("log") == [
        "data: ['1,2', '3,4'] hello", "writable: False", "token seen: False", "to stderr",
        "[trainyard runtime] model uploaded: 1 files, 3000000 bytes"]
    assert [json.loads(line) for line in standin.lines("metrics")] == [
        {"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}, {"step": 2, "loss": 1.0 / 3}]
    # The batches whose replies were lost went again from the same line.
    assert len(standin.pushes) >= len({(s, f) for s, _, f, _ in standin.pushes}) + 2
    assert standin.model == {"weights.bin": b"w" * 3_000_000}  # over 1 MiB: several chunks
    assert standin.heartbeats.get(0, 0) >= 1
    assert "data: ['1,2', '3,4'] hello" in out  # echoed for the engine's own log too
    # The dataset sits read-only in the node's cache, by content hash, for the next job.
    digest = standin.dataset_hash.split(":")[1]
    cached = next((tmp_path).glob(f"*/datasets/{digest}"))
    assert (cached / "train.csv").read_bytes() == b"1,2\n3,4\n"
    code, _, err = finish(agent(service, tmp_path, TRAIN))
    assert code == 0, err
    assert standin.dataset_pulls == 1  # the second job reused the node's copy


def test_the_exit_code_passes_through_and_a_failed_job_uploads_no_model(
        service: Served, tmp_path: Path) -> None:
    code, _, err = finish(agent(service, tmp_path, TRAIN, env={"CODE": "3"}))
    assert code == 3, err
    assert service.servicer.model is None
    assert len(service.servicer.lines("metrics")) == 3  # what it wrote still arrived
    killed = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    code, _, _ = finish(agent(service, tmp_path, killed))
    assert code == 128 + signal.SIGKILL


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
        service: Served, tmp_path: Path) -> None:
    standin = service.servicer
    proc = agent(service, tmp_path, CHECKPOINTING)
    # Output reaches the service within a second of being printed.
    wait_for(lambda: "saved" in standin.lines("log"), timeout=20)
    wait_for(lambda: standin.checkpoint == {"state.txt": b"step 1"})
    proc.send_signal(signal.SIGTERM)  # as scancel does: passed on, then the upload
    code, _, err = finish(proc)
    assert code == 0, err
    assert standin.checkpoint == {"state.txt": b"at term"}
    assert standin.checkpoint_uploads == 2
    assert standin.model is not None  # it exited 0
    assert "resumed from: nothing" in standin.lines("log")
    # The next attempt, on another node (another cache), starts from that checkpoint.
    standin.attempt, standin.kept = 2, {}
    proc = agent(service, tmp_path / "other-node", CHECKPOINTING)
    wait_for(lambda: "saved" in standin.lines("log"), timeout=20)
    standin.stop_requested = True  # the service asks it to stop: TERM, as above
    code, _, err = finish(proc)
    assert code == 0, err
    assert standin.lines("log")[0] == "resumed from: at term"
    assert standin.checkpoint == {"state.txt": b"at term"}


def test_a_refused_token_fails_in_one_sentence(service: Served, tmp_path: Path) -> None:
    code, out, err = finish(agent(service, tmp_path, "print('ran')", token="tyjob_forged"))
    assert code == 70
    assert err.strip().splitlines() == [
        "[trainyard runtime] asking for the attempt failed: the service refused the job token "
        "(unknown or expired job token)"]
    assert "ran" not in out
    code, _, err = finish(agent(service, tmp_path, "print('ran')", token=""))
    assert code == 70 and "TRAINYARD_JOB_TOKEN is not set" in err


def test_an_unreachable_service_is_retried_then_given_up_in_one_sentence(
        tmp_path: Path) -> None:
    gone = Served(StandIn(token=TOKEN))
    gone.close()
    proc = agent(gone, tmp_path, "print('ran')", "--retry-for", "1")
    code, _, err = finish(proc)
    assert code == 70
    assert "did not answer for 1 s (UNAVAILABLE" in err and "Traceback" not in err


def test_shared_staging_pushes_only_metrics_and_heartbeats(service: Served,
                                                           tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "data").mkdir(parents=True)
    (shared / "data" / "train.csv").write_text("9\n")
    env = {"TRAINING_DATA_PATH": str(shared / "data"), "MODEL_SAVE_PATH": str(shared / "model"),
           "CHECKPOINT_PATH": str(shared / "checkpoint"),
           # rank 1 of 2 tasks of a Slurm step
           "SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0",
           "TRAINYARD_MASTER_ADDR": "127.0.0.1", "TRAINYARD_MASTER_PORT": "4000",
           "TRAINYARD_WORKER_HOSTS": "127.0.0.1,127.0.0.1"}
    job = '''
import json, os
from trainyard import runtime
print((runtime.data_path() / "train.csv").read_text().strip())
workers = json.loads(os.environ["TF_CONFIG"])["cluster"]["worker"]
print(os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["MASTER_PORT"], workers[1])
runtime.log_metric(step=1, acc=0.5)
(runtime.model_path() / "m").write_text("x")
'''
    code, out, err = finish(agent(service, tmp_path / "cache", job, "--staging", "shared",
                                  env=env))
    assert code == 0, err
    standin = service.servicer
    assert out.splitlines() == ["[rank 1] 9", "[rank 1] 1 2 4000 127.0.0.1:4002"]
    assert standin.lines("metrics", rank=1) == ['{"step":1,"acc":0.5}']
    assert standin.lines("log", rank=1) == [] and standin.heartbeats.get(1, 0) >= 1
    assert standin.model is None and (shared / "model" / "m").read_text() == "x"
    assert standin.dataset_pulls == 0


def test_the_package_runs_as_one_zip_file(service: Served, tmp_path: Path) -> None:
    """As it is shipped to cluster nodes: the package's files and a __main__ in a zipapp,
    run by a python3 that has grpcio but not trainyard."""
    from trainyard.executors.runtime_bundle import runtime_bundle

    bundle = runtime_bundle()
    pyz = tmp_path / bundle.name
    pyz.write_bytes(bundle.data)
    job = "from trainyard import runtime; runtime.log_metric(step=1, x=2.0); print('zipped')"
    done = subprocess.run(
        [sys.executable, "-I", str(pyz), "run", "--service", service.address, "--cache-dir",
         str(tmp_path / "cache"), "--", sys.executable, "-c", job],
        env={"PATH": os.environ["PATH"], "TRAINYARD_JOB_TOKEN": TOKEN,
             },  # the job imports trainyard.runtime from the zip: the agent offers it
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert service.servicer.lines("log")[0] == "zipped"
    assert service.servicer.lines("metrics") == ['{"step":1,"x":2.0}']
    port = subprocess.run([sys.executable, "-I", str(pyz), "free-port"], capture_output=True,
                          text=True, timeout=60, check=True)
    assert int(port.stdout) > 0


def test_the_service_is_reached_over_tls_with_its_ca(tmp_path: Path) -> None:
    from trainyard.auth.certs import generate_self_signed

    pair = generate_self_signed(tmp_path / "tls", hosts=("127.0.0.1",))
    served = Served(StandIn(token=TOKEN), tls=(pair.key.read_bytes(), pair.cert.read_bytes()))
    try:
        code, _, err = finish(agent(served, tmp_path, "print('over tls')", "--tls-ca",
                                    str(pair.cert)))
        assert code == 0, err
        assert served.servicer.lines("log")[0] == "over tls"
        # Without the CA the handshake fails: retried as UNAVAILABLE, then given up.
        code, _, err = finish(agent(served, tmp_path, "print('x')", "--retry-for", "1"))
        assert code == 70 and "did not answer" in err
        code, _, err = finish(agent(served, tmp_path, "print('x')", "--tls-ca",
                                    str(tmp_path / "missing.pem")))
        assert code == 70 and "cannot read the CA certificate" in err
    finally:
        served.close()
