"""Multi-worker jobs as one container on the real engine: the gang launcher inside it, the
workers meeting over the container's own loopback (no network), limits for the whole gang."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.dockerenv import TRAINER_IMAGE, Engine, docker_server, engine, final, running, wait_state
from tests.gangprobe import ranks_seen, rendezvous_probe
from trainyard.auth.policy import LOCAL
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import JobSpec, Resources
from trainyard.domain.states import JobState

__all__ = ["engine"]  # the session fixture, imported so pytest finds it here

# Each rank prints what it heard and was told, then waits for the test to let it go.
PROBE = rendezvous_probe(
    extra_vars=("JOB_ID",),
    seen='env["interfaces"] = sorted(l.split(":")[0].strip() '
         'for l in open("/proc/net/dev").readlines()[2:])',
    then='gate = os.path.join(os.environ["CHECKPOINT_PATH"], "go")\n'
         'while not os.path.exists(gate):\n    time.sleep(0.05)')


def wait_log(path: Path, needle: str, count: int, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while (text := path.read_text() if path.exists() else "").count(needle) < count:
        assert time.monotonic() < deadline, f"{needle!r} x{count} not in the log: {text}"
        time.sleep(0.05)
    return text


def test_two_workers_in_one_container_meet_over_its_loopback(engine: Engine,
                                                             tmp_path: Path) -> None:
    gpu_ids = ("g0", "g1", "g2") if engine.gpus else ()
    per_worker = 1 if engine.gpus else 0
    with running(docker_server(tmp_path, cpus=4, memory_mb=4096, gpu_ids=gpu_ids)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(
            name="pair", image=TRAINER_IMAGE, command="python3 - <<'EOF'\n" + PROBE + "\nEOF",
            workers=2, resources=Resources(cpus=1, memory_mb=512, gpus=per_worker)))
        job = wait_state(srv, job_id, {JobState.RUNNING})
        paths = srv.workspace.attempt(job_id, 1)
        log = wait_log(paths.log_path, " SEEN ", 2)
        # One container for the gang, limited as the whole gang, still without a network.
        attrs = engine.client.api.inspect_container(job.handle)
        host = attrs["HostConfig"]
        assert host["NanoCpus"] == 2 * 10**9 and host["Memory"] == 1024 * 1024 * 1024
        assert host["NetworkMode"] == "none"
        if gpu_ids:
            assert len(job.gpu_ids) == 2
            assert host["DeviceRequests"][0]["DeviceIDs"] == list(job.gpu_ids)
        (paths.checkpoint_dir / "go").touch()
        done = final(srv, job_id)
        assert done.state is JobState.SUCCEEDED, done.message
    seen = ranks_seen(log)
    workers = json.loads(seen[0]["TF_CONFIG"])["cluster"]["worker"]
    for rank, env in seen.items():
        assert env["interfaces"] == ["lo"] and env["JOB_ID"] == job_id
        assert (env["WORLD_SIZE"], env["RANK"], env["LOCAL_RANK"]) == ("2", str(rank), str(rank))
        assert env["MASTER_ADDR"] == "127.0.0.1"
        assert env["MASTER_PORT"] == seen[0]["MASTER_PORT"]
        assert json.loads(env["TF_CONFIG"]) == {"cluster": {"worker": workers},
                                                "task": {"type": "worker", "index": rank}}
        # Inside the container the engine numbers the job's devices from 0.
        assert env["CUDA_VISIBLE_DEVICES"] == (str(rank) if gpu_ids else "")


def test_cancelling_a_container_gang_reaches_every_worker(engine: Engine,
                                                          tmp_path: Path) -> None:
    with running(docker_server(tmp_path)) as srv:
        job_id, _ = srv.service.train(LOCAL, JobSpec(
            name="long", image=TRAINER_IMAGE, workers=2, resources=Resources(cpus=0.5),
            command="trap 'echo stopping; exit 0' TERM; echo up; "
                    "while true; do sleep 0.1; done"))
        wait_state(srv, job_id, {JobState.RUNNING})
        log_path = srv.workspace.attempt(job_id, 1).log_path
        wait_log(log_path, "] up", 2)
        srv.service.cancel(LOCAL, job_id)
        # The container's init passes TERM to the launcher, which passes it to each worker.
        job = final(srv, job_id, timeout=30)
        assert job.state is JobState.CANCELLED and job.exit_code == 0, job.message
        log = log_path.read_text()
        assert "[rank 0] stopping" in log and "[rank 1] stopping" in log


def test_a_container_gang_needs_a_command(engine: Engine, tmp_path: Path) -> None:
    with running(docker_server(tmp_path)) as srv, pytest.raises(InvalidArgument) as refused:
        srv.service.train(LOCAL, JobSpec(name="img", image=TRAINER_IMAGE, workers=2))
    assert refused.value.field == "command"
