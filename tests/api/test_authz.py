"""Every RPC against every kind of caller, on a real server over loopback with TLS."""

from __future__ import annotations

import hashlib
import itertools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.algorithm_code import register_code
from tests.services.conftest import ROOT, add_people
from trainyard.auth.certs import generate_self_signed
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.store.jobs import JobFilter
from trainyard.tracker import TrackerConfig
from trainyard.v1 import sample_pb2, sample_pb2_grpc
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

OK, UNAUTH, DENIED = "OK", "UNAUTHENTICATED", "PERMISSION_DENIED"
CALLERS = ("anonymous", "expired", "revoked", "read_only", "other_team", "member", "admin")


@dataclass
class World:
    server: TrainyardServer
    channel: grpc.Channel
    tokens: dict[str, str]  # caller -> token; anonymous has none
    dataset_dir: Path
    log_records: list[str]
    errors: list[str]
    names: Iterator[int]
    made: dict[str, str] = field(default_factory=dict)  # what the calls share, made once

    def metadata(self, caller: str) -> tuple[tuple[str, str], ...]:
        token = self.tokens.get(caller)
        return (("authorization", f"Bearer {token}"),) if token else ()

    def mia_job(self, command: str = "sleep 60", final: bool = False) -> str:
        """A job owned by mia in her team's queue."""
        stub = pb_grpc.TrainingServiceStub(self.channel)
        job_id = stub.Train(pb.TrainRequest(name="mia-job", command=command, queue="red-q"),
                            metadata=self.metadata("member"), timeout=10).job_id
        if final:
            stub.CancelJob(pb.CancelJobRequest(job_id=job_id), metadata=self.metadata("member"),
                           timeout=10)
            deadline = time.monotonic() + 20
            while not self.server.jobs.get(job_id).state.is_final():
                assert time.monotonic() < deadline
                time.sleep(0.05)
        return job_id


