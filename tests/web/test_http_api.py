"""The JSON API over a real uvicorn server on loopback, on SQLite and PostgreSQL: what each
route answers, in the shapes gRPC's messages have."""

from __future__ import annotations

import io
import json
import tarfile
import time
from collections.abc import Iterator
from datetime import datetime
from urllib.parse import quote

import pytest

from tests.conftest import DIALECTS
from tests.postgres import ThrowawayPostgres
from tests.web.httpworld import HttpWorld, serve
from tests.web.rest import events, job_count
from trainyard.domain.states import JobState

DONE = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
TRAINER = ('echo first; echo second; echo \'{"step": 1, "loss": %s}\' >> "$METRICS_PATH"; '
           'echo \'{"step": 2, "loss": %s}\' >> "$METRICS_PATH"; '
           'printf "%s" > "$MODEL_SAVE_PATH/weights.bin"; mkdir "$MODEL_SAVE_PATH/sub"; '
           'printf cfg > "$MODEL_SAVE_PATH/sub/config.txt"')


@pytest.fixture(scope="module", params=DIALECTS)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
          postgres: ThrowawayPostgres | None) -> Iterator[HttpWorld]:
    yield from serve(request.param, tmp_path_factory, postgres)


def trained(world: HttpWorld, name: str, loss: float) -> str:
    """A SUCCEEDED run of mia's on dataset 'digits' that saved model 'net'; its job id."""
    if name not in world.made:
        if "dataset" not in world.made:
            world.made["dataset"] = world.dataset("digits", {"a.txt": "1\n"})
        job_id = world.submit(name=name, model_name="net",
                              command=TRAINER % (loss * 2, loss, name),
                              dataset={"name": "digits", "version": world.made["dataset"]},
                              hyperparameters={"LR": str(loss)})
        world.wait(job_id, DONE)
        assert world.server.jobs.get(job_id).state is JobState.SUCCEEDED
        world.made[name] = job_id
    return world.made[name]


def test_submit_answers_201_and_a_retry_answers_the_same_job(world: HttpWorld) -> None:
    rest = world.rest()
    body = {"name": "once", "command": "true", "queue": "red-q",
            "client_request_id": "req-http-1", "resources": {"cpus": 0.5, "memory_mb": 64}}
    before = job_count(world.server)
    first = rest.post("/api/v1/jobs", body)
    assert first.status == 201 and first.json()["existing"] is False
    again = rest.post("/api/v1/jobs", body)
    assert again.status == 200
    assert again.json() == {"job_id": first.json()["job_id"], "existing": True}
    assert job_count(world.server) == before + 1
    job = world.server.jobs.get(first.json()["job_id"])
    assert job.owner == "mia" and job.spec.resources.cpus == 0.5


def test_status_has_every_transition(world: HttpWorld) -> None:
    job_id = world.submit(name="status", command="echo hi")
    world.wait(job_id, DONE)
    reply = world.rest().get(f"/api/v1/jobs/{job_id}")
    assert reply.status == 200
    status = reply.json()
    assert status["job_id"] == job_id and status["state"] == "SUCCEEDED"
    assert status["exit_code"] == 0
    assert [t["to_state"] for t in status["transitions"]] == [
        "WAITING", "LAUNCHING", "RUNNING", "SUCCEEDED"]
    assert status["transitions"][0]["from_state"] is None


def test_submit_takes_retries_and_limits_and_refuses_bad_ones(world: HttpWorld) -> None:
    rest = world.rest()
    job_id = world.submit(name="limited", command="sleep 30", max_attempts=2,
                          retry_exit_codes=[75], time_limit_seconds=3600,
                          pending_timeout_seconds=60)
    spec = rest.get(f"/api/v1/jobs/{job_id}").json()["spec"]
    assert (spec["max_attempts"], spec["retry_exit_codes"], spec["time_limit_seconds"],
            spec["pending_timeout_seconds"]) == (2, [75], 3600, 60)
    rest.post(f"/api/v1/jobs/{job_id}/cancel", {})
    before = job_count(world.server)
    for field, value, named in (("time_limit_seconds", -1, "time_limit"),
                                ("max_attempts", 101, "max_attempts"),
                                ("retry_exit_codes", [0], "retry_exit_codes")):
        reply = rest.post("/api/v1/jobs", {"name": "bad", "command": "true",
                                           "queue": "red-q", field: value})
        assert reply.status == 400, (field, reply.body)
        assert reply.json()["error"]["message"].startswith(f"{named}: "), reply.body
    assert job_count(world.server) == before


