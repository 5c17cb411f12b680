"""The gRPC API on a real server over loopback, on SQLite and PostgreSQL."""

import time
from pathlib import Path

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from trainyard.client import Client, TrainSpec, TrainyardError
from trainyard.server.assembly import TrainyardServer, host_gpu_ids
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc


def wait_final(client: Client, job_id: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = client.status(job_id)
        if st.is_final:
            return st.state
        time.sleep(0.05)
    raise AssertionError(f"{job_id} not final")


def stub(server: TrainyardServer) -> pb_grpc.TrainingServiceStub:
    return pb_grpc.TrainingServiceStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))


def total_jobs(client: Client) -> int:
    return len(client.list_jobs(page_size=1000)[0])


def test_train_and_status_end_to_end(client: Client, tmp_path: Path) -> None:
    data = tmp_path / "ds"
    data.mkdir()
    (data / "rows.csv").write_text("1\n2\n")
    ds = client.register_dataset("rows", str(data))
    assert ds.created and len(ds.version) == 64 and ds.file_count == 1
    spec = TrainSpec(
        name="e2e", dataset=f"rows:{ds.version}", hyperparameters={"LR": "0.5"},
        labels={"team": "vision"}, framework="pytorch",
        command='wc -l < "$TRAINING_DATA_PATH/rows.csv"; '
                'echo "{\\"step\\": 1, \\"loss\\": $LR}" >> "$METRICS_PATH"; '
                'echo w > "$MODEL_SAVE_PATH/w"',
    )
    job_id = client.train(spec).job_id
    assert wait_final(client, job_id) == "SUCCEEDED"
    st = client.status(job_id)
    assert st.exit_code == 0 and st.metrics == {"loss": {"value": 0.5, "step": 1}}
    assert st.model is not None and st.model["model_name"] == "e2e"
    assert st.spec["dataset"] == {"name": "rows", "version": ds.version}
    assert st.spec["labels"] == {"team": "vision"}
    assert st.spec["framework"] == "pytorch"
    assert [t.to_state for t in st.transitions] == ["WAITING", "LAUNCHING", "RUNNING",
                                                    "SUCCEEDED"]
    assert all(t.time for t in st.transitions)
    assert b"".join(client.logs(job_id)) == b"2\n"


def test_retried_submit_returns_the_same_job(client: Client) -> None:
    spec = TrainSpec(name="idem", command="true", client_request_id="abc-123")
    first = client.train(spec)
    second = client.train(spec)
    assert second.job_id == first.job_id and second.existing and not first.existing
    assert total_jobs(client) == 1


BAD_REQUESTS = [
    ("name", pb.TrainRequest(name="", command="true")),
    ("command", pb.TrainRequest(name="x", command="")),
    ("resources.cpus", pb.TrainRequest(name="x", command="true",
                                       resources=pb.Resources(cpus=-2))),
    ("resources.memory_mb", pb.TrainRequest(name="x", command="true",
                                            resources=pb.Resources(memory_mb=-1))),
    ("resources.gpus", pb.TrainRequest(name="x", command="true",
                                       resources=pb.Resources(gpus=-1))),
    ("resources.cpus", pb.TrainRequest(name="x", command="true",
                                       resources=pb.Resources(cpus=1e9))),
    ("resources.memory_mb", pb.TrainRequest(name="x", command="true",
                                            resources=pb.Resources(memory_mb=2**50))),
    ("resources.gpus", pb.TrainRequest(name="x", command="true",
                                       resources=pb.Resources(gpus=100000))),
    ("resources.gpus", pb.TrainRequest(name="x", command="true",
                                       resources=pb.Resources(gpus=len(host_gpu_ids()) + 1))),
    ("dataset", pb.TrainRequest(name="x", command="true",
                                dataset=pb.DatasetRef(name="nope", version="a" * 64))),
    ("dataset.version", pb.TrainRequest(name="x", command="true",
                                        dataset=pb.DatasetRef(name="nope", version="v1"))),
    ("hyperparameters.2fast", pb.TrainRequest(name="x", command="true",
                                              hyperparameters={"2fast": "1"})),
    ("hyperparameters.METRICS_PATH", pb.TrainRequest(name="x", command="true",
                                                     hyperparameters={"METRICS_PATH": "/"})),
    ("image", pb.TrainRequest(name="x", command="true", image="busybox")),
    ("hyperparameters", pb.TrainRequest(name="x", command="true",
                                        hyperparameters={f"P{i}": "v" * 16000
                                                         for i in range(10)})),
    ("client_request_id", pb.TrainRequest(name="x", command="true",
                                          client_request_id="a\x00b")),
]


@pytest.mark.parametrize(("field", "request_"), BAD_REQUESTS,
                         ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_REQUESTS)])
def test_bad_specs_are_rejected_naming_the_field_and_store_nothing(
    server: TrainyardServer, client: Client, field: str, request_: pb.TrainRequest
) -> None:
    with pytest.raises(grpc.RpcError) as info:
        stub(server).Train(request_, timeout=10)
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details().startswith(f"{field}:")
    assert total_jobs(client) == 0


