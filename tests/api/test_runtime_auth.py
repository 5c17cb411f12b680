"""Job tokens and user tokens kept apart, over real gRPC: JobRuntime takes only the job
token of a running attempt, everything else refuses a job token. A forged or expired token
is refused as UNAUTHENTICATED, audited once, and changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from tests.api.runtime_live import RuntimeWorld, bearer, chunks, runtime_world
from trainyard.api.auth import JOB_TOKEN_ELSEWHERE
from trainyard.auth import job_tokens
from trainyard.store.job_tokens import JobTokenStore
from trainyard.v1 import runtime_pb2 as rpb
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeWorld]:
    yield from runtime_world(tmp_path_factory.mktemp("runtime-auth"))


def _every_runtime_call(world: RuntimeWorld, metadata: Any) -> dict[str, grpc.RpcError]:
    """Each JobRuntime RPC with these credentials; the error each one raised."""
    stub = world.stub
    calls = {
        "GetAttempt": lambda: stub.GetAttempt(rpb.GetAttemptRequest(), metadata=metadata,
                                              timeout=10),
        "PullDataset": lambda: list(stub.PullDataset(rpb.PullDatasetRequest(),
                                                     metadata=metadata, timeout=10)),
        "PullCheckpoint": lambda: list(stub.PullCheckpoint(rpb.PullCheckpointRequest(),
                                                           metadata=metadata, timeout=10)),
        "PushCheckpoint": lambda: stub.PushCheckpoint(chunks({"c": b"evil"}),
                                                      metadata=metadata, timeout=10),
        "PushModel": lambda: stub.PushModel(chunks({"m": b"evil"}), metadata=metadata,
                                            timeout=10),
        "Push": lambda: stub.Push(rpb.PushRequest(stream="log", lines=[b"evil"]),
                                  metadata=metadata, timeout=10),
    }
    errors = {}
    for name, call in calls.items():
        with pytest.raises(grpc.RpcError) as refused:
            call()
        errors[name] = refused.value
    return errors


def _footprint(world: RuntimeWorld, job_id: str) -> tuple[Any, ...]:
    paths = world.server.workspace.attempt(job_id, 1)
    files = sorted(str(p.relative_to(paths.root.parent)) for p in paths.root.parent.rglob("*"))
    job = world.server.jobs.get(job_id)
    return (files, paths.log_path.read_bytes(), paths.metrics_path.read_bytes(), job.state,
            job.attempt)


def _refusals(world: RuntimeWorld) -> list[tuple[str, str, str, str]]:
    return [(e.actor, e.action, e.target, e.detail)
            for e in world.server.access.store.list_audit(1000) if not e.allowed]


def test_forged_and_foreign_credentials_are_refused_on_every_call(world: RuntimeWorld) -> None:
    job_id, token = world.running_job("victim")
    claimed = job_tokens.parse(token)
    forged = f"tyjob_{job_id}_1_{job_tokens.mint(job_id, 1).token[-43:]}"
    later = f"tyjob_{job_id}_2_{claimed.secret}"  # the right secret, another attempt
    cases = [
        (forged, grpc.StatusCode.UNAUTHENTICATED, f"the job token of {job_id}-1 is not valid"),
        (later, grpc.StatusCode.UNAUTHENTICATED, f"the job token of {job_id}-2 is not valid"),
        ("tyjob_nonsense", grpc.StatusCode.UNAUTHENTICATED, "the job token is malformed"),
        (world.user_token, grpc.StatusCode.PERMISSION_DENIED,
         "needs the job token of a running attempt, not a token of 'root'"),
    ]
    for credential, code, sentence in cases:
        before, audited = _footprint(world, job_id), len(_refusals(world))
        errors = _every_runtime_call(world, bearer(credential))
        for name, error in errors.items():
            assert error.code() is code, (name, error)
            assert sentence in str(error.details())
            assert credential[-43:] not in str(error.details())
        assert _footprint(world, job_id) == before
        new = _refusals(world)[:len(_refusals(world)) - audited]
        assert sorted(action for _, action, _, _ in new) == sorted(errors)  # once each
        assert all(credential[-43:] not in detail for *_, detail in new)
    # No credential at all: not the job's either.
    errors = _every_runtime_call(world, ())
    assert {e.code() for e in errors.values()} == {grpc.StatusCode.UNAUTHENTICATED}
    # And the real token still works: nothing above spent it.
    assert world.stub.GetAttempt(rpb.GetAttemptRequest(), metadata=bearer(token),
                                 timeout=10).job_id == job_id


def test_a_job_token_calls_nothing_but_the_job_runtime(world: RuntimeWorld) -> None:
    job_id, token = world.running_job("elsewhere")
    stub = pb_grpc.TrainingServiceStub(world.channel)
    audited = len(_refusals(world))
    for call in (lambda: stub.ListJobs(pb.ListJobsRequest(), metadata=bearer(token), timeout=10),
                 lambda: stub.Train(pb.TrainRequest(name="x", command="true"),
                                    metadata=bearer(token), timeout=10),
                 lambda: list(stub.StreamLogs(pb.StreamLogsRequest(job_id=job_id),
                                              metadata=bearer(token), timeout=10))):
        with pytest.raises(grpc.RpcError) as refused:
            call()
        assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert refused.value.details() == JOB_TOKEN_ELSEWHERE
    new = _refusals(world)[:len(_refusals(world)) - audited]
    assert [(actor, action, target) for actor, action, target, _ in new] == [
        ("anonymous", "StreamLogs", f"{job_id}-1"), ("anonymous", "Train", f"{job_id}-1"),
        ("anonymous", "ListJobs", f"{job_id}-1")]  # newest first


def test_a_token_dies_with_its_attempt(world: RuntimeWorld) -> None:
    job_id, token = world.running_job("ends")
    world.finish("ends", job_id)
    assert JobTokenStore(world.server.db).attempts(job_id) == []
    before = _footprint(world, job_id)
    errors = _every_runtime_call(world, bearer(token))
    assert {e.code() for e in errors.values()} == {grpc.StatusCode.UNAUTHENTICATED}
    assert _footprint(world, job_id) == before


def test_one_jobs_token_reaches_nothing_of_another_job(world: RuntimeWorld) -> None:
    # By construction: no JobRuntime request names a job or an attempt, so the only job a
    # call can act on is the one its token proves.
    for message in (rpb.GetAttemptRequest, rpb.PullDatasetRequest, rpb.PullCheckpointRequest,
                    rpb.FileChunk, rpb.PushRequest):
        names = set(message.DESCRIPTOR.fields_by_name)
        assert not names & {"job_id", "job", "attempt", "run_id"}, message
    a, token_a = world.running_job("job-a")
    b, _ = world.running_job("job-b")
    before_b = _footprint(world, b)
    assert world.stub.GetAttempt(rpb.GetAttemptRequest(), metadata=bearer(token_a),
                                 timeout=10).job_id == a
    world.stub.Push(rpb.PushRequest(stream="log", lines=[b"from a"]),
                    metadata=bearer(token_a), timeout=10)
    world.stub.PushCheckpoint(chunks({"a": b"a"}), metadata=bearer(token_a), timeout=10)
    assert world.server.workspace.attempt(a, 1).log_path.read_bytes() == b"from a\n"
    assert _footprint(world, b) == before_b