class _Collect(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append(self.format(record))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("authz")
    pair = generate_self_signed(tmp / "tls")
    records: list[str] = []
    handler = _Collect(records)
    logging.getLogger().addHandler(handler)
    previous_level = logging.getLogger().level
    logging.getLogger().setLevel(logging.DEBUG)
    srv = TrainyardServer(ServerConfig(data_dir=tmp / "data", port=0, tls_cert=pair.cert,
                                       tls_key=pair.key,
                                       tracker=TrackerConfig(max_concurrent=8,
                                                             cancel_grace=1.0)))
    access = srv.access
    add_people(access)

    def token(user: str, **kwargs: Any) -> str:
        options = {"expires_in": 0.0, "read_only": False, **kwargs}
        return access.create_token(ROOT, user, **options).token

    tokens = {"admin": token("root"), "member": token("mia"), "other_team": token("otto"),
              "read_only": token("mia", read_only=True), "expired": token("mia", expires_in=1),
              "revoked": token("mia"), "teammate": token("max")}
    revoked_id = tokens["revoked"].split("_")[1]
    access.revoke_token(ROOT, revoked_id)
    srv.start()
    dataset_dir = tmp / "ds"
    dataset_dir.mkdir()
    (dataset_dir / "a.txt").write_text("1\n")
    channel = grpc.secure_channel(f"127.0.0.1:{srv.port}", grpc.ssl_channel_credentials(
        root_certificates=pair.cert.read_bytes()))
    time.sleep(1.1)  # the expired token's second passes
    yield World(srv, channel, tokens, dataset_dir, records, [], itertools.count())
    channel.close()
    srv.stop(grace=0)
    logging.getLogger().removeHandler(handler)
    logging.getLogger().setLevel(previous_level)


# --- the calls: each builds its own request, so that every caller's attempt is fresh --------

Call = Callable[[World, str], Any]


def training(name: str, request: Callable[[World], Any], stream: bool = False) -> Call:
    def call(world: World, caller: str) -> Any:
        method = getattr(pb_grpc.TrainingServiceStub(world.channel), name)
        response = method(request(world), metadata=world.metadata(caller), timeout=15)
        return list(response) if stream else response
    return call


def sample(name: str, request: Callable[[World], Any]) -> Call:
    """A call of the sample training service's (training.TrainingService), same port."""
    def call(world: World, caller: str) -> Any:
        method = getattr(sample_pb2_grpc.TrainingServiceStub(world.channel), name)
        return method(request(world), metadata=world.metadata(caller), timeout=15)
    return call


def admin(name: str, request: Callable[[World], Any]) -> Call:
    def call(world: World, caller: str) -> Any:
        method = getattr(pb_grpc.AdminServiceStub(world.channel), name)
        return method(request(world), metadata=world.metadata(caller), timeout=15)
    return call


def fresh(world: World, prefix: str) -> str:
    return f"{prefix}{next(world.names)}"


def own_job(world: World) -> pb.GetTrainingStatusRequest:
    return pb.GetTrainingStatusRequest(job_id=world.mia_job(final=True))


def mia_run(world: World) -> str:
    """A run of mia's, in her team's queue, that saved a model (model 'mia-model')."""
    if "run" not in world.made:
        job_id = world.mia_job(command='echo w > "$MODEL_SAVE_PATH/w"')
        deadline = time.monotonic() + 20
        while world.server.jobs.get(job_id).state is not JobState.SUCCEEDED:
            assert time.monotonic() < deadline, world.server.jobs.get(job_id)
            time.sleep(0.05)
        world.made["run"] = f"{job_id}-1"
        model = world.server.models.models.for_job(job_id)
        assert model is not None
        world.made["model"], world.made["version"] = model.model_name, str(model.version)
    return world.made["run"]


def mia_sweep(world: World, paused: bool = False) -> str:
    """A sweep owned by mia in her team's queue."""
    stub = pb_grpc.TrainingServiceStub(world.channel)
    sweep_id = stub.SubmitSweep(pb.SweepRequest(
        template=pb.TrainRequest(name="mia-sweep", command="true", queue="red-q"),
        parameters=[pb.SweepParameter(name="LR", values=["1"])]),
        metadata=world.metadata("member"), timeout=10).sweep_id
    if paused:
        stub.PauseSweep(pb.SweepActionRequest(sweep_id=sweep_id),
                        metadata=world.metadata("member"), timeout=10)
    return sweep_id


def mia_model(world: World) -> pb.ModelRef:
    """The model version of mia_run (reproductions add versions of the same model)."""
    mia_run(world)
    return pb.ModelRef(name=world.made["model"], version=int(world.made["version"]))


def dataset_version(world: World) -> str:
    if "dataset" not in world.made:
        world.made["dataset"] = world.server.datasets.register(
            ROOT, "lineage-ds", str(world.dataset_dir))[0].version
    return world.made["dataset"]


def fresh_dataset(world: World) -> pb.DeleteDatasetRequest:
    """A new, unused dataset version for each call to delete."""
    path = world.dataset_dir.parent / fresh(world, "del-ds")
    path.mkdir()
    (path / "x.txt").write_text(path.name)
    record, _ = world.server.datasets.register(ROOT, "doomed", str(path))
    return pb.DeleteDatasetRequest(name="doomed", version=record.version)


# What each caller may do; the unauthenticated three get UNAUTHENTICATED everywhere.
MEMBER_WRITE = {"read_only": DENIED, "other_team": DENIED, "member": OK, "admin": OK}
MEMBER_READ_OWN = {"read_only": OK, "other_team": DENIED, "member": OK, "admin": OK}
ANYONE_READ = {"read_only": OK, "other_team": OK, "member": OK, "admin": OK}
ADMIN_ONLY = {"read_only": DENIED, "other_team": DENIED, "member": DENIED, "admin": OK}
# A shared catalogue's writes (algorithms): any writable token, whoever's team.
ANYONE_WRITE = {"read_only": DENIED, "other_team": OK, "member": OK, "admin": OK}


def upload(world: World) -> Iterator[pb.AlgorithmUpload]:
    """A registration of a code directory of one file, new content each time."""
    data = fresh(world, "print(").encode() + b")\n"
    yield pb.AlgorithmUpload(spec=pb.AlgorithmSpec(name="uploaded", code=True,
                                                   command="python3 train.py"))
    yield pb.AlgorithmUpload(chunk=pb.CodeChunk(path="train.py", offset=0, data=data,
                                                size=len(data),
                                                sha256=hashlib.sha256(data).hexdigest()))


def shared_algorithm(world: World) -> str:
    if "algorithm" not in world.made:
        world.made["algorithm"] = register_code(world.server, "shared-algo").name
    return world.made["algorithm"]


def sample_train(world: World) -> sample_pb2.TrainRequest:
    return sample_pb2.TrainRequest(metadata=sample_pb2.TrainingJobMetadata(
        algorithm=shared_algorithm(world), dataset_id="lineage-ds",
        train_data_version_hash=dataset_version(world), parameters={"lr": "0.1"}))


def mia_sample_job(world: World) -> sample_pb2.GetTrainingStatusRequest:
    """A job of mia's through the sample service, by its 32-bit number."""
    if "sample" not in world.made:
        world.made["sample"] = str(sample_pb2_grpc.TrainingServiceStub(world.channel).Train(
            sample_train(world), metadata=world.metadata("member"), timeout=15).job_id)
    return sample_pb2.GetTrainingStatusRequest(job_id=int(world.made["sample"]))


def doomed_algorithm(world: World) -> pb.DeleteAlgorithmRequest:
    version = register_code(world.server, "doomed-algo", fresh(world, "x"))
    return pb.DeleteAlgorithmRequest(name=version.name, version=version.version)


RPCS: dict[str, tuple[Call, dict[str, str]]] = {
    "Train": (training("Train", lambda w: pb.TrainRequest(
        name="t", command="true", queue="red-q")), MEMBER_WRITE),
    "GetTrainingStatus": (training("GetTrainingStatus", own_job), MEMBER_READ_OWN),
    # The sample service's: no queue in its request, so the default queue's, open to all.
    "sample.Train": (sample("Train", sample_train), ANYONE_WRITE),
    "sample.GetTrainingStatus": (sample("GetTrainingStatus", mia_sample_job),
                                 MEMBER_READ_OWN),
    "ListJobs": (training("ListJobs", lambda w: pb.ListJobsRequest()), ANYONE_READ),
    "CancelJob": (training("CancelJob", lambda w: pb.CancelJobRequest(job_id=w.mia_job())),
                  MEMBER_WRITE),
    "WatchJob": (training("WatchJob", lambda w: pb.WatchJobRequest(
        job_id=w.mia_job(final=True)), stream=True), MEMBER_READ_OWN),
    "StreamLogs": (training("StreamLogs", lambda w: pb.StreamLogsRequest(
        job_id=w.mia_job(final=True)), stream=True), MEMBER_READ_OWN),
    "RegisterDataset": (training("RegisterDataset", lambda w: pb.RegisterDatasetRequest(
        name="ds", path=str(w.dataset_dir))), ADMIN_ONLY),
    "ListDatasets": (training("ListDatasets", lambda w: pb.ListDatasetsRequest()), ANYONE_READ),
    "WhoAmI": (training("WhoAmI", lambda w: pb.WhoAmIRequest()), ANYONE_READ),
    "GetQueues": (training("GetQueues", lambda w: pb.GetQueuesRequest()), ANYONE_READ),
    "SubmitSweep": (training("SubmitSweep", lambda w: pb.SweepRequest(
        template=pb.TrainRequest(name="sw", command="true", queue="red-q"),
        parameters=[pb.SweepParameter(name="LR", values=["1"])])), MEMBER_WRITE),
    "ListSweeps": (training("ListSweeps", lambda w: pb.SweepListRequest()), ANYONE_READ),
    "GetSweep": (training("GetSweep", lambda w: pb.SweepGetRequest(sweep_id=mia_sweep(w))),
                 MEMBER_READ_OWN),
    "CancelSweep": (training("CancelSweep", lambda w: pb.SweepActionRequest(
        sweep_id=mia_sweep(w))), MEMBER_WRITE),
    "PauseSweep": (training("PauseSweep", lambda w: pb.SweepActionRequest(
        sweep_id=mia_sweep(w))), MEMBER_WRITE),
    "ResumeSweep": (training("ResumeSweep", lambda w: pb.SweepActionRequest(
        sweep_id=mia_sweep(w, paused=True))), MEMBER_WRITE),
    "ListRuns": (training("ListRuns", lambda w: pb.ListRunsRequest()), ANYONE_READ),
    "GetRun": (training("GetRun", lambda w: pb.GetRunRequest(run_id=mia_run(w))),
               MEMBER_READ_OWN),
    "CompareRuns": (training("CompareRuns", lambda w: pb.CompareRunsRequest(
        run_ids=[mia_run(w)])), MEMBER_READ_OWN),
    "ReproduceRun": (training("ReproduceRun", lambda w: pb.ReproduceRunRequest(
        run_id=mia_run(w))), MEMBER_WRITE),
    "RegisterAlgorithm": (training("RegisterAlgorithm", upload), ANYONE_WRITE),
    "ListAlgorithms": (training("ListAlgorithms", lambda w: pb.ListAlgorithmsRequest()),
                       ANYONE_READ),
    "GetAlgorithm": (training("GetAlgorithm", lambda w: pb.GetAlgorithmRequest(
        name=shared_algorithm(w))), ANYONE_READ),
    "SetAlgorithmAlias": (training("SetAlgorithmAlias", lambda w: pb.SetAlgorithmAliasRequest(
        name=shared_algorithm(w), alias="production", version=1)), ANYONE_WRITE),
    "DeleteAlgorithm": (training("DeleteAlgorithm", doomed_algorithm), ANYONE_WRITE),
    "ListModels": (training("ListModels", lambda w: pb.ListModelsRequest()), ANYONE_READ),
    "GetModel": (training("GetModel", lambda w: pb.GetModelRequest(
        name=mia_model(w).name)), ANYONE_READ),
    "SetModelAlias": (training("SetModelAlias", lambda w: pb.SetModelAliasRequest(
        name=mia_model(w).name, alias="production", version=mia_model(w).version)),
        MEMBER_WRITE),
    "DownloadModel": (training("DownloadModel", lambda w: pb.DownloadModelRequest(
        model=mia_model(w)), stream=True), ANYONE_READ),
    "GetModelLineage": (training("GetModelLineage", lambda w: pb.GetModelLineageRequest(
        model=mia_model(w))), ANYONE_READ),
    "GetDatasetLineage": (training("GetDatasetLineage", lambda w: pb.GetDatasetLineageRequest(
        name="lineage-ds", version=dataset_version(w))), ANYONE_READ),
    "DeleteDataset": (training("DeleteDataset", fresh_dataset), ADMIN_ONLY),
    "CreateUser": (admin("CreateUser", lambda w: pb.CreateUserRequest(
        name=fresh(w, "user"))), ADMIN_ONLY),
    "ListUsers": (admin("ListUsers", lambda w: pb.ListUsersRequest()), ADMIN_ONLY),
    "CreateTeam": (admin("CreateTeam", lambda w: pb.CreateTeamRequest(
        name=fresh(w, "team"))), ADMIN_ONLY),
    "ListTeams": (admin("ListTeams", lambda w: pb.ListTeamsRequest()), ADMIN_ONLY),
    "AddTeamMember": (admin("AddTeamMember", lambda w: pb.AddTeamMemberRequest(
        team="blue", user=w.server.access.create_user(ROOT, fresh(w, "new"), False).name)),
        ADMIN_ONLY),
    "CreateToken": (admin("CreateToken", lambda w: pb.CreateTokenRequest(user="otto")),
                    ADMIN_ONLY),
    "ListTokens": (admin("ListTokens", lambda w: pb.ListTokensRequest()), ADMIN_ONLY),
    "RevokeToken": (admin("RevokeToken", lambda w: pb.RevokeTokenRequest(
        id=w.server.access.create_token(ROOT, "otto", expires_in=0, read_only=False)
        .record.id)), ADMIN_ONLY),
    "SetQueueAccess": (admin("SetQueueAccess", lambda w: pb.QueueAccess(
        queue=fresh(w, "q"), teams=["blue"])), ADMIN_ONLY),
    "ListQueueAccess": (admin("ListQueueAccess", lambda w: pb.ListQueueAccessRequest()),
                        ADMIN_ONLY),
    "ListAudit": (admin("ListAudit", lambda w: pb.ListAuditRequest()), ADMIN_ONLY),
    "ExportHistory": (admin("ExportHistory", lambda w: pb.ExportHistoryRequest()),
                      ADMIN_ONLY),
}


def test_the_table_covers_every_rpc() -> None:
    offered = {m.name for s in ("TrainingService", "AdminService")
               for m in pb.DESCRIPTOR.services_by_name[s].methods}
    offered |= {f"sample.{m.name}"
                for m in sample_pb2.DESCRIPTOR.services_by_name["TrainingService"].methods}
    assert set(RPCS) == offered


CASES = [(rpc, caller, RPCS[rpc][1].get(caller, UNAUTH)) for rpc in RPCS for caller in CALLERS]


@pytest.mark.parametrize(("rpc", "caller", "expected"), CASES,
                         ids=[f"{r}-{c}" for r, c, _ in CASES])
def test_who_may_call_what(world: World, rpc: str, caller: str, expected: str) -> None:
    call = RPCS[rpc][0]
    jobs_before = _job_count(world)
    try:
        call(world, caller)
        outcome = OK
    except grpc.RpcError as exc:
        outcome = exc.code().name
        world.errors.append(exc.details() or "")
        assert exc.details(), "a refusal says what was refused"
        if outcome == DENIED:
            assert "may not" in exc.details() or "is for admins" in exc.details() or \
                "read-only" in exc.details() or "not open to" in exc.details()
    assert outcome == expected
    if rpc in ("Train", "sample.Train") and expected != OK:
        assert _job_count(world) == jobs_before  # a refused call changes nothing


def _job_count(world: World) -> int:
    records, _ = world.server.jobs.list(JobFilter(), page_size=1000)
    return len(records)


def test_the_owner_comes_from_the_token(world: World) -> None:
    job_id = world.mia_job(final=True)
    assert world.server.jobs.get(job_id).owner == "mia"


@pytest.mark.parametrize("header", [
    "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "bearer ty_123", "Bearer " + "x" * 600,
    "Bearer ty_0123456789ab_" + "A" * 43, "Token abc",
])
def test_malformed_credentials_are_refused_cleanly(world: World, header: str) -> None:
    stub = pb_grpc.TrainingServiceStub(world.channel)
    with pytest.raises(grpc.RpcError) as info:
        stub.ListJobs(pb.ListJobsRequest(), metadata=(("authorization", header),), timeout=10)
    assert info.value.code() is grpc.StatusCode.UNAUTHENTICATED
    details = info.value.details() or ""
    assert details and "Traceback" not in details
    if len(header) > 10:
        assert header[7:] not in details  # the credential is never echoed


@pytest.mark.parametrize("header", ["Bearer tÿ_ünïcödé", "Bearer " + "y" * 20000])
def test_credentials_no_server_could_parse_never_get_through(world: World, header: str) -> None:
    """Non-ASCII and oversized values are stopped by the gRPC layer, on either side; the
    server keeps serving."""
    stub = pb_grpc.TrainingServiceStub(world.channel)
    with pytest.raises((grpc.RpcError, ValueError)) as info:
        stub.ListJobs(pb.ListJobsRequest(), metadata=(("authorization", header),), timeout=10)
    if isinstance(info.value, grpc.RpcError):
        assert info.value.code() is not grpc.StatusCode.OK
    who = stub.WhoAmI(pb.WhoAmIRequest(), metadata=world.metadata("member"), timeout=10)
    assert who.user == "mia" and not who.admin and list(who.teams) == ["red"]


def test_refusals_and_admin_actions_are_audited(world: World) -> None:
    stub = pb_grpc.AdminServiceStub(world.channel)
    with pytest.raises(grpc.RpcError):
        stub.CreateUser(pb.CreateUserRequest(name="sneaky"), metadata=world.metadata("member"),
                        timeout=10)
    stub.CreateUser(pb.CreateUserRequest(name="welcome"), metadata=world.metadata("admin"),
                    timeout=10)
    events = stub.ListAudit(pb.ListAuditRequest(limit=50), metadata=world.metadata("admin"),
                            timeout=10).events
    assert any(e.actor == "mia" and e.action == "CreateUser" and not e.allowed for e in events)
    assert any(e.actor == "root" and e.action == "CreateUser" and e.target == "welcome" and
               e.allowed for e in events)


@pytest.mark.parametrize(("rpc", "caller"), [
    ("CancelJob", "read_only"),  # refused by the interceptor's table
    ("CreateUser", "member"),  # refused by the interceptor's table
    ("GetTrainingStatus", "other_team"),  # let through, refused by the use case
])
def test_a_refusal_is_audited_once(world: World, rpc: str, caller: str) -> None:
    call = RPCS[rpc][0]

    def refused() -> list[Any]:
        return [e for e in world.server.access.store.list_audit(1000)
                if e.action == rpc and not e.allowed]

    before = len(refused())
    with pytest.raises(grpc.RpcError) as info:
        call(world, caller)
    assert info.value.code() is grpc.StatusCode.PERMISSION_DENIED
    after = refused()
    assert len(after) == before + 1
    assert after[0].detail == info.value.details()


def test_tokens_never_leak(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # Even a token in the server's own environment does not reach a job.
    monkeypatch.setenv("TRAINYARD_TOKEN", world.tokens["admin"])
    job_id = world.mia_job(command="env; echo done")
    deadline = time.monotonic() + 20
    while world.server.jobs.get(job_id).state is not JobState.SUCCEEDED:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    job_env = world.server.workspace.attempt(job_id, 1).log_path.read_text()
    assert "done" in job_env
    texts = {"logs": "\n".join(world.log_records), "job environment": job_env,
             "errors": "\n".join(world.errors)}
    assert world.errors and world.log_records  # the matrix ran and the server logged
    for token in world.tokens.values():
        secret = token.split("_", 2)[2]
        for where, text in texts.items():
            assert secret not in text, f"a token's secret appears in the {where}"


def test_members_see_only_the_runs_they_may_see(world: World) -> None:
    run_id = mia_run(world)
    stub = pb_grpc.TrainingServiceStub(world.channel)

    def listed(caller: str) -> set[str]:
        reply = stub.ListRuns(pb.ListRunsRequest(page_size=1000),
                              metadata=world.metadata(caller), timeout=10)
        return {r.run_id for r in reply.runs}

    assert run_id in listed("member") and run_id in listed("teammate")
    assert run_id in listed("admin") and run_id not in listed("other_team")
    lineage = stub.GetModelLineage(pb.GetModelLineageRequest(model=mia_model(world)),
                                   metadata=world.metadata("other_team"), timeout=10)
    # A model is shared; the run behind it only with those who may see the run.
    assert lineage.run_id == run_id and not lineage.HasField("run")
    mine = stub.GetModelLineage(pb.GetModelLineageRequest(model=mia_model(world)),
                                metadata=world.metadata("member"), timeout=10)
    assert mine.run.run_id == run_id
    used = stub.ListDatasets(pb.ListDatasetsRequest(), metadata=world.metadata("other_team"),
                             timeout=10)
    assert all(run_id not in d.run_ids for d in used.datasets)
