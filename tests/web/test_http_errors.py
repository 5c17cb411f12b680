"""Every kind of request the JSON API refuses, one case each: the status gRPC's code maps to,
the one JSON error body naming the field, never a traceback, and nothing changed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import DIALECTS
from tests.postgres import ThrowawayPostgres
from tests.web.httpworld import HttpWorld, serve
from trainyard.domain.states import JobState


@pytest.fixture(scope="module", params=DIALECTS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
          postgres: ThrowawayPostgres | None) -> Iterator[HttpWorld]:
    for started in serve(request.param, tmp_path_factory, postgres):
        done = started.submit(name="done", command='printf w > "$MODEL_SAVE_PATH/w"',
                              model_name="net")
        started.wait(done, {JobState.SUCCEEDED})
        started.made["done"] = done
        yield started


@dataclass(frozen=True)
class Bad:
    method: str
    path: str  # "{done}": a job of mia's that SUCCEEDED and saved model "net" version 1
    body: Any = None
    raw: bytes | None = None
    caller: str | None = "member"
    field: str = ""  # what the message must name, as "FIELD: ..."


JOB = {"name": "j", "command": "true", "queue": "red-q"}
WRONG_SHAPE = {  # 422: the body does not match the request message's schema
    "a field of the wrong type": Bad("POST", "/jobs", {**JOB, "name": 5}, field="name"),
    "an unknown key": Bad("POST", "/jobs", {**JOB, "nme": "j"}, field="nme"),
    "a nested field of the wrong type": Bad(
        "POST", "/jobs", {**JOB, "resources": {"cpus": "many"}}, field="resources.cpus"),
    "an unknown nested key": Bad("POST", "/jobs", {**JOB, "resources": {"cpu": 1}},
                                 field="resources.cpu"),
    "a list for a map": Bad("POST", "/jobs", {**JOB, "labels": ["a"]}, field="labels"),
    "a map value of the wrong type": Bad("POST", "/jobs", {**JOB, "labels": {"a": [1]}},
                                         field="labels.a"),
    "a string for a list": Bad("PUT", "/admin/queues/q/access",
                               {"teams": "blue"}, caller="admin", field="teams"),
    "a body that is a list": Bad("POST", "/jobs", [JOB], field="body"),
    "a body that is a string": Bad("POST", "/jobs", "job", field="body"),
    "a sweep's template key": Bad("POST", "/sweeps", {"template": {**JOB, "bogus": 1}},
                                  field="template.bogus"),
    "an alias's version as text": Bad("PUT", "/models/net/aliases/prod", {"version": "one"},
                                      field="version"),
    "a boolean that is not one": Bad("POST", "/admin/users", {"name": "u", "admin": "maybe"},
                                     caller="admin", field="admin"),
}
BAD_VALUE = {  # 400: the shape is right, a value is not
    "negative cpus": Bad("POST", "/jobs", {**JOB, "resources": {"cpus": -1}},
                         field="resources.cpus"),
    "an empty name": Bad("POST", "/jobs", {**JOB, "name": ""}, field="name"),
    "a reserved hyperparameter": Bad("POST", "/jobs", {**JOB, "hyperparameters": {
        "JOB_ID": "x"}}, field="hyperparameters.JOB_ID"),
    "a bad state name": Bad("GET", "/jobs?states=BOGUS", field="states"),
    "an UNSPECIFIED state": Bad("GET", "/jobs?states=JOB_STATE_UNSPECIFIED", field="states"),
    "a bad page_token": Bad("GET", "/jobs?page_token=zzz", field="page_token"),
    "a page_size that is no number": Bad("GET", "/jobs?page_size=ten", field="page_size"),
    "a negative page_size": Bad("GET", "/jobs?page_size=-1", field="page_size"),
    "an unknown query parameter": Bad("GET", "/jobs?colour=red", field="colour"),
    "a label that is not KEY=VALUE": Bad("GET", "/jobs?labels=nolabel", field="labels"),
    "a field given twice": Bad("GET", "/jobs?queue=a&queue=b", field="queue"),
    "a boolean that is not one": Bad("GET", "/jobs/{done}/logs?follow=maybe", field="follow"),
    "a metric threshold that is no comparison": Bad("GET", "/runs?metrics=loss~1",
                                                    field="metrics"),
    "a number that is not finite": Bad("GET", "/runs?metrics=loss<nan", field="metrics"),
    "a path and a body that disagree": Bad("PUT", "/models/net/aliases/prod",
                                           {"name": "other", "version": 1}, field="name"),
    "a job id in the body and another in the path": Bad(
        "POST", "/jobs/{done}/cancel", {"job_id": "other"}, field="job_id"),
    "invalid JSON": Bad("POST", "/jobs", raw=b'{"name": "j",', field="body"),
    "a log offset past any file": Bad("GET", "/jobs/{done}/logs?offset=9223372036854775807",
                                      field="offset"),
    "a body route's field in the query": Bad("POST", "/jobs?name=q&command=true",
                                             field="name"),
    "a body that is not JSON at all": Bad("POST", "/jobs", raw=b"name=j", field="body"),
}
REFUSED = {  # 401, 403, 404, 405, 409 and their codes
    "no token": (Bad("GET", "/jobs", caller=None), 401, "UNAUTHENTICATED"),
    "no token for a write": (Bad("POST", "/jobs", JOB, caller=None), 401, "UNAUTHENTICATED"),
    "a member at an admin route": (Bad("POST", "/admin/users", {"name": "u"}), 403,
                                   "PERMISSION_DENIED"),
    "a read-only token writing": (Bad("POST", "/jobs", JOB, caller="read_only"), 403,
                                  "PERMISSION_DENIED"),
    "a queue the caller may not use": (Bad("POST", "/jobs", JOB, caller="other_team"), 403,
                                       "PERMISSION_DENIED"),
    "another team's job": (Bad("POST", "/jobs/{done}/cancel", caller="other_team"), 403,
                           "PERMISSION_DENIED"),
    "an unknown job": (Bad("GET", "/jobs/nope"), 404, "NOT_FOUND"),
    "cancelling an unknown job": (Bad("POST", "/jobs/nope/cancel"), 404, "NOT_FOUND"),
    "an unknown run": (Bad("GET", "/runs/nope-1"), 404, "NOT_FOUND"),
    "an unknown model": (Bad("GET", "/models/nope"), 404, "NOT_FOUND"),
    "an alias to a version that is not there": (Bad("PUT", "/models/net/aliases/prod",
                                                     {"version": 99}), 404, "NOT_FOUND"),
    "an unknown route": (Bad("GET", "/nothing-here"), 404, "NOT_FOUND"),
    "a method the route does not take": (Bad("DELETE", "/jobs"), 405, "METHOD_NOT_ALLOWED"),
    "cancelling a finished job": (Bad("POST", "/jobs/{done}/cancel"), 409,
                                  "FAILED_PRECONDITION"),
    "a body over 4 MiB": (Bad("POST", "/jobs", raw=b" " * (4 * 1024 * 1024 + 1)), 413,
                          "PAYLOAD_TOO_LARGE"),
}
CASES = ([(name, bad, 422, "INVALID_ARGUMENT") for name, bad in WRONG_SHAPE.items()]
         + [(name, bad, 400, "INVALID_ARGUMENT") for name, bad in BAD_VALUE.items()]
         + [(name, bad, status, code) for name, (bad, status, code) in REFUSED.items()])


@pytest.mark.parametrize(("bad", "status", "code"), [c[1:] for c in CASES],
                         ids=[f"{c[2]}-{c[0]}" for c in CASES])
def test_a_refused_request_says_why_and_changes_nothing(world: HttpWorld, bad: Bad,
                                                       status: int, code: str) -> None:
    done = world.made["done"]
    before = _footprint(world)
    path = "/api/v1" + bad.path.replace("{done}", done)
    reply = world.rest(bad.caller).call(bad.method, path, bad.body, raw=bad.raw)
    assert reply.status == status, reply.body[:300]
    assert reply.headers["content-type"] == "application/json"
    error = reply.error
    assert error["code"] == code
    if bad.field:
        assert error["message"].startswith(f"{bad.field}:") or \
            f"; {bad.field}:" in error["message"], error["message"]
    if status == 422:
        assert bad.field in {f["field"] for f in error["fields"]}
    assert _footprint(world) == before


def _footprint(world: HttpWorld) -> tuple[Any, ...]:
    """What the refused requests above could have changed: jobs and their states, users,
    queue access, model aliases."""
    admin = world.rest("admin")
    jobs = admin.get("/api/v1/jobs?page_size=1000").json()["jobs"]
    return (sorted((j["job_id"], j["state"]) for j in jobs),
            admin.get("/api/v1/admin/users").json(),
            admin.get("/api/v1/admin/queues/access").json(),
            admin.get("/api/v1/models/net").json()["aliases"])
