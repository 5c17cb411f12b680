"""Inputs at their limits over gRPC, sent raw (past the SDK's own checks): the largest and
smallest integers each field takes, empty and 1 MB strings, every Unicode class in names
and labels, 10,000 hyperparameters, NaN where a number is asked. Each gets an answer, OK or
INVALID_ARGUMENT naming its field, never INTERNAL; a refusal stores nothing. And the caps
of one attempt: its log cut with a note, its metric points past the cap dropped and counted
on its run."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import grpc
import pytest

from tests.liveserver import FAST, wait_for
from trainyard.domain.log_cap import cut_note
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

I32, I64 = (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1)
MB = "x" * (1 << 20)
# Combining marks, right-to-left, emoji (with a joiner), zero-width, control characters,
# and the private use area: every class a name or label may meet.
UNICODE = ["e\u0301\u0302", "\u05e9\u05dc\u05d5\u05dd\u202e", "\U0001f469\u200d\U0001f52c",
           "a\u200bb\ufeff", "a\x01b\x1b[31m", "\t\n\r", "\ue000\U0010fffd", "\u0000"]
LOG_CAP, POINT_CAP = 300, 4


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrainyardServer]:
    tmp = tmp_path_factory.mktemp("limits")
    srv = TrainyardServer(ServerConfig(data_dir=tmp / "data", port=0,
                                       tracker=replace(FAST, max_concurrent=4),
                                       max_log_bytes=LOG_CAP, max_metric_points=POINT_CAP))
    srv.start()
    yield srv
    srv.stop(grace=0)


@pytest.fixture(scope="module")
def stub(server: TrainyardServer) -> Iterator[pb_grpc.TrainingServiceStub]:
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}", options=[
        ("grpc.max_send_message_length", 8 << 20)])
    yield pb_grpc.TrainingServiceStub(channel)
    channel.close()


def stored(server: TrainyardServer) -> int:
    return len(server.jobs.in_states(list(JobState)))


def answered(server: TrainyardServer, call: Callable[[], Any], field: str) -> bool:
    """Call; True if it was taken. A refusal is INVALID_ARGUMENT naming `field` (or the
    transport's RESOURCE_EXHAUSTED for a message past its size), and stores nothing."""
    before = stored(server)
    try:
        call()
        return True
    except grpc.RpcError as exc:
        assert exc.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                              grpc.StatusCode.RESOURCE_EXHAUSTED), (exc.code(), exc.details())
        if exc.code() is grpc.StatusCode.INVALID_ARGUMENT:
            assert field in exc.details(), exc.details()
        assert stored(server) == before
        return False


def train(**fields: Any) -> pb.TrainRequest:
    return pb.TrainRequest(**{"name": "limit", "command": "true", "queue": "default",
                              **fields})


TRAIN_CASES: list[tuple[str, dict[str, Any]]] = [
    *[("priority", {"priority": v}) for v in I32],
    *[("workers", {"workers": v}) for v in (*I32, 0)],
    *[("pipeline_max_parallel", {"pipeline": "p", "pipeline_max_parallel": v}) for v in I32],
    *[("resources.memory_mb", {"resources": pb.Resources(memory_mb=v)}) for v in I64],
    *[("resources.gpus", {"resources": pb.Resources(gpus=v)}) for v in I32],
    *[("resources.cpus", {"resources": pb.Resources(cpus=v)})
      for v in (float("nan"), float("inf"), -float("inf"), 1e308, 5e-324, -0.0)],
    ("name", {"name": ""}), ("name", {"name": MB}), ("command", {"command": MB}),
    ("image", {"image": MB}), ("queue", {"queue": MB}), ("git_commit", {"git_commit": MB}),
    ("model_name", {"model_name": MB}), ("framework", {"framework": MB}),
    ("client_request_id", {"client_request_id": MB}),
    ("dataset", {"dataset": pb.DatasetRef(name=MB, version=MB)}),
    ("labels", {"labels": {MB[:1000]: "v"}}), ("labels", {"labels": {"k": MB}}),
    ("hyperparameters", {"hyperparameters": {f"P{i}": str(i) for i in range(10_000)}}),
    ("hyperparameters", {"hyperparameters": {"P": MB}}),
    *[("name", {"name": f"n{text}"}) for text in UNICODE],
    *[("labels", {"labels": {f"k{text}": f"v{text}"}}) for text in UNICODE],
    *[("hyperparameters", {"hyperparameters": {f"K{text}": text}}) for text in UNICODE],
]