def test_list_filters_and_pages(world: HttpWorld) -> None:
    rest = world.rest()
    ids = [world.submit(name=f"listed-{i}", labels={"suite": "paging", "n": str(i)})
           for i in range(5)]
    for job_id in ids:
        world.wait(job_id, DONE)
    tagged = rest.get("/api/v1/jobs?labels=suite=paging&states=SUCCEEDED&queue=red-q"
                      "&page_size=100").json()
    assert {j["job_id"] for j in tagged["jobs"]} == set(ids)
    assert all(j["state"] == "SUCCEEDED" and j["queue"] == "red-q" for j in tagged["jobs"])
    one = rest.get("/api/v1/jobs?labels=suite=paging&labels=n=3").json()["jobs"]
    assert [j["job_id"] for j in one] == [ids[3]]
    assert rest.get("/api/v1/jobs?labels=suite=paging&states=WAITING&states=RUNNING"
                    ).json()["jobs"] == []
    assert rest.get("/api/v1/jobs?labels=suite=paging&queue=default").json()["jobs"] == []
    seen: list[str] = []
    token = ""
    while True:
        page = rest.get(f"/api/v1/jobs?labels=suite=paging&page_size=2"
                        f"&page_token={quote(token)}").json()
        assert len(page["jobs"]) <= 2
        seen += [j["job_id"] for j in page["jobs"]]
        token = page["next_page_token"]
        if not token:
            break
    assert seen == list(reversed(ids))  # newest first, each once


def test_cancel_and_cancelling_a_finished_job_is_409(world: HttpWorld) -> None:
    rest = world.rest()
    job_id = world.submit(name="long", command="sleep 60")
    world.wait(job_id, {JobState.RUNNING})
    reply = rest.post(f"/api/v1/jobs/{job_id}/cancel")
    assert reply.status == 200, reply.body
    world.wait(job_id, {JobState.CANCELLED})
    again = rest.post(f"/api/v1/jobs/{job_id}/cancel")
    assert again.status == 409
    assert again.error["code"] == "FAILED_PRECONDITION"
    assert "already CANCELLED" in again.error["message"]
    assert world.server.jobs.get(job_id).state is JobState.CANCELLED


def test_watch_streams_each_transition_as_an_event(world: HttpWorld) -> None:
    job_id = world.submit(name="watched", command="sleep 0.5")
    reply = world.rest().get(f"/api/v1/jobs/{job_id}/events")
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    got = events(reply.body)
    assert [e.kind for e in got][-1] == "end"
    moves = [e for e in got if e.kind == "transition"]
    assert [e.data["transition"]["to_state"] for e in moves] == [
        "WAITING", "LAUNCHING", "RUNNING", "SUCCEEDED"]
    assert [e.id for e in moves] == ["1", "2", "3", "4"]
    assert moves[-1].data["final"] is True and moves[0].data["job_id"] == job_id
    resumed = events(world.rest().get(f"/api/v1/jobs/{job_id}/events",
                                      headers={"Last-Event-ID": "2"}).body)
    assert [e.id for e in resumed if e.kind == "transition"] == ["3", "4"]


def test_logs_stream_as_events_and_resume_from_the_last_event_id(world: HttpWorld) -> None:
    job_id = world.submit(name="chatty", command="echo one; sleep 0.3; echo two; echo three")
    followed = events(world.rest().get(f"/api/v1/jobs/{job_id}/logs?follow=true").body)
    assert followed[-1].kind == "end"
    logs = [e for e in followed if e.kind == "log"]
    assert "".join(e.data["text"] for e in logs) == "one\ntwo\nthree\n"
    for event in logs:  # each id is the offset after its text
        assert int(event.id) == event.data["offset"] + len(event.data["text"].encode())
    resumed = events(world.rest().get(f"/api/v1/jobs/{job_id}/logs",
                                      headers={"Last-Event-ID": "4"}).body)
    assert "".join(e.data["text"] for e in resumed if e.kind == "log") == "two\nthree\n"
    assert resumed[0].data["offset"] == 4
    # An explicit offset wins over the header.
    chosen = events(world.rest().get(f"/api/v1/jobs/{job_id}/logs?offset=8",
                                     headers={"Last-Event-ID": "4"}).body)
    assert "".join(e.data["text"] for e in chosen if e.kind == "log") == "three\n"


