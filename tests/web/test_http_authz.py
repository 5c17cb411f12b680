"""Every route of the JSON API against every kind of caller, on a real server over loopback.
The status each caller gets is derived from the rule gRPC applies to the route's RPC
(api/permissions.py RPC_ACCESS through auth/policy.py check_access, then whose object it
is), so the HTTP door can never let through what the gRPC door refuses. Then the checks a
browser's cookie needs: CSRF, Origin, Host, and signing in."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.algorithm_code import register_code
from tests.services.conftest import ROOT
from tests.web.httpworld import HttpWorld, serve
from tests.web.rest import Reply, Rest, job_count
from trainyard.api.permissions import RPC_ACCESS
from trainyard.auth.policy import Identity, check_access, may_see_job
from trainyard.domain.errors import PermissionDenied
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.domain.sweep import Parameter
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.v1 import training_pb2 as pb
from trainyard.web.routes import GRPC_ONLY, ROUTES, Route
from trainyard.web.session import CSRF_COOKIE, SESSION_COOKIE

ROLES = ("anonymous", "bad_token", "job_token", "read_only", "member", "other_team", "admin")
UNAUTHENTICATED = ("anonymous", "bad_token", "job_token")  # no user's identity at all


@dataclass
class AuthzWorld:
    http: HttpWorld
    names: Iterator[int]
    identities: dict[str, Identity]

    @property
    def server(self) -> Any:
        return self.http.server

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.names)}"

    def mia_job(self, command: str = "true", final: bool = True) -> str:
        job_id, _ = self.server.service.train(self.identities["member"], JobSpec(
            name="mia-job", command=command, queue="red-q"))
        self.http.wait(job_id, {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
                       if final else {JobState.RUNNING})
        return str(job_id)

    def mia_run(self) -> str:
        if "run" not in self.http.made:
            job_id = self.mia_job('printf w > "$MODEL_SAVE_PATH/w"')
            model = self.server.models.models.for_job(job_id)
            assert model is not None, self.server.jobs.get(job_id)
            self.http.made.update(run=f"{job_id}-1", model=model.model_name,
                                  version=str(model.version))
        return self.http.made["run"]

    def mia_sweep(self, paused: bool = False) -> str:
        sweeps = self.server.services.sweeps
        sweep_id, _ = sweeps.submit(self.identities["member"], JobSpec(
            name="mia-sweep", command="true", queue="red-q"), [Parameter("LR", ("1",))],
            search="grid", trials=0, seed=0, max_parallel=1)
        if paused:
            sweeps.pause(self.identities["member"], sweep_id)
        return str(sweep_id)

    def model(self) -> tuple[str, str]:
        self.mia_run()
        return self.http.made["model"], self.http.made["version"]

    def dataset(self) -> str:
        if "lineage" not in self.http.made:
            self.http.made["lineage"] = self.http.dataset("lineage-ds", {"a.txt": "1"})
        return self.http.made["lineage"]

    def algorithm(self) -> tuple[str, int]:
        """An algorithm of a code directory, registered once by root."""
        if "algorithm" not in self.http.made:
            self.http.made["algorithm"] = register_code(self.server, "shared-algo").name
        return self.http.made["algorithm"], 1


# --- how to call each route: (path values, query, body), fresh for each caller ---------

Call = tuple[dict[str, str], str, Any]
Build = Callable[[AuthzWorld], Call]


def _dataset_to_delete(w: AuthzWorld) -> Call:
    name = w.fresh("doomed")
    return {"name": "doomed", "version": w.http.dataset("doomed", {"x.txt": name})}, "", None


def _algorithm_to_delete(w: AuthzWorld) -> Call:
    version = register_code(w.server, "doomed-algo", w.fresh("x")).version
    return {"name": "doomed-algo", "version": str(version)}, "", None


def _dataset_dir(w: AuthzWorld) -> str:
    path = w.http.tmp / "registered"
    path.mkdir(exist_ok=True)
    (path / "a.txt").write_text("1\n")
    return str(path)


def _new_user(w: AuthzWorld) -> str:
    return str(w.server.access.create_user(ROOT, w.fresh("new"), False).name)


def _new_token_id(w: AuthzWorld) -> str:
    return str(w.server.access.create_token(ROOT, "otto", expires_in=0,
                                            read_only=False).record.id)


CALLS: dict[str, Build] = {
    "Train": lambda w: ({}, "", {"name": "t", "command": "true", "queue": "red-q"}),
    "ListJobs": lambda w: ({}, "", None),
    "GetTrainingStatus": lambda w: ({"job_id": w.mia_job()}, "", None),
    "CancelJob": lambda w: ({"job_id": w.mia_job("sleep 60", final=False)}, "", None),
    "WatchJob": lambda w: ({"job_id": w.mia_job()}, "", None),
    "StreamLogs": lambda w: ({"job_id": w.mia_job()}, "", None),
    "SubmitSweep": lambda w: ({}, "", {"template": {"name": "sw", "command": "true",
                                                    "queue": "red-q"},
                                       "parameters": [{"name": "LR", "values": ["1"]}]}),
    "ListSweeps": lambda w: ({}, "", None),
    "GetSweep": lambda w: ({"sweep_id": w.mia_sweep()}, "", None),
    "CancelSweep": lambda w: ({"sweep_id": w.mia_sweep()}, "", None),
    "PauseSweep": lambda w: ({"sweep_id": w.mia_sweep()}, "", None),
    "ResumeSweep": lambda w: ({"sweep_id": w.mia_sweep(paused=True)}, "", None),
    "GetQueues": lambda w: ({}, "", None),
    "WhoAmI": lambda w: ({}, "", None),
    "ListRuns": lambda w: ({}, "", None),
    "CompareRuns": lambda w: ({}, f"run_ids={w.mia_run()}", None),
    "GetRun": lambda w: ({"run_id": w.mia_run()}, "", None),
    "ReproduceRun": lambda w: ({"run_id": w.mia_run()}, "", None),
    "ListModels": lambda w: ({}, "", None),
    "GetModel": lambda w: ({"name": w.model()[0]}, "", None),
    "SetModelAlias": lambda w: ({"name": w.model()[0], "alias": "production"}, "",
                                {"version": int(w.model()[1])}),
    "GetModelLineage": lambda w: ({"name": w.model()[0]}, f"version={w.model()[1]}", None),
    "DownloadModel": lambda w: ({"name": w.model()[0]}, f"version={w.model()[1]}", None),
    "ListAlgorithms": lambda w: ({}, "", None),
    "GetAlgorithm": lambda w: ({"name": w.algorithm()[0]}, "", None),
    "SetAlgorithmAlias": lambda w: ({"name": w.algorithm()[0], "alias": "production"}, "",
                                    {"version": w.algorithm()[1]}),
    "DeleteAlgorithm": _algorithm_to_delete,
    "ListDatasets": lambda w: ({}, "", None),
    "RegisterDataset": lambda w: ({}, "", {"name": "ds", "path": _dataset_dir(w)}),
    "GetDatasetLineage": lambda w: ({"name": "lineage-ds", "version": w.dataset()}, "", None),
    "DeleteDataset": _dataset_to_delete,
    "CreateUser": lambda w: ({}, "", {"name": w.fresh("user")}),
    "ListUsers": lambda w: ({}, "", None),
    "CreateTeam": lambda w: ({}, "", {"name": w.fresh("team")}),
    "ListTeams": lambda w: ({}, "", None),
    "AddTeamMember": lambda w: ({"team": "blue"}, "", {"user": _new_user(w)}),
    "CreateToken": lambda w: ({}, "", {"user": "otto"}),
    "ListTokens": lambda w: ({}, "", None),
    "RevokeToken": lambda w: ({"id": _new_token_id(w)}, "", None),
    "SetQueueAccess": lambda w: ({"queue": w.fresh("q")}, "", {"teams": ["blue"]}),
    "ListQueueAccess": lambda w: ({}, "", None),
    "ListAudit": lambda w: ({}, "", None),
    "ExportHistory": lambda w: ({}, "", None),
}
# The routes that act on mia's job or run, or submit to her team's queue: past the access
# table, the caller must also be one who may see her jobs.
MIAS = frozenset({"Train", "GetTrainingStatus", "CancelJob", "WatchJob", "StreamLogs",
                  "SubmitSweep", "CompareRuns", "GetRun", "ReproduceRun", "SetModelAlias",
                  "GetSweep", "CancelSweep", "PauseSweep", "ResumeSweep"})


def expected_status(world: AuthzWorld, route: Route, role: str) -> int:
    """What gRPC's rule gives this caller for the route's RPC, as HTTP says it."""
    if role in UNAUTHENTICATED:
        return 401
    identity = world.identities[role]
    try:
        check_access(identity, RPC_ACCESS[route.rpc], route.name)
    except PermissionDenied:
        return 403
    if route.name in MIAS and not may_see_job(identity, "mia", share_team_jobs=True):
        return 403
    return 201 if route.name in ("Train", "SubmitSweep", "ReproduceRun") else 200


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthzWorld]:
    for http in serve("sqlite", tmp_path_factory, None):
        srv = http.server
        running, _ = srv.service.train(ROOT, JobSpec(name="holder", command="sleep 600"))
        http.wait(running, {JobState.RUNNING})
        http.tokens["job_token"] = srv.tracker.launcher.requests.mint(srv.jobs.get(running))
        http.tokens["bad_token"] = "ty_0123456789ab_" + "A" * 43
        identities = {role: srv.access.identify([("authorization", f"Bearer {token}")])
                      for role, token in http.tokens.items()
                      if role not in UNAUTHENTICATED}
        yield AuthzWorld(http, itertools.count(), identities)


def test_the_routes_cover_every_rpc_of_the_users_services() -> None:
    offered = {f"/{s.full_name}/{m.name}" for name in ("TrainingService", "AdminService")
               for s in [pb.DESCRIPTOR.services_by_name[name]] for m in s.methods}
    assert sorted(r.rpc for r in ROUTES) == sorted(offered - GRPC_ONLY)  # each once
    assert offered >= GRPC_ONLY
    assert set(CALLS) == {r.name for r in ROUTES}
    assert len({(r.method, r.path) for r in ROUTES}) == len(ROUTES)


def _url(route: Route, values: dict[str, str], query: str) -> str:
    path = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], route.url)
    return f"{path}?{query}" if query else path


CASES = [(route, role) for route in ROUTES for role in ROLES]


@pytest.mark.parametrize(("route", "role"), CASES,
                         ids=[f"{r.method}-{r.name}-{role}" for r, role in CASES])
def test_every_route_answers_each_caller_as_its_rpc_does(world: AuthzWorld, route: Route,
                                                         role: str) -> None:
    values, query, body = CALLS[route.name](world)
    token = None if role == "anonymous" else world.http.tokens[role]
    before = job_count(world.server)
    reply = Rest(world.server.http_port, token).call(route.method, _url(route, values, query),
                                                     body)
    expected = expected_status(world, route, role)
    assert reply.status == expected, reply.body[:300]
    if expected >= 400:
        error = reply.error
        assert error["code"] == {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}[expected]
        if expected == 401:
            assert reply.headers["www-authenticate"].startswith("Bearer")
        if token:
            assert token[-43:] not in reply.body.decode()  # a credential is never echoed
        assert job_count(world.server) == before  # a refusal changes nothing
    if route.name == "CancelJob" and expected != 200:
        assert world.server.jobs.get(values["job_id"]).state is JobState.RUNNING


# --- a browser's session: its cookie, CSRF, Origin and Host -----------------------------

def _signed_in(world: AuthzWorld) -> tuple[Rest, str]:
    """A session of mia's (Cookie header set); its CSRF token."""
    reply = Rest(world.server.http_port).post("/signin", {"token": world.http.tokens["member"]})
    assert reply.status == 200 and reply.json()["user"] == "mia"
    cookies = {name: header.split(";", 1)[0].split("=", 1)[1]
               for name, header in reply.cookies().items()}
    rest = Rest(world.server.http_port, None, extra={
        "Cookie": f"{SESSION_COOKIE}={cookies[SESSION_COOKIE]}; "
                  f"{CSRF_COOKIE}={cookies[CSRF_COOKIE]}"})
    return rest, cookies[CSRF_COOKIE]