@pytest.mark.parametrize(("field", "fields"), TRAIN_CASES,
                         ids=[f"{f}-{i}" for i, (f, _) in enumerate(TRAIN_CASES)])
def test_a_submit_at_its_limits_is_answered(server: TrainyardServer,
                                             stub: pb_grpc.TrainingServiceStub, field: str,
                                             fields: dict[str, Any]) -> None:
    answered(server, lambda: stub.Train(train(**fields), timeout=30), field.split(".")[0])


def sweep(**fields: Any) -> pb.SweepRequest:
    return pb.SweepRequest(**{"template": train(), "search": "random", "trials": 2,
                              "parameters": [pb.SweepParameter(name="lr", min=0, max=1)],
                              **fields})


OTHER_CASES: list[tuple[str, str, Any]] = [
    *[("trials", "SubmitSweep", sweep(trials=v)) for v in I32],
    *[("seed", "SubmitSweep", sweep(seed=v)) for v in I64],
    *[("max_parallel", "SubmitSweep", sweep(max_parallel=v)) for v in I32],
    *[("parameters", "SubmitSweep", sweep(parameters=[pb.SweepParameter(
        name="lr", min=low, max=high)]))
      for low, high in ((float("nan"), 1.0), (0.0, float("inf")), (-1e308, 1e308))],
    *[("page_size", "ListJobs", pb.ListJobsRequest(page_size=v)) for v in I32],
    *[("page_size", "ListRuns", pb.ListRunsRequest(page_size=v)) for v in I32],
    ("metrics", "ListRuns", pb.ListRunsRequest(metrics=[pb.MetricThreshold(
        key="acc", op=">=", value=float("nan"))])),
    *[("offset", "StreamLogs", pb.StreamLogsRequest(job_id="nope", offset=v)) for v in I64],
    *[("version", "SetModelAlias", pb.SetModelAliasRequest(name="m", alias="a", version=v))
      for v in I32],
    ("job_id", "GetTrainingStatus", pb.GetTrainingStatusRequest(job_id=MB)),
    ("run_id", "GetRun", pb.GetRunRequest(run_id=MB)),
    ("name", "GetModel", pb.GetModelRequest(name=MB)),
    ("run_ids", "CompareRuns", pb.CompareRunsRequest(run_ids=["r"] * 10_000)),
]


@pytest.mark.parametrize(("field", "rpc", "request_"), OTHER_CASES,
                         ids=[f"{r}-{f}-{i}" for i, (f, r, _) in enumerate(OTHER_CASES)])
def test_other_requests_at_their_limits_are_answered(
        server: TrainyardServer, stub: pb_grpc.TrainingServiceStub, field: str, rpc: str,
        request_: Any) -> None:
    method = getattr(stub, rpc)

    def call() -> Any:
        reply = method(request_, timeout=30)
        return list(reply) if rpc == "StreamLogs" else reply
    answered(server, call, field)


def test_an_admin_request_at_its_limits_is_answered(server: TrainyardServer) -> None:
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    admin = pb_grpc.AdminServiceStub(channel)
    for value in I32:
        answered(server, lambda v=value: admin.ListAudit(pb.ListAuditRequest(limit=v)),
                 "limit")
    for value in I64:
        answered(server, lambda v=value: admin.CreateToken(pb.CreateTokenRequest(
            user="nobody", expires_in_seconds=v)), "expires_in_seconds")
    channel.close()


def test_an_attempts_log_is_cut_and_its_points_past_the_cap_counted(
        server: TrainyardServer, stub: pb_grpc.TrainingServiceStub) -> None:
    command = ("head -c 2000 /dev/zero | tr '\\0' y; "
               'for i in 1 2 3 4 5 6 7 8 9 10; do echo "{\\"step\\": $i, \\"a\\": $i}" '
               '>> "$METRICS_PATH"; done')
    job_id = stub.Train(train(name="caps", command=command), timeout=10).job_id
    wait_for(server, job_id, {JobState.SUCCEEDED})
    log = b"".join(chunk.data for chunk in stub.StreamLogs(
        pb.StreamLogsRequest(job_id=job_id), timeout=10))
    assert log == b"y" * LOG_CAP + cut_note(LOG_CAP)
    deadline = time.monotonic() + 10
    while True:
        run = stub.GetRun(pb.GetRunRequest(run_id=job_id), timeout=10)
        if "dropped" in run.message or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert "6 metric points past the server's cap were dropped" in run.message
    assert [point.step for series in run.series for point in series.points] == [1, 2, 3, 4]