def test_a_stream_refused_before_it_starts_is_a_json_error(world: HttpWorld) -> None:
    for path in ("/api/v1/jobs/nope/logs", "/api/v1/jobs/nope/events"):
        reply = world.rest().get(path)
        assert reply.status == 404 and reply.error["code"] == "NOT_FOUND"
    other = world.submit(name="private", command="true")
    refused = world.rest("other_team").get(f"/api/v1/jobs/{other}/logs")
    assert refused.status == 403 and refused.error["code"] == "PERMISSION_DENIED"


def test_sweeps_and_queues(world: HttpWorld) -> None:
    rest = world.rest()
    before = job_count(world.server)
    reply = rest.post("/api/v1/sweeps", {
        "template": {"name": "sw", "command": "true", "queue": "red-q"},
        "parameters": [{"name": "LR", "values": ["0.1", "0.2", "0.3"]}]})
    assert reply.status == 201, reply.body
    sweep = reply.json()
    assert sweep["sweep_id"] and len(sweep["job_ids"]) == 3
    assert job_count(world.server) == before + 3
    assert {world.server.jobs.get(j).spec.hyperparameters["LR"] for j in sweep["job_ids"]} \
        == {"0.1", "0.2", "0.3"}
    queues = rest.get("/api/v1/queues").json()
    red = next(q for q in queues["queues"] if q["name"] == "red-q")
    assert red["teams"] == ["red"]
    assert [p["name"] for p in queues["pools"]] == ["local"]
    assert {t["name"] for t in queues["teams"]} == {"red", "blue"}
    assert rest.get("/api/v1/whoami").json()["user"] == "mia"


def test_queues_show_each_queues_fair_share_standing(world: HttpWorld) -> None:
    """The usage the tracker saved, and that over the queue's weight (lowest goes next)."""
    saved_at = time.time()
    world.server.usage.save({"red-q": 7200.0}, saved_at)
    queues = world.rest().get("/api/v1/queues").json()
    red = next(q for q in queues["queues"] if q["name"] == "red-q")
    assert red["fair_share_usage"] == 7200.0
    assert red["fair_share"] == pytest.approx(7200.0 / red["weight"])
    others = [q for q in queues["queues"] if q["name"] != "red-q"]
    assert others and all(q["fair_share"] == 0.0 for q in others)
    assert abs(datetime.fromisoformat(queues["fair_share_as_of"]).timestamp() - saved_at) < 1


def test_runs_list_filter_show_compare_and_reproduce(world: HttpWorld) -> None:
    rest = world.rest()
    good, poor = trained(world, "good", 0.25), trained(world, "poor", 4.0)
    listed = rest.get("/api/v1/runs?metrics=loss<1").json()["runs"]
    assert f"{good}-1" in {r["run_id"] for r in listed}
    assert f"{poor}-1" not in {r["run_id"] for r in listed}
    run = rest.get(f"/api/v1/runs/{good}-1").json()
    assert run["job_id"] == good and run["state"] == "SUCCEEDED" and run["owner"] == "mia"
    assert run["spec"]["hyperparameters"] == {"LR": "0.25"}
    compared = rest.get(f"/api/v1/runs/compare?run_ids={good}-1&run_ids={poor}-1"
                        "&include_series=true").json()
    assert [r["run_id"] for r in compared["runs"]] == [f"{good}-1", f"{poor}-1"]
    assert json.dumps(compared).count('"loss"') >= 2  # each run's curve or summary
    before = job_count(world.server)
    again = rest.post(f"/api/v1/runs/{good}-1/reproduce")
    assert again.status == 201, again.body
    assert again.json()["reproduces"] == f"{good}-1"
    assert again.json()["spec"]["dataset"] == run["spec"]["dataset"]
    assert job_count(world.server) == before + 1
    world.wait(again.json()["job_id"], DONE)


