"""The interceptor's table (api/permissions.py) and the use cases agree: for every RPC in the
table, the use case it calls, called directly with no interceptor in front, refuses exactly
the callers the table refuses, with the same sentence, audited once, and changes nothing."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.algorithm_code import code_chunks, register_code, write_tree
from tests.services.conftest import ROOT, World, assemble, populate
from trainyard.api.permissions import ADMIN, RPC_ACCESS, RUNTIME, SAMPLE, TRAINING
from trainyard.auth.policy import Access, Identity, check_access
from trainyard.domain.errors import PermissionDenied
from trainyard.domain.runs import ModelRef
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.domain.sweep import Parameter
from trainyard.metadata.artifacts import ArtifactCollector
from trainyard.services.algorithms import Registration
from trainyard.services.runs import RunQuery
from trainyard.services.sample import SampleMetadata
from trainyard.store.jobs import JobFilter
from trainyard.v1 import runtime_pb2, sample_pb2
from trainyard.v1 import training_pb2 as pb

# The kinds of caller; the read-only one is the member's own read-only token.
CALLERS = ("admin", "member", "read_only", "other_team")
USERS = {"admin": "root", "member": "mia", "read_only": "mia", "other_team": "otto"}


class Fixtures:
    """What the calls act on: each caller's own finished run with a model, fresh jobs to
    cancel, datasets to read and delete, principals to add; made with writable identities."""

    def __init__(self, world: World, tmp: Path) -> None:
        self.world = world
        self.services = world.services
        self.tmp = tmp
        self.names: Iterator[int] = itertools.count()
        self.runs = {caller: self._finished_run(world.who[caller])
                     for caller in ("admin", "member", "other_team")}
        self.runs["read_only"] = self.runs["member"]
        self.dataset = self.register("shared-ds")
        register_code(world.server, "shared-algo")

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.names)}"

    def job(self, caller: str) -> str:
        """The caller's finished job (the read-only caller's is the member's)."""
        return self.runs[caller].rsplit("-", 1)[0]

    def waiting_job(self, caller: str) -> str:
        writer = self.world.who["member" if caller == "read_only" else caller]
        job_id, _ = self.services.jobs.train(writer, JobSpec(name="waits", command="true"))
        return job_id

    def sweep(self, caller: str, *, paused: bool = False) -> str:
        """A sweep of the caller's (the read-only caller's is the member's)."""
        writer = self.world.who["member" if caller == "read_only" else caller]
        sweep_id, _ = self.services.sweeps.submit(
            writer, JobSpec(name="sw", command="true"), [Parameter("LR", ("1",))],
            search="grid", trials=0, seed=0, max_parallel=1)
        if paused:
            self.services.sweeps.pause(writer, sweep_id)
        return sweep_id

    def model(self, caller: str) -> ModelRef:
        return ModelRef(f"{USERS[caller]}-model", 1)

    def directory(self) -> str:
        path = self.tmp / self.fresh("ds")
        path.mkdir()
        (path / "x.txt").write_text(path.name)
        return str(path)

    def register(self, name: str) -> tuple[str, str]:
        record, _ = self.services.datasets.register(ROOT, name, self.directory())
        return record.name, record.version

    def register_algorithm(self) -> UseCase:
        """A new version of a code directory, its chunks read only by the call."""
        root = write_tree(self.tmp / self.fresh("code"), {"train.py": self.fresh("print")})
        request = Registration(name="registered-algo", code=True, command="python3 train.py")
        return bind(self.services.algorithms.register, request, code_chunks(root))

    def sample_request(self) -> SampleMetadata:
        """The sample service's request for the shared algorithm and dataset."""
        name, version = self.dataset
        return SampleMetadata(algorithm="shared-algo", dataset_id=name,
                              train_data_version_hash=version, parameters={"lr": "0.1"})

    def sample_job(self, caller: str) -> int:
        """A job of the caller's through the sample service (the read-only caller's is the
        member's), by its 32-bit number."""
        writer = self.world.who["member" if caller == "read_only" else caller]
        return self.services.sample.train(writer, self.sample_request())

    def doomed_algorithm(self) -> tuple[str, int]:
        version = register_code(self.world.server, "doomed-algo", self.fresh("x"))
        return version.name, version.version

    def new_user(self) -> str:
        return self.services.access.create_user(ROOT, self.fresh("new"), False).name

    def new_token(self) -> str:
        return self.services.access.create_token(ROOT, "otto", expires_in=0,
                                                 read_only=False).record.id

    def _finished_run(self, identity: Identity) -> str:
        """A job of the identity's, run to success as the tracker would (none runs here),
        whose saved files are its model's version 1."""
        server = self.world.server
        job_id, _ = server.service.train(identity, JobSpec(
            name=f"{identity.user}-model", command="true"))
        server.jobs.transition(job_id, JobState.WAITING, JobState.LAUNCHING, reason="test",
                               executor="local", pool="local", attempt=1)
        server.jobs.mark_running(job_id, reason="test", now=1.0)
        server.jobs.transition(job_id, JobState.RUNNING, JobState.SUCCEEDED, reason="test")
        saved = self.tmp / self.fresh("model")
        saved.mkdir()
        (saved / "w.txt").write_text(identity.user)
        ArtifactCollector(server.models.models, server.workspace.artifacts_dir).collect(
            server.jobs.get(job_id), saved)
        return f"{job_id}-1"


