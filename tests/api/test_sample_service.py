"""The sample training service's contract, spoken by a client built here from a descriptor of
its messages (not from the project's generated code), against a real server with a real
Docker engine: a request for a registered algorithm and dataset version waits with its place
in the queue, goes queuing → launch → running → succeed, and its run and model are then found
through Trainyard's own API. Bad requests are INVALID_ARGUMENT naming the field."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.dockerenv import Engine, engine, remove_containers  # noqa: F401
from tests.services.conftest import ROOT
from trainyard.client import Client
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.executors.docker import DockerConfig
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.services.algorithms import Registration
from trainyard.services.images import BASE_IMAGE
from trainyard.store.jobs import JobFilter
from trainyard.tracker import TrackerConfig

F = descriptor_pb2.FieldDescriptorProto

# The sample's trainer: its four parameters in, a model file and a metric out.
TRAINER = (
    "import json, os, pathlib, time\n"
    "p = json.loads(os.environ['HYPERPARAMETERS'])\n"
    "time.sleep(1)\n"
    "pathlib.Path(os.environ['MODEL_SAVE_PATH'], 'model.json').write_text("
    "json.dumps(p, sort_keys=True))\n"
    "open(os.environ['METRICS_PATH'], 'a').write(json.dumps("
    "{'step': int(p['epochs']), 'accuracy': 0.5 + float(p['learning_rate'])}) + '\\n')\n"
)
PARAMETERS = {"learning_rate": "0.01", "epochs": "3", "batch_size": "32",
              "fc_layer_size": "128"}


def _field(name: str, number: int, kind: int, type_name: str = "",
           repeated: bool = False) -> F:
    field = F(name=name, number=number, type=kind,
              label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
    if type_name:
        field.type_name = type_name
    return field


def sample_file() -> descriptor_pb2.FileDescriptorProto:
    """The sample contract, as its own .proto declares it."""
    file = descriptor_pb2.FileDescriptorProto(name="sample_client.proto", package="training",
                                              syntax="proto3")
    status = file.enum_type.add(name="TrainingStatus")
    for number, name in enumerate(("queuing", "launch", "running", "succeed", "failure")):
        status.value.add(name=name, number=number)
    meta = file.message_type.add(name="TrainingJobMetadata")
    for number, name in enumerate(("algorithm", "dataset_id", "name",
                                   "train_data_version_hash"), start=1):
        meta.field.append(_field(name, number, F.TYPE_STRING))
    entry = meta.nested_type.add(name="ParametersEntry")
    entry.options.map_entry = True
    entry.field.append(_field("key", 1, F.TYPE_STRING))
    entry.field.append(_field("value", 2, F.TYPE_STRING))
    meta.field.append(_field("parameters", 5, F.TYPE_MESSAGE,
                             ".training.TrainingJobMetadata.ParametersEntry", repeated=True))
    file.message_type.add(name="TrainRequest").field.append(
        _field("metadata", 1, F.TYPE_MESSAGE, ".training.TrainingJobMetadata"))
    file.message_type.add(name="TrainResponse").field.append(_field("job_id", 1, F.TYPE_INT32))
    file.message_type.add(name="GetTrainingStatusRequest").field.append(
        _field("job_id", 1, F.TYPE_INT32))
    response = file.message_type.add(name="GetTrainingStatusResponse")
    response.field.extend([
        _field("status", 1, F.TYPE_ENUM, ".training.TrainingStatus"),
        _field("job_id", 2, F.TYPE_INT32), _field("message", 3, F.TYPE_STRING),
        _field("metadata", 4, F.TYPE_MESSAGE, ".training.TrainingJobMetadata"),
        _field("positionInQueue", 5, F.TYPE_INT32)])
    return file


@dataclass
class SampleClient:
    """What an existing client of the sample service has: its messages and two calls."""

    messages: dict[str, Any]
    train: Callable[..., Any]
    status: Callable[..., Any]
    status_name: Callable[[int], str]

    @classmethod
    def over(cls, channel: grpc.Channel) -> SampleClient:
        pool = descriptor_pool.DescriptorPool()  # its own: never the project's generated code
        pool.Add(sample_file())
        described = pool.FindFileByName("sample_client.proto")
        messages = {name: message_factory.GetMessageClass(d)
                    for name, d in described.message_types_by_name.items()}
        enum = described.enum_types_by_name["TrainingStatus"]

        def call(method: str, request: str, response: str) -> Callable[..., Any]:
            return channel.unary_unary(
                f"/training.TrainingService/{method}",
                request_serializer=messages[request].SerializeToString,
                response_deserializer=messages[response].FromString)

        return cls(messages, call("Train", "TrainRequest", "TrainResponse"),
                   call("GetTrainingStatus", "GetTrainingStatusRequest",
                        "GetTrainingStatusResponse"),
                   lambda number: enum.values_by_number[number].name)

    def request(self, **metadata: Any) -> Any:
        return self.messages["TrainRequest"](
            metadata=self.messages["TrainingJobMetadata"](**metadata))

    def ask(self, job_id: int) -> Any:
        return self.status(self.messages["GetTrainingStatusRequest"](job_id=job_id),
                           timeout=10)


@pytest.fixture
def server(engine: Engine, tmp_path: Path) -> Iterator[TrainyardServer]:  # noqa: F811
    # One job at a time, so the sample's job waits behind another with its place shown.
    srv = TrainyardServer(ServerConfig(
        data_dir=tmp_path / "data", port=0,
        docker=DockerConfig(instance="", cpus=2, memory_mb=4096, max_containers=2),
        tracker=TrackerConfig(max_concurrent=1, cancel_grace=1.0, active_interval=0.05,
                              idle_interval=0.1)))
    srv.start()
    try:
        yield srv
    finally:
        srv.stop(grace=0)
        remove_containers(srv.workspace.data_dir)


def _registered(server: TrainyardServer, tmp_path: Path) -> tuple[str, str]:
    """A dataset version, and an algorithm of the base image running the sample trainer,
    with a production alias on its first version (the second is newer, and not it)."""
    rows = tmp_path / "rows"
    rows.mkdir()
    (rows / "train.csv").write_text("1,2\n")
    dataset, _ = server.services.datasets.register(ROOT, "mnist", str(rows))
    algorithms = server.services.algorithms
    command = f"python3 -c {shlex.quote(TRAINER)}"
    first, _ = algorithms.register(ROOT, Registration(name="cnn", image=BASE_IMAGE,
                                                      command=command), iter(()))
    algorithms.set_alias(ROOT, "cnn", "production", first.version)
    algorithms.register(ROOT, Registration(name="cnn", image=BASE_IMAGE,
                                           command=command + " # newer"), iter(()))
    return dataset.version, first.image_id


def _job_count(server: TrainyardServer) -> int:
    return len(server.jobs.list(JobFilter(), page_size=1000)[0])


def test_the_sample_contract_from_queuing_to_succeed_and_its_run_and_model(
        server: TrainyardServer, tmp_path: Path) -> None:
    version, image_id = _registered(server, tmp_path)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    client = SampleClient.over(channel)
    # A job ahead of it holds the one slot until it is cancelled.
    blocker, _ = server.services.jobs.train(ROOT, JobSpec(name="ahead", command="sleep 60"))
    deadline = time.monotonic() + 30
    while server.jobs.get(blocker).state is not JobState.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    reply = client.train(client.request(algorithm="cnn", dataset_id="mnist", name="sample-cnn",
                                        train_data_version_hash=version,
                                        parameters=PARAMETERS), timeout=10)
    number = reply.job_id
    assert number >= 1
    waiting = client.ask(number)
    assert client.status_name(waiting.status) == "queuing" and waiting.positionInQueue == 1
    assert waiting.job_id == number and waiting.metadata.algorithm == "cnn"
    assert dict(waiting.metadata.parameters) == PARAMETERS
    assert (waiting.metadata.dataset_id, waiting.metadata.train_data_version_hash) == \
        ("mnist", version)
    seen = ["queuing"]
    server.services.jobs.cancel(ROOT, blocker)
    deadline = time.monotonic() + 90
    while seen[-1] not in ("succeed", "failure"):
        assert time.monotonic() < deadline, seen
        name = client.status_name(client.ask(number).status)
        if name != seen[-1]:
            seen.append(name)
        time.sleep(0.005)
    final = client.ask(number)
    assert seen == ["queuing", "launch", "running", "succeed"], (seen, final.message)
    assert final.positionInQueue == 0
    channel.close()

    # Through Trainyard's own API: the job behind the number, its run and model.
    with Client(f"127.0.0.1:{server.port}") as own:
        jobs, _ = own.list_jobs(states=["SUCCEEDED"])
        job_id = next(j.job_id for j in jobs if j.name == "sample-cnn")
        status = own.status(job_id)
        assert status.sample_job_id == number
        assert status.spec["algorithm"] == "cnn:1"  # production, not the newer version 2
        assert status.spec["image"] == image_id
        assert status.spec["hyperparameters"] == PARAMETERS
        run = own.get_run(f"{job_id}-1")
        assert run["code"]["algorithm"] == {"name": "cnn", "version": 1, "alias": ""}
        assert run["metrics"]["accuracy"]["value"] == pytest.approx(0.51)
        model = status.model
        assert model is not None
        lineage = own.model_lineage(f"{model['model_name']}:{model['version']}")
        assert lineage["algorithm"]["name"] == "cnn" and lineage["algorithm"]["version"] == 1
        stored = Path(server.workspace.artifacts_dir / model["content_hash"] / "model.json")
        assert json.loads(stored.read_text()) == PARAMETERS


def test_a_cancelled_job_is_a_failure_that_says_it_was_cancelled(
        server: TrainyardServer, tmp_path: Path) -> None:
    version, _ = _registered(server, tmp_path)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    client = SampleClient.over(channel)
    blocker, _ = server.services.jobs.train(ROOT, JobSpec(name="ahead", command="sleep 60"))
    number = client.train(client.request(algorithm="cnn", dataset_id="mnist",
                                         train_data_version_hash=version), timeout=10).job_id
    job_id = server.services.sample.ids.job_of(number)
    assert job_id is not None and server.jobs.get(job_id).spec.name == "cnn"  # the default
    server.services.jobs.cancel(ROOT, job_id)
    answer = client.ask(number)
    assert client.status_name(answer.status) == "failure"
    assert answer.message.startswith("cancelled")
    server.services.jobs.cancel(ROOT, blocker)
    channel.close()


@pytest.mark.parametrize(("change", "field"), [
    ({"algorithm": "nope"}, "metadata.algorithm"),
    ({"algorithm": "bad/name"}, "metadata.algorithm"),
    ({"dataset_id": "unknown"}, "metadata.dataset_id"),
    ({"train_data_version_hash": "0" * 64}, "metadata.train_data_version_hash"),
    ({"train_data_version_hash": "short"}, "metadata.train_data_version_hash"),
    ({"parameters": {"learning-rate": "0.1"}}, "metadata.parameters.learning-rate"),
    ({"parameters": {"HYPERPARAMETERS": "x"}}, "metadata.parameters.HYPERPARAMETERS"),
    ({"name": "no spaces allowed"}, "metadata.name"),
])
def test_bad_requests_are_invalid_argument_naming_the_field_and_store_nothing(
        server: TrainyardServer, tmp_path: Path, change: dict[str, Any], field: str) -> None:
    version, _ = _registered(server, tmp_path)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    client = SampleClient.over(channel)
    fields = {"algorithm": "cnn", "dataset_id": "mnist", "train_data_version_hash": version,
              "parameters": PARAMETERS, **change}
    before = _job_count(server)
    with pytest.raises(grpc.RpcError) as refused:
        client.train(client.request(**fields), timeout=10)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert (refused.value.details() or "").startswith(f"{field}:"), refused.value.details()
    assert _job_count(server) == before
    # An unknown number is NOT_FOUND; no metadata at all names it.
    with pytest.raises(grpc.RpcError) as unknown:
        client.ask(4242)
    assert unknown.value.code() is grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as empty:
        client.train(client.messages["TrainRequest"](), timeout=10)
    assert (empty.value.details() or "").startswith("metadata:")
    channel.close()
