"""The JSON API at the limits of its inputs, with raw bodies: integers past their field's
range, non-numbers, lone surrogates written as JSON escapes, NUL, 1 MB strings, 10,000
hyperparameters, JSON nested 1,000 deep. Each is answered 201, or 400/422 naming the field
with nothing stored, never a 500. And backpressure: a submit past a policy's cap is 429,
with Retry-After where it is the rate, over HTTP as over gRPC."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from tests.liveserver import wait_for
from tests.web.rest import Rest, job_count
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

POLICY = """
[pools.cpu]
max_jobs = 1
[queues.default]
pools = ["cpu"]
[limits]
{limits}
"""


def start(tmp: Path, limits: str) -> TrainyardServer:
    (tmp / "policy.toml").write_text(POLICY.format(limits=limits))
    srv = TrainyardServer(ServerConfig(data_dir=tmp / "data", port=0, http_port=0,
                                       policy_file=tmp / "policy.toml"))
    srv.start()
    return srv


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrainyardServer]:
    srv = start(tmp_path_factory.mktemp("http-limits"), "submits_per_minute_per_user = 100000")
    yield srv
    srv.stop(grace=0)


def job(**fields: object) -> bytes:
    return json.dumps({"name": "limit", "command": "sleep 30", **fields}).encode()


MB = "x" * (1 << 20)
BODIES: list[tuple[str, bytes]] = [
    ("priority", job(priority=2**31)), ("priority", job(priority=-(2**31) - 1)),
    ("priority", job(priority=2**31 - 1)), ("priority", job(priority=10**400)),
    ("priority", job()[:-1] + b', "priority": 1e400}'),
    ("priority", job()[:-1] + b', "priority": NaN}'),
    ("priority", job(priority="high")), ("priority", job(priority=1.5)),
    ("priority", job(priority=True)), ("priority", job(priority=None)),
    ("resources", job(resources={"memory_mb": 2**63})),
    ("resources", job(resources={"memory_mb": 2**63 - 1})),
    ("resources", job(resources={"cpus": 1e308})),
    ("resources", job()[:-1] + b', "resources": {"cpus": Infinity}}'),
    ("resources", job(resources={"gpus": -1})),
    ("workers", job(workers=2**31 - 1)), ("workers", job(workers=0)),
    ("name", job(name="")), ("name", job(name=MB)), ("command", job(command=MB)),
    ("name", b'{"name": "\\ud800", "command": "true"}'),
    ("name", b'{"name": "a\\udfffb", "command": "true"}'),
    ("name", b'{"name": "a\\u0000b", "command": "true"}'),
    ("labels", b'{"name": "n", "command": "true", "labels": {"\\ud83d": "v"}}'),
    ("labels", b'{"name": "n", "command": "true", "labels": {"k": "\\udc00"}}'),
    ("labels", job(labels={"k\u202e\u200b": "e\u0301\U0001f469\u200d\U0001f52c"})),
    ("labels", job(labels={"k": "a\x01\x1b[31m"})),
    ("labels", job(labels={"k": MB})),
    ("hyperparameters", job(hyperparameters={f"P{i}": str(i) for i in range(10_000)})),
    ("hyperparameters", job(hyperparameters={"P": {"nested": 1}})),
    # Nested past the JSON reader's recursion: the body as a whole cannot be read.
    ("body", job()[:-1] + b', "labels": ' + b"[" * 1000 + b"]" * 1000 + b"}"),
    ("body", b"[" * 100_000 + b"]" * 100_000),
    ("body", b'{"name": "n", "command": "true"'),
    ("body", b"\xff\xfe"),
]


@pytest.mark.parametrize(("field", "body"), BODIES,
                         ids=[f"{f}-{i}" for i, (f, _) in enumerate(BODIES)])
def test_a_submit_at_its_limits_is_answered(server: TrainyardServer, field: str,
                                             body: bytes) -> None:
    before = job_count(server)
    reply = Rest(server.http_port).post("/api/v1/jobs", raw=body)
    if reply.status == 201:
        assert job_count(server) == before + 1
        return
    error = reply.error
    assert reply.status in (400, 413, 422), error
    assert field in error["message"] or field == "body", error
    assert job_count(server) == before


def test_a_submit_past_the_rate_is_429_with_retry_after(tmp_path: Path) -> None:
    srv = start(tmp_path, "submits_per_minute_per_user = 2\nmax_waiting_per_user = 50")
    try:
        rest = Rest(srv.http_port)
        for _ in range(2):
            assert rest.post("/api/v1/jobs", raw=job()).status == 201
        reply = rest.post("/api/v1/jobs", raw=job())
        assert reply.status == 429
        assert reply.error["code"] == "RESOURCE_EXHAUSTED"
        assert "the most the policy allows (limits.submits_per_minute_per_user); try again " \
               "in 30 s" in reply.error["message"]
        assert reply.headers["Retry-After"] == "30"
        stub = pb_grpc.TrainingServiceStub(grpc.insecure_channel(f"127.0.0.1:{srv.port}"))
        with pytest.raises(grpc.RpcError) as refused:
            stub.Train(pb.TrainRequest(name="g", command="true"), timeout=10)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert ("retry-after", "30") in tuple(refused.value.trailing_metadata() or ())
        assert job_count(srv) == 2
    finally:
        srv.stop(grace=0)


def test_a_submit_past_the_waiting_cap_is_429_without_retry_after(tmp_path: Path) -> None:
    srv = start(tmp_path, "max_waiting_per_user = 1")
    try:
        rest = Rest(srv.http_port)
        first = rest.post("/api/v1/jobs", raw=job(queue="default"))
        assert first.status == 201
        # Once the first runs (the pool takes one job), the second waits: the user's one.
        wait_for(srv, first.json()["job_id"], {JobState.RUNNING})
        assert rest.post("/api/v1/jobs", raw=job(queue="default")).status == 201
        reply = rest.post("/api/v1/jobs", raw=job(queue="default"))
        assert reply.status == 429 and "Retry-After" not in reply.headers
        assert "waiting jobs, the most the policy allows" in reply.error["message"]
    finally:
        srv.stop(grace=0)
