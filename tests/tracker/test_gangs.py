"""Multi-worker jobs on the local executor, through a real server and gRPC: the gang starts
whole or waits whole, its workers find each other, and it ends as one job."""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gangprobe import ranks_seen, rendezvous_probe
from tests.liveserver import live_server, wait_for
from trainyard.client import Client, Resources, TrainSpec, TrainyardError
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer

# One pool of 4 CPUs and six (made-up) GPU ids: the devices are only handed out, not used.
POLICY = """
max_running = 8

[pools.cpu]
cpus = 4
gpu_ids = ["g0", "g1", "g2", "g3", "g4", "g5"]
max_jobs = 4

[queues.default]
pools = ["cpu"]
"""

# Each rank also saves what it heard as a file of the model.
PROBE = rendezvous_probe(then='with open(os.path.join(os.environ["MODEL_SAVE_PATH"], '
                              'f"rank{rank}.txt"), "w") as out:\n    out.write(heard)')


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    with live_server(tmp_path, database_url, POLICY) as srv:
        yield srv


@pytest.fixture
def client(server: TrainyardServer) -> Iterator[Client]:
    with Client(f"127.0.0.1:{server.port}", timeout=20) as c:
        yield c


def wait_file(path: Path, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return path.read_text().strip()


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except FileNotFoundError:
        return True


def log_of(client: Client, job_id: str) -> str:
    return b"".join(client.logs(job_id)).decode()


def test_two_workers_meet_over_loopback_and_each_gets_its_rank_and_gpus(
        client: Client, tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    submitted = client.train(TrainSpec(
        name="pair", command=f"{shlex.quote(sys.executable)} {shlex.quote(str(probe))}",
        workers=2, resources=Resources(cpus=1, gpus=2)))
    status = client.wait(submitted.job_id)
    assert status.state == "SUCCEEDED", (status.message, log_of(client, submitted.job_id))
    assert status.spec["workers"] == 2
    assert len(status.gpu_ids) == 4  # the whole gang's, disjoint slices for its workers
    seen = ranks_seen(log_of(client, submitted.job_id))
    workers = json.loads(seen[0]["TF_CONFIG"])["cluster"]["worker"]
    for rank, env in seen.items():
        assert (env["WORLD_SIZE"], env["RANK"], env["LOCAL_RANK"]) == ("2", str(rank), str(rank))
        assert env["MASTER_ADDR"] == "127.0.0.1"
        assert env["MASTER_PORT"] == seen[0]["MASTER_PORT"]
        assert json.loads(env["TF_CONFIG"]) == {"cluster": {"worker": workers},
                                                "task": {"type": "worker", "index": rank}}
        assert env["CUDA_VISIBLE_DEVICES"] == ",".join(status.gpu_ids[2 * rank:2 * rank + 2])
    # Both workers saved their part: the model holds both files.
    assert status.model is not None and status.model["file_count"] == 2


def test_a_single_worker_job_gets_no_worker_variables(client: Client) -> None:
    job = client.train(TrainSpec(name="alone", command="env"))
    status = client.wait(job.job_id)
    assert status.state == "SUCCEEDED" and status.spec["workers"] == 1
    names = {line.split("=", 1)[0] for line in log_of(client, job.job_id).splitlines()}
    assert not names & {"WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                        "TF_CONFIG"}
    assert "CUDA_VISIBLE_DEVICES" in names and "[rank" not in log_of(client, job.job_id)


def test_a_failing_worker_fails_the_job_and_stops_the_other(
        server: TrainyardServer, client: Client) -> None:
    command = ('if [ "$RANK" = 1 ]; then echo $$ > "$CHECKPOINT_PATH/rank1.pid"; '
               'exec sleep 60; fi; while [ ! -s "$CHECKPOINT_PATH/rank1.pid" ]; do sleep 0.02; '
               'done; echo giving up; exit 3')
    job = client.train(TrainSpec(name="broken", command=command, workers=2))
    status = client.wait(job.job_id)
    assert status.state == "FAILED" and status.exit_code == 3
    assert status.message == "exited with code 3"
    log = log_of(client, job.job_id)
    assert "[rank 0] giving up" in log
    assert "[launcher] rank 0 exited with code 3; stopping the other 1 worker" in log
    pid = int((server.workspace.attempt(job.job_id, 1).checkpoint_dir / "rank1.pid")
              .read_text())
    assert gone(pid)


def test_cancelling_a_gang_stops_every_worker(server: TrainyardServer, client: Client) -> None:
    job = client.train(TrainSpec(name="long", workers=3, command=(
        'echo $$ > "$CHECKPOINT_PATH/$RANK.pid"; exec sleep 60')))
    checkpoint = server.workspace.attempt(job.job_id, 1).checkpoint_dir
    pids = [int(wait_file(checkpoint / f"{rank}.pid")) for rank in range(3)]
    assert not any(gone(pid) for pid in pids)
    client.cancel(job.job_id)
    status = client.wait(job.job_id)
    assert status.state == "CANCELLED"
    assert all(gone(pid) for pid in pids)


def test_a_gang_that_does_not_fit_waits_whole_then_starts_whole(
        server: TrainyardServer, client: Client, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    blocker = client.train(TrainSpec(name="blocker", resources=Resources(cpus=2),
                                     command=f"while [ ! -e {gate} ]; do sleep 0.02; done"))
    wait_for(server, blocker.job_id, {JobState.RUNNING})
    started = tmp_path / "started"
    started.mkdir()
    gang = client.train(TrainSpec(name="gang", workers=3, resources=Resources(cpus=1),
                                  command=f"touch {started}/$RANK; sleep 0.2"))
    deadline = time.monotonic() + 10
    while (status := client.status(gang.job_id)).pending_reason is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    # 3 CPUs at once, with 2 free: no worker may start before all can.
    assert status.state == "WAITING"
    assert status.pending_reason["code"] == "POOL_CAPACITY"
    assert "2 of 4 CPUs free and the job needs 3" in status.pending_reason["message"]
    time.sleep(0.5)
    assert list(started.iterdir()) == [] and client.status(gang.job_id).state == "WAITING"
    gate.touch()
    assert client.wait(gang.job_id).state == "SUCCEEDED"
    assert sorted(p.name for p in started.iterdir()) == ["0", "1", "2"]
    assert client.status(gang.job_id).attempt == 1


def test_a_gang_no_pool_can_hold_is_refused_at_submit(client: Client) -> None:
    with pytest.raises(TrainyardError) as refused:
        client.train(TrainSpec(name="huge", command="true", workers=5,
                               resources=Resources(cpus=1)))
    assert refused.value.code == "INVALID_ARGUMENT"
    assert refused.value.message.startswith(
        "workers: 5 workers × 1 CPUs (resources.cpus) = 5 CPUs is more than the 4 CPUs of "
        "pool 'cpu'")
    with pytest.raises(TrainyardError) as too_many:
        client.train(TrainSpec(name="many", command="true", workers=65))
    assert too_many.value.message.startswith("workers: must be a whole number from 1 to 64")
