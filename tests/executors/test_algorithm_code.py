"""One registered version of a code directory, run as a local process and as a container of
its image by a real server: the job runs in CODE_PATH either way, the container cannot write
there, and both make the same model bytes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tests.algorithm_code import code_chunks, write_tree
from tests.dockerenv import Engine, engine, final, remove_containers  # noqa: F401
from tests.services.conftest import ROOT
from trainyard.domain.algorithms import UNSET_RESOURCES
from trainyard.domain.spec import AlgorithmRef, DatasetRef, JobSpec
from trainyard.domain.states import JobState
from trainyard.executors.docker import DockerConfig
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.services.algorithms import Registration
from trainyard.services.images import BASE_IMAGE
from trainyard.store.model_registry import ModelStore
from trainyard.tracker import TrackerConfig

# Standard library only, so that the host's python3 and the base image's run it alike.
TRAIN_PY = '''\
import hashlib, json, os, pathlib
code = os.environ["CODE_PATH"]
assert os.path.realpath(os.getcwd()) == os.path.realpath(code), (os.getcwd(), code)
writable = -1  # not tried on the host: file modes do not stop a job that runs as root
if code == "/code":
    try:
        pathlib.Path(code, "scribble").write_text("x")
        writable = 1
    except OSError:
        writable = 0
params = json.loads(os.environ["HYPERPARAMETERS"])
data = pathlib.Path(os.environ["TRAINING_DATA_PATH"], "rows.csv").read_bytes()
weights = hashlib.sha256(data + json.dumps(params, sort_keys=True).encode()).hexdigest()
pathlib.Path(os.environ["MODEL_SAVE_PATH"], "weights.txt").write_text(weights + "\\n")
with open(os.environ["METRICS_PATH"], "a") as out:
    out.write(json.dumps({"step": 1, "code_writable": writable}) + "\\n")
'''

POLICY = """\
max_running = 4

[pools.host]
executor = "local"
cpus = 4
memory_mb = 8192
max_jobs = 2

[pools.box]
executor = "docker"
cpus = 2
memory_mb = 4096
max_jobs = 2

[queues.host]
pools = ["host"]

[queues.box]
pools = ["box"]
"""


def _server(tmp_path: Path) -> TrainyardServer:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    config = ServerConfig(
        data_dir=tmp_path / "data", port=0, policy_file=policy,
        docker=DockerConfig(instance="", cpus=2, memory_mb=4096, max_containers=2),
        tracker=TrackerConfig(max_concurrent=4, cancel_grace=2.0, active_interval=0.2))
    server = TrainyardServer(config)
    server.start()
    return server


def test_one_version_runs_in_code_path_locally_and_in_a_container_with_the_same_bytes(
        engine: Engine, tmp_path: Path) -> None:  # noqa: F811
    server = _server(tmp_path)
    try:
        server.access.bootstrap("root")
        with tempfile.TemporaryDirectory() as tmp:
            code = write_tree(Path(tmp), {"train.py": TRAIN_PY})
            version, _ = server.services.algorithms.register(
                ROOT, Registration(name="hashy", code=True, image=BASE_IMAGE,
                                   command="python3 train.py",
                                   hyperparameters={"SEED": "7"}), code_chunks(code))
        data = write_tree(tmp_path / "rows", {"rows.csv": "1,2\n3,4\n"})
        dataset, _ = server.services.datasets.register(ROOT, "rows", str(data))
        jobs = {}
        for queue in ("host", "box"):
            spec = JobSpec(name=f"on-{queue}", queue=queue, algorithm=AlgorithmRef("hashy"),
                           dataset=DatasetRef("rows", dataset.version),
                           hyperparameters={"LR": "0.1"}, resources=UNSET_RESOURCES)
            jobs[queue], _ = server.services.jobs.train(ROOT, spec)
        ended = {queue: final(server, job_id, timeout=120) for queue, job_id in jobs.items()}
        for queue, job in ended.items():
            assert job.state is JobState.SUCCEEDED, (queue, job.message)
            assert job.spec.algorithm == AlgorithmRef("hashy", version.version)
            assert job.spec.code_hash == version.code_hash
        assert (ended["host"].kind, ended["box"].kind) == ("local", "docker")
        models = ModelStore(server.db)
        made = {queue: models.for_job(job_id) for queue, job_id in jobs.items()}
        assert made["host"] is not None and made["box"] is not None
        assert made["host"].content_hash == made["box"].content_hash
        files = {queue: (Path(server.workspace.artifacts_dir / m.content_hash) / "weights.txt")
                 .read_bytes() for queue, m in made.items() if m is not None}
        assert files["host"] == files["box"] and len(files["host"]) == 65
        # The container's CODE_PATH is mounted read-only; the stored directory is unchanged.
        box = server.workspace.attempt(jobs["box"], 1).metrics_path.read_text().splitlines()
        assert json.loads(box[-1])["code_writable"] == 0
        stored = server.workspace.code_of(version.code_hash)
        assert (stored / "train.py").read_text() == TRAIN_PY
        assert not (stored / "scribble").exists()
    finally:
        server.stop(grace=0)
        remove_containers(server.workspace.data_dir)