JOB = {"name": "from-page", "command": "true", "queue": "red-q"}


def _refused_and_unchanged(world: AuthzWorld, send: Callable[[], Reply], why: str) -> None:
    before = job_count(world.server)
    reply = send()
    assert reply.status == 403, reply.body
    assert reply.error["code"] == "PERMISSION_DENIED" and why in reply.error["message"]
    assert job_count(world.server) == before


def test_a_session_changes_things_only_with_its_csrf_token(world: AuthzWorld) -> None:
    rest, csrf = _signed_in(world)
    assert rest.get("/api/v1/whoami").json()["user"] == "mia"  # reads need no token
    _refused_and_unchanged(world, lambda: rest.post("/api/v1/jobs", JOB), "X-CSRF-Token")
    _refused_and_unchanged(world, lambda: rest.post(
        "/api/v1/jobs", JOB, headers={"X-CSRF-Token": "0" * 64}), "X-CSRF-Token")
    _refused_and_unchanged(world, lambda: rest.post(  # not ASCII: still a 403, no 500
        "/api/v1/jobs", JOB, headers={"X-CSRF-Token": "\xe9" * 64}), "X-CSRF-Token")
    job_id = world.mia_job("sleep 60", final=False)
    _refused_and_unchanged(world, lambda: rest.post(f"/api/v1/jobs/{job_id}/cancel"),
                           "X-CSRF-Token")
    assert world.server.jobs.get(job_id).state is JobState.RUNNING
    made = rest.post("/api/v1/jobs", JOB, headers={"X-CSRF-Token": csrf})
    assert made.status == 201, made.body
    assert world.server.jobs.get(made.json()["job_id"]).owner == "mia"