UseCase = Callable[[Identity], Any]


def bind(use_case: Callable[..., Any], *args: Any, **kwargs: Any) -> UseCase:
    """The use case with everything but its caller; a stream is read to its end."""
    def call(identity: Identity) -> Any:
        result = use_case(identity, *args, **kwargs)
        if isinstance(result, Iterator):
            return list(result)
        if isinstance(result, tuple) and result and isinstance(result[-1], Iterator):
            return list(result[-1])  # a download: the version, then its chunks
        return result
    return call


def _always() -> bool:
    return True


# Each RPC of the table as the use case its servicer calls, on what the caller owns; the
# arguments are made before the call, so that a refusal can be seen to change nothing.
CALLS: dict[str, Callable[[Fixtures, str], UseCase]] = {
    TRAINING + "Train": lambda f, c: bind(f.services.jobs.train,
                                          JobSpec(name="t", command="true")),
    TRAINING + "GetTrainingStatus": lambda f, c: bind(f.services.jobs.status, f.job(c)),
    TRAINING + "ListJobs": lambda f, c: bind(f.services.jobs.list_page),
    TRAINING + "CancelJob": lambda f, c: bind(f.services.jobs.cancel, f.waiting_job(c)),
    TRAINING + "WatchJob": lambda f, c: bind(f.services.jobs.watch, f.job(c),
                                             is_active=_always),
    TRAINING + "StreamLogs": lambda f, c: bind(f.services.jobs.logs, f.job(c), follow=False,
                                               offset=0, is_active=_always),
    TRAINING + "RegisterDataset": lambda f, c: bind(f.services.datasets.register,
                                                    "registered", f.directory()),
    TRAINING + "ListDatasets": lambda f, c: bind(f.services.datasets.list),
    TRAINING + "GetQueues": lambda f, c: bind(f.services.jobs.queues),
    TRAINING + "SubmitSweep": lambda f, c: bind(
        f.services.sweeps.submit, JobSpec(name="sw", command="true"),
        [Parameter("LR", ("1", "2"))], search="grid", trials=0, seed=0, max_parallel=1),
    TRAINING + "ListSweeps": lambda f, c: bind(f.services.sweeps.list),
    TRAINING + "GetSweep": lambda f, c: bind(f.services.sweeps.show, f.sweep(c)),
    TRAINING + "CancelSweep": lambda f, c: bind(f.services.sweeps.cancel, f.sweep(c)),
    TRAINING + "PauseSweep": lambda f, c: bind(f.services.sweeps.pause, f.sweep(c)),
    TRAINING + "ResumeSweep": lambda f, c: bind(f.services.sweeps.resume,
                                                f.sweep(c, paused=True)),
    TRAINING + "ListRuns": lambda f, c: bind(f.services.runs.list_runs, RunQuery()),
    TRAINING + "GetRun": lambda f, c: bind(f.services.runs.get, f.runs[c]),
    TRAINING + "CompareRuns": lambda f, c: bind(f.services.runs.compare, [f.runs[c]]),
    TRAINING + "ReproduceRun": lambda f, c: bind(f.services.runs.reproduce, f.runs[c]),
    TRAINING + "ListModels": lambda f, c: bind(f.services.models.list_models),
    TRAINING + "GetModel": lambda f, c: bind(f.services.models.get_model, f.model(c).name),
    TRAINING + "SetModelAlias": lambda f, c: bind(f.services.models.set_alias,
                                                  f.model(c).name, "production", 1),
    TRAINING + "DownloadModel": lambda f, c: bind(f.services.models.download, f.model(c)),
    TRAINING + "GetModelLineage": lambda f, c: bind(f.services.models.lineage, f.model(c)),
    TRAINING + "GetDatasetLineage": lambda f, c: bind(f.services.datasets.lineage,
                                                      *f.dataset),
    TRAINING + "DeleteDataset": lambda f, c: bind(f.services.datasets.delete,
                                                  *f.register("doomed")),
    SAMPLE + "Train": lambda f, c: bind(f.services.sample.train, f.sample_request()),
    SAMPLE + "GetTrainingStatus": lambda f, c: bind(f.services.sample.status,
                                                    f.sample_job(c)),
    TRAINING + "RegisterAlgorithm": lambda f, c: f.register_algorithm(),
    TRAINING + "ListAlgorithms": lambda f, c: bind(f.services.algorithms.list),
    TRAINING + "GetAlgorithm": lambda f, c: bind(f.services.algorithms.get, "shared-algo"),
    TRAINING + "SetAlgorithmAlias": lambda f, c: bind(f.services.algorithms.set_alias,
                                                      "shared-algo", "production", 1),
    TRAINING + "DeleteAlgorithm": lambda f, c: bind(f.services.algorithms.delete,
                                                    *f.doomed_algorithm()),
    ADMIN + "CreateUser": lambda f, c: bind(f.services.access.create_user, f.fresh("user"),
                                            admin=False),
    ADMIN + "ListUsers": lambda f, c: bind(f.services.access.list_users),
    ADMIN + "CreateTeam": lambda f, c: bind(f.services.access.create_team, f.fresh("team")),
    ADMIN + "ListTeams": lambda f, c: bind(f.services.access.list_teams),
    ADMIN + "AddTeamMember": lambda f, c: bind(f.services.access.add_member, "blue",
                                               f.new_user()),
    ADMIN + "CreateToken": lambda f, c: bind(f.services.access.create_token, "otto",
                                             expires_in=0, read_only=False),
    ADMIN + "ListTokens": lambda f, c: bind(f.services.access.list_tokens),
    ADMIN + "RevokeToken": lambda f, c: bind(f.services.access.revoke_token, f.new_token()),
    ADMIN + "SetQueueAccess": lambda f, c: bind(f.services.access.set_queue_access,
                                                f.fresh("q"), [], ["blue"]),
    ADMIN + "ListQueueAccess": lambda f, c: bind(f.services.access.queue_acls),
    ADMIN + "ListAudit": lambda f, c: bind(f.services.access.list_audit, 10),
    ADMIN + "ExportHistory": lambda f, c: bind(f.services.history.export, None, 0, ""),
}
# The one RPC without a use case: the servicer answers it from the caller's identity alone.
NO_USE_CASE = {TRAINING + "WhoAmI"}
# The job runtime's: their use cases take the grant of a job token (auth/job_grants.py),
# never an identity, so no user's caller can even be handed to them; the table refuses
# every user, admins included (tests/api/test_runtime_auth.py shows it over gRPC).
JOB_RPCS = {f"{RUNTIME}{m.name}"
            for m in runtime_pb2.DESCRIPTOR.services_by_name["JobRuntime"].methods}


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fixtures]:
    tmp = tmp_path_factory.mktemp("permissions")
    srv = assemble(tmp)
    yield Fixtures(populate(srv), tmp)
    srv.stop(grace=0)