@pytest.mark.parametrize("job_id", ["no-such-job", "x" * 300, "a\x00b"])
def test_unknown_job_is_not_found(client: Client, job_id: str) -> None:
    for call in (client.status, client.cancel, lambda j: list(client.watch(j)),
                 lambda j: list(client.logs(j))):
        with pytest.raises(TrainyardError) as info:
            call(job_id)
        assert info.value.code == "NOT_FOUND" and "not found" in info.value.message


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"page_token": "9" * 40}, "page_token"), ({"page_token": "-1"}, "page_token"),
    ({"queue": "a\x00"}, "queue"), ({"labels": {"k": "a\x00"}}, "labels.k"),
])
def test_bad_list_filters_are_invalid_arguments(client: Client, kwargs: dict[str, object],
                                                field: str) -> None:
    with pytest.raises(TrainyardError) as info:
        client.list_jobs(**kwargs)  # type: ignore[arg-type]
    assert info.value.code == "INVALID_ARGUMENT" and info.value.message.startswith(field)


def test_cancelling_a_finished_job_is_a_failed_precondition(client: Client) -> None:
    job_id = client.train(TrainSpec(name="quick", command="true")).job_id
    assert wait_final(client, job_id) == "SUCCEEDED"
    with pytest.raises(TrainyardError) as info:
        client.cancel(job_id)
    assert info.value.code == "FAILED_PRECONDITION"
    assert client.status(job_id).state == "SUCCEEDED"


def test_waiting_jobs_show_position_and_reason_and_cancel_at_once(client: Client) -> None:
    blockers = [client.train(TrainSpec(name=f"b{i}", command="sleep 30")).job_id
                for i in range(2)]
    waiting = [client.train(TrainSpec(name=f"w{i}", command="true")).job_id for i in range(2)]
    deadline = time.monotonic() + 10
    while client.status(waiting[1]).pending_reason is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    st = client.status(waiting[1])
    assert st.state == "WAITING" and st.queue_position == 2
    assert st.pending_reason is not None
    assert st.pending_reason["code"] == "GLOBAL_CONCURRENCY_LIMIT"
    assert "all 2 job slots are in use" in st.pending_reason["message"]
    assert client.cancel(waiting[0]) == "CANCELLED"
    assert client.status(waiting[1]).queue_position == 1
    for job_id in blockers:
        assert client.cancel(job_id) == "RUNNING"
    assert [wait_final(client, j) for j in blockers] == ["CANCELLED", "CANCELLED"]
    assert wait_final(client, waiting[1]) == "SUCCEEDED"


def test_list_filters_and_pages(client: Client) -> None:
    ids = [client.train(TrainSpec(name=f"l{i}", command="true", queue="q1" if i < 3 else "q2",
                                  labels={"n": str(i)})).job_id for i in range(5)]
    page, token = client.list_jobs(page_size=2)
    assert [j.job_id for j in page] == ids[::-1][:2] and token
    rest, end = client.list_jobs(page_size=10, page_token=token)
    assert [j.job_id for j in rest] == ids[::-1][2:] and end == ""
    assert {j.job_id for j in client.list_jobs(queue="q1")[0]} == set(ids[:3])
    assert [j.job_id for j in client.list_jobs(labels={"n": "3"})[0]] == [ids[3]]
    for job_id in ids:
        wait_final(client, job_id)
    assert len(client.list_jobs(states=["SUCCEEDED"])[0]) == 5
    assert client.list_jobs(states=["WAITING"])[0] == []
    with pytest.raises(TrainyardError) as info:
        client.list_jobs(page_token="garbage")
    assert info.value.code == "INVALID_ARGUMENT" and "page_token" in info.value.message
    with pytest.raises(TrainyardError) as info:
        client.list_jobs(page_size=100000)
    assert "page_size" in info.value.message


def test_watch_streams_every_change_until_final(client: Client) -> None:
    job_id = client.train(TrainSpec(name="watched", command="sleep 0.3")).job_id
    states = [t.to_state for t in client.watch(job_id)]
    assert states == ["WAITING", "LAUNCHING", "RUNNING", "SUCCEEDED"]


def test_logs_follow_until_the_job_ends(client: Client) -> None:
    job_id = client.train(TrainSpec(
        name="chatty", command="for i in 1 2 3 4 5; do echo line $i; sleep 0.1; done")).job_id
    text = b"".join(client.logs(job_id, follow=True)).decode()
    assert text.splitlines() == [f"line {i}" for i in range(1, 6)]
    assert client.status(job_id).state == "SUCCEEDED"


def test_dataset_registration_errors_store_nothing(client: Client, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [("", str(empty), "name"), ("ok", str(tmp_path / "missing"), "path"),
             ("bad name", str(empty), "name"), ("empty", str(empty), "path"),
             ("relative", "some/dir", "path"), ("inside", str(tmp_path / "data"), "path")]
    for name, path, field in cases:
        with pytest.raises(TrainyardError) as info:
            client.register_dataset(name, path)
        assert info.value.code == "INVALID_ARGUMENT"
        assert info.value.message.startswith(f"{field}:")
    assert client.list_datasets() == []


def test_same_content_registers_once(client: Client, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("x")
    first = client.register_dataset("d", str(tmp_path / "a"))
    again = client.register_dataset("d", str(tmp_path / "a"))
    assert first.version == again.version and first.created and not again.created
    assert [d.version for d in client.list_datasets("d")] == [first.version]


def test_health_and_reflection(server: TrainyardServer, client: Client) -> None:
    assert client.health() == "SERVING"
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    refl = reflection_pb2_grpc.ServerReflectionStub(channel)
    responses = refl.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
    names = {s.name for r in responses for s in r.list_services_response.service}
    assert {"trainyard.v1.TrainingService", "grpc.health.v1.Health"} <= names