def test_a_request_from_another_origin_is_refused(world: AuthzWorld) -> None:
    rest, csrf = _signed_in(world)
    _refused_and_unchanged(world, lambda: rest.post(
        "/api/v1/jobs", JOB, headers={"X-CSRF-Token": csrf, "Origin": "http://evil.example"}),
        "evil.example")
    own = f"http://127.0.0.1:{world.server.http_port}"
    assert rest.post("/api/v1/jobs", JOB, headers={"X-CSRF-Token": csrf,
                                                   "Origin": own}).status == 201


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "10.0.0.1",
                                  "127.0.0.1.evil.example"])
def test_a_host_that_is_not_loopback_is_refused_on_a_loopback_server(world: AuthzWorld,
                                                                      host: str) -> None:
    rest = world.http.rest("member")
    _refused_and_unchanged(world, lambda: rest.post("/api/v1/jobs", JOB,
                                                    headers={"Host": host}), "loopback")
    refused = rest.get("/api/v1/jobs", headers={"Host": host})
    assert refused.status == 403 and "loopback" in refused.error["message"]
    for name in ("localhost", f"localhost:{world.server.http_port}", "[::1]:80"):
        assert rest.get("/api/v1/whoami", headers={"Host": name}).status == 200


@pytest.mark.parametrize("token", ["ty_0123456789ab_" + "A" * 43, "nonsense",
                                   lambda w: w.http.tokens["job_token"]])
