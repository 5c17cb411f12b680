"""The algorithm routes of the JSON API over a real server on loopback, on SQLite and
PostgreSQL: list, show with versions and alias history, move an alias, delete; mistakes as
the error body, naming the field. (Registering uploads a directory: gRPC, the SDK and the CLI
do it.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.algorithm_code import register_code
from tests.conftest import DIALECTS
from tests.postgres import ThrowawayPostgres
from tests.web.httpworld import HttpWorld, serve


@pytest.fixture(scope="module", params=DIALECTS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
          postgres: ThrowawayPostgres | None) -> Iterator[HttpWorld]:
    yield from serve(request.param, tmp_path_factory, postgres)


def test_list_show_alias_and_delete(world: HttpWorld) -> None:
    first = register_code(world.server, "http-algo", "1", description="over HTTP")
    register_code(world.server, "http-algo", "2")
    rest = world.rest()
    listed = rest.get("/api/v1/algorithms")
    assert listed.status == 200
    [summary] = [a for a in listed.json()["algorithms"] if a["name"] == "http-algo"]
    assert (summary["versions"], summary["latest_version"]) == (2, 2)

    moved = rest.put("/api/v1/algorithms/http-algo/aliases/production", {"version": 1})
    assert moved.status == 200
    assert moved.json() == {"name": "http-algo", "alias": "production", "version": 1,
                            "previous_version": 0}
    shown = rest.get("/api/v1/algorithms/http-algo").json()
    assert [v["version"] for v in shown["versions"]] == [1, 2]
    assert shown["versions"][0]["code_hash"] == first.code_hash
    assert shown["versions"][0]["description"] == "over HTTP"
    assert shown["aliases"] == {"production": 1}
    assert [c["to_version"] for c in shown["alias_history"]] == [1]

    deleted = world.rest().call("DELETE", "/api/v1/algorithms/http-algo/versions/2")
    assert deleted.status == 200 and deleted.json()["algorithm"]["version"] == 2
    assert [v["version"] for v in rest.get("/api/v1/algorithms/http-algo").json()["versions"]
            ] == [1]


def test_mistakes_are_the_error_body_naming_the_field(world: HttpWorld) -> None:
    register_code(world.server, "http-bad", "1")
    rest = world.rest()
    assert rest.get("/api/v1/algorithms/never-registered").error["status"] == 404
    bad_alias = rest.put("/api/v1/algorithms/http-bad/aliases/123", {"version": 1}).error
    assert bad_alias["status"] == 400 and bad_alias["message"].startswith("alias:")
    no_version = rest.call("DELETE", "/api/v1/algorithms/http-bad/versions/0").error
    assert no_version["status"] == 400 and no_version["message"].startswith("version:")
    assert rest.call("DELETE", "/api/v1/algorithms/http-bad/versions/x").error["status"] == 400
    read_only = world.rest("read_only").put("/api/v1/algorithms/http-bad/aliases/prod",
                                            {"version": 1})
    assert read_only.error["status"] == 403
    assert rest.get("/api/v1/algorithms/http-bad").json()["aliases"] == {}


def test_a_job_is_submitted_by_handle_over_http(world: HttpWorld) -> None:
    version = register_code(world.server, "http-run", "1")
    rest = world.rest()
    rest.put("/api/v1/algorithms/http-run/aliases/production", {"version": 1})
    made = rest.post("/api/v1/jobs", {"name": "by-handle", "algorithm": "http-run@production",
                                      "hyperparameters": {"LR": "0.1"}})
    assert made.status == 201, made.body
    status = rest.get(f"/api/v1/jobs/{made.json()['job_id']}").json()
    assert status["spec"]["algorithm"] == {"name": "http-run", "version": 1, "alias": ""}
    assert status["spec"]["code_hash"] == version.code_hash
    both = rest.post("/api/v1/jobs", {"name": "both", "algorithm": "http-run",
                                      "command": "true"}).error
    assert both["status"] == 400 and both["message"].startswith("command:")
    unknown = rest.post("/api/v1/jobs", {"name": "nope", "algorithm": "never"}).error
    assert unknown["status"] == 400 and unknown["message"].startswith("algorithm:")