def test_every_rpc_of_the_table_and_of_the_api_has_its_use_case() -> None:
    offered = {f"/trainyard.v1.{service}/{m.name}"
               for service in ("TrainingService", "AdminService")
               for m in pb.DESCRIPTOR.services_by_name[service].methods}
    offered |= {f"/training.TrainingService/{m.name}"
                for m in sample_pb2.DESCRIPTOR.services_by_name["TrainingService"].methods}
    assert set(RPC_ACCESS) == offered | JOB_RPCS and len(JOB_RPCS) == 7
    assert set(CALLS) | NO_USE_CASE | JOB_RPCS == set(RPC_ACCESS)
    assert not set(CALLS) & NO_USE_CASE and not (set(CALLS) | NO_USE_CASE) & JOB_RPCS
    assert all(RPC_ACCESS[rpc] is Access.READ for rpc in NO_USE_CASE)
    assert {rpc for rpc, access in RPC_ACCESS.items() if access is Access.JOB} == JOB_RPCS


@pytest.mark.parametrize("caller", [*CALLERS, "teammate"])
def test_the_table_refuses_every_user_the_job_runtime(fixtures: Fixtures, caller: str) -> None:
    identity = fixtures.world.who[caller]
    for rpc in sorted(JOB_RPCS):
        action = rpc.rsplit("/", 1)[-1]
        assert table_refusal(identity, rpc) == (
            f"{action} needs the job token of a running attempt, not a token of "
            f"{identity.user!r}")