def test_signing_in_with_a_bad_token_is_401_and_sets_no_cookie(world: AuthzWorld,
                                                              token: Any) -> None:
    text = token(world) if callable(token) else token
    reply = Rest(world.server.http_port).post("/signin", {"token": text})
    assert reply.status == 401, reply.body
    assert reply.error["code"] == "UNAUTHENTICATED"
    assert not reply.headers.get_all("set-cookie")


def test_signing_in_sets_httponly_strict_cookies(world: AuthzWorld) -> None:
    reply = Rest(world.server.http_port).post("/signin", {"token": world.http.tokens["member"]})
    assert reply.status == 200
    cookies = {name: header.lower() for name, header in reply.cookies().items()}
    assert set(cookies) == {SESSION_COOKIE, CSRF_COOKIE}
    assert "httponly" in cookies[SESSION_COOKIE]
    assert "httponly" not in cookies[CSRF_COOKIE]  # the page's script sends it back
    for header in cookies.values():
        assert "samesite=strict" in header and "path=/" in header
    assert world.http.tokens["member"].lower() in cookies[SESSION_COOKIE]


@pytest.fixture(scope="module")
def single_user(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rest]:
    """A server with no users: every caller is its one user, with no token."""
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path_factory.mktemp("alone") / "data",
                                       port=0, http_port=0))
    srv.start()
    try:
        yield Rest(srv.http_port)
    finally:
        srv.stop(grace=0)


SOLO = {"name": "solo", "command": "sleep 30"}


def test_a_script_without_users_submits_with_no_token(single_user: Rest) -> None:
    made = single_user.post("/api/v1/jobs", SOLO)
    assert made.status == 201, made.body
    cancelled = single_user.post(f"/api/v1/jobs/{made.json()['job_id']}/cancel")
    assert cancelled.status == 200, cancelled.body


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
    {"Origin": "null"}, {"Cookie": f"{CSRF_COOKIE}=abc"},
    {"Cookie": f"{CSRF_COOKIE}=abc", "X-CSRF-Token": "abd"},
], ids=["other-origin", "cross-site-fetch", "opaque-origin", "cookie-no-header",
        "cookie-wrong-header"])
def test_a_browser_without_users_still_proves_its_origin(single_user: Rest,
                                                         headers: dict[str, str]) -> None:
    def jobs() -> list[str]:
        return [j["job_id"] for j in single_user.get("/api/v1/jobs?page_size=1000").json()[
            "jobs"]]

    before = jobs()
    reply = single_user.post("/api/v1/jobs", SOLO, headers=headers)
    assert reply.status == 403 and reply.error["code"] == "PERMISSION_DENIED"
    assert jobs() == before
    own = f"http://127.0.0.1:{single_user.port}"
    page = single_user.post("/api/v1/jobs", SOLO, headers={
        "Origin": own, "Cookie": f"{CSRF_COOKIE}=abc", "X-CSRF-Token": "abc"})
    assert page.status == 201, page.body  # the dashboard's own page, its cookie echoed
    single_user.post(f"/api/v1/jobs/{page.json()['job_id']}/cancel")