def test_models_list_show_alias_lineage_and_download(world: HttpWorld) -> None:
    rest = world.rest()
    job_id = trained(world, "good", 0.25)
    models = rest.get("/api/v1/models").json()["models"]
    net = next(m for m in models if m["name"] == "net")
    assert net["latest_version"] >= 1
    model = rest.get("/api/v1/models/net").json()
    version = next(v["version"] for v in model["versions"] if v["run_id"] == f"{job_id}-1")
    alias = rest.put("/api/v1/models/net/aliases/production", {"version": version})
    assert alias.status == 200, alias.body
    assert alias.json()["alias"] == "production" and alias.json()["version"] == version
    shown = rest.get("/api/v1/models/net").json()
    assert shown["aliases"]["production"] == version
    assert any(h["alias"] == "production" for h in shown["alias_history"])
    lineage = rest.get("/api/v1/models/net/lineage?alias=production").json()
    assert lineage["run_id"] == f"{job_id}-1"
    assert lineage["dataset"]["version"] == world.made["dataset"]
    assert lineage["run"]["spec"]["hyperparameters"] == {"LR": "0.25"}
    reply = rest.get("/api/v1/models/net/download?alias=production")
    assert reply.status == 200 and reply.headers["content-type"] == "application/x-tar"
    assert f"net-v{version}.tar" in reply.headers["content-disposition"]
    with tarfile.open(fileobj=io.BytesIO(reply.body)) as archive:
        files = {m.name: archive.extractfile(m).read()  # type: ignore[union-attr]
                 for m in archive.getmembers() if m.isfile()}
    assert files == {"weights.bin": b"good", "sub/config.txt": b"cfg"}
    by_version = rest.get(f"/api/v1/models/net/download?version={version}")
    assert by_version.body == reply.body  # the same bytes each time: dated at registration
    with tarfile.open(fileobj=io.BytesIO(reply.body)) as archive:
        dates = {member.mtime for member in archive.getmembers()}
    registered = next(v for v in model["versions"] if v["version"] == version)["created_at"]
    assert dates == {int(datetime.fromisoformat(registered).timestamp())}
    missing = rest.get("/api/v1/models/net/download?version=999")
    assert missing.status == 404 and missing.error["code"] == "NOT_FOUND"


def test_datasets_list_and_lineage(world: HttpWorld) -> None:
    rest = world.rest()
    job_id = trained(world, "good", 0.25)
    version = world.made["dataset"]
    datasets = rest.get("/api/v1/datasets").json()["datasets"]
    digits = next(d for d in datasets if d["name"] == "digits" and d["version"] == version)
    assert f"{job_id}-1" in digits["run_ids"]
    lineage = rest.get(f"/api/v1/datasets/digits/versions/{version}/lineage").json()
    assert lineage["dataset"]["version"] == version
    assert any(m["model_name"] == "net" and m["run_id"] == f"{job_id}-1"
               for m in lineage["models"])


def test_the_http_socket_says_tcp_so_each_connection_gets_nodelay(world: HttpWorld) -> None:
    """asyncio sets TCP_NODELAY only on sockets made for IPPROTO_TCP; without it a keep-alive
    client waits ~40 ms (its delayed ACK) for each reply's body."""
    import socket

    listening = world.server.http._socket  # type: ignore[union-attr]
    assert listening.proto == socket.IPPROTO_TCP
    rest = world.rest()
    assert rest.get("/api/v1/whoami").status == 200


def test_a_submit_may_wait_for_jobs_and_its_status_shows_them(world: HttpWorld) -> None:
    rest = world.rest()
    first = world.submit(name="first", command="exit 1")
    world.wait(first, DONE)
    second = world.submit(name="second", after=[{"job_id": first, "condition": "finished"}])
    world.wait(second, DONE)
    shown = rest.get(f"/api/v1/jobs/{second}").json()
    assert shown["state"] == "SUCCEEDED"
    assert shown["spec"]["after"] == [{"job_id": first, "condition": "finished",
                                       "state": "FAILED", "met": True}]
    before = job_count(world.server)
    theirs = world.submit("other_team", name="theirs", queue="default")
    for after, status, says in (
            ([{"job_id": "ffffffff"}], 404, "after: job 'ffffffff' not found"),
            ([{"job_id": theirs}], 404, f"after: job '{theirs}' not found"),  # not visible
            ([{"job_id": first, "condition": "often"}], 400, "'often' is not a condition"),
            ([{"job_id": first}], 409, f"job {first} already ended FAILED")):
        reply = rest.post("/api/v1/jobs", {"name": "refused", "command": "true",
                                           "queue": "red-q", "after": after})
        assert reply.status == status and says in reply.error["message"], reply.body
    assert job_count(world.server) == before + 1  # theirs alone