def table_refusal(identity: Identity, rpc: str) -> str | None:
    """The sentence the interceptor refuses the caller with; None where it lets it through."""
    try:
        check_access(identity, RPC_ACCESS[rpc], rpc.rsplit("/", 1)[-1])
    except PermissionDenied as exc:
        return str(exc)
    return None


def footprint(world: World) -> tuple[Any, ...]:
    """What a refused call must leave as it was."""
    server, store = world.server, world.server.access.store
    jobs, _ = server.jobs.list(JobFilter(), page_size=1000)
    return ([(j.id, j.state, j.cancel_requested) for j in jobs], store.list_users(),
            store.list_teams(), [(t.id, t.revoked_at) for t in store.list_tokens("")],
            store.queue_acls(), server.datasets.registry.store.list(""),
            [server.models.models.aliases(m.name) for m in server.models.models.list_models()],
            [(a.name, a.versions, a.aliases) for a in server.services.algorithms.algorithms.list()],
            sorted(p.name for p in server.workspace.code_dir.glob("*")))


def refusals(world: World) -> list[tuple[str, str, str]]:
    return [(e.actor, e.action, e.detail)
            for e in world.server.access.store.list_audit(1000) if not e.allowed]


CASES = [(rpc, caller) for rpc in CALLS for caller in CALLERS]


@pytest.mark.parametrize(("rpc", "caller"), CASES,
                         ids=[f"{r.rsplit('/', 1)[-1]}-{c}" for r, c in CASES])
def test_each_use_case_refuses_whom_the_table_refuses(fixtures: Fixtures, rpc: str,
                                                      caller: str) -> None:
    world = fixtures.world
    identity = world.who[caller]
    expected = table_refusal(identity, rpc)
    use_case = CALLS[rpc](fixtures, caller)
    before, audited = footprint(world), len(refusals(world))
    if expected is None:
        use_case(identity)  # through, and done: nothing refused
        assert len(refusals(world)) == audited
        return
    with pytest.raises(PermissionDenied) as refused:
        use_case(identity)
    assert str(refused.value) == expected
    assert footprint(world) == before
    action = rpc.rsplit("/", 1)[-1]
    assert refusals(world)[:len(refusals(world)) - audited] == [
        (identity.user, action, expected)]
