"""A live server with its HTTP port for the JSON API's tests, on SQLite or PostgreSQL:
root (admin); mia and max in team red, otto in team blue; red-q takes team red. A test
module makes its own module-scoped fixture of `serve`."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import missing
from tests.liveserver import ACTIVE, FAST
from tests.postgres import ThrowawayPostgres
from tests.services.conftest import ROOT, add_people
from tests.web.rest import Rest
from trainyard.domain.errors import TrainyardError
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.store.db import sqlite_url


@dataclass
class HttpWorld:
    server: TrainyardServer
    tokens: dict[str, str]  # caller -> token
    tmp: Path
    made: dict[str, str] = field(default_factory=dict)  # what several tests share, made once
    _made_dirs: Iterator[int] = field(default_factory=itertools.count)

    def rest(self, caller: str | None = "member") -> Rest:
        return Rest(self.server.http_port, self.tokens[caller] if caller else None)

    def wait(self, job_id: str, states: set[JobState], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.server.jobs.get(job_id).state not in states:
            assert time.monotonic() < deadline, self.server.jobs.get(job_id)
            time.sleep(0.05)

    def submit(self, caller: str = "member", **fields: object) -> str:
        """A job of the caller's in red-q, by the JSON API; its id."""
        body = {"name": "job", "command": "true", "queue": "red-q", **fields}
        reply = self.rest(caller).post("/api/v1/jobs", body)
        assert reply.status == 201, reply.body
        return str(reply.json()["job_id"])

    def dataset(self, name: str, files: dict[str, str]) -> str:
        """A dataset version of these files, registered by root; its version."""
        src = self.tmp / f"src-{name}-{next(self._made_dirs)}"
        src.mkdir(parents=True)
        for rel, text in files.items():
            (src / rel).write_text(text)
        return self.server.datasets.register(ROOT, name, str(src))[0].version


def _start(tmp: Path, database_url: str, **tracker: Any) -> HttpWorld:
    srv = TrainyardServer(ServerConfig(
        data_dir=tmp / "data", database_url=database_url, port=0, http_port=0,
        tracker=replace(FAST, **{"max_concurrent": 8, **tracker})))
    add_people(srv.access)

    def token(user: str, read_only: bool = False) -> str:
        return srv.access.create_token(ROOT, user, expires_in=0.0, read_only=read_only).token

    tokens = {"admin": token("root"), "member": token("mia"), "teammate": token("max"),
              "other_team": token("otto"), "read_only": token("mia", read_only=True)}
    srv.start()
    return HttpWorld(srv, tokens, tmp)


def _stop(world: HttpWorld) -> None:
    for job in world.server.jobs.in_states(ACTIVE):
        with contextlib.suppress(TrainyardError):  # it may have ended meanwhile
            world.server.service.cancel(ROOT, job.id)
    world.server.stop(grace=0)


def serve(dialect: str, tmp_path_factory: pytest.TempPathFactory,
          postgres: ThrowawayPostgres | None, **tracker: Any) -> Iterator[HttpWorld]:
    """A started world on `dialect` ("sqlite" or "postgresql"), stopped at the end."""
    tmp = tmp_path_factory.mktemp(f"http-{dialect}")
    if dialect == "sqlite":
        url = sqlite_url(tmp)
    elif postgres is None:
        missing("PostgreSQL (initdb/pg_ctl)")
        raise AssertionError("unreachable")
    else:
        url = postgres.new_database()
    world = _start(tmp, url, **tracker)
    try:
        yield world
    finally:
        _stop(world)
