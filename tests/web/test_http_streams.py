"""Open streams and a stopping server: each stream is told to end, and ends with its `end`
event rather than being cut when the shutdown's grace runs out."""

from __future__ import annotations

import http.client
import threading
import time
from pathlib import Path

from tests.web.httpworld import _start
from tests.web.rest import events
from trainyard.domain.states import JobState
from trainyard.store.db import sqlite_url


def test_a_stopping_server_ends_its_open_streams(tmp_path: Path) -> None:
    world = _start(tmp_path, sqlite_url(tmp_path))
    job_id = world.submit(command="echo started; sleep 5")
    world.wait(job_id, {JobState.RUNNING})
    bodies: dict[str, bytes] = {}
    opened = threading.Semaphore(0)

    def read(name: str, path: str) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", world.server.http_port, timeout=30)
        conn.request("GET", path, headers={"Authorization": f"Bearer {world.tokens['member']}"})
        response = conn.getresponse()  # the headers: the stream is open
        opened.release()
        bodies[name] = response.read()
        conn.close()

    readers = [threading.Thread(target=read, args=(name, f"/api/v1/jobs/{job_id}/{path}"))
               for name, path in (("logs", "logs?follow=true"), ("events", "events"))]
    for reader in readers:
        reader.start()
    for _ in readers:
        assert opened.acquire(timeout=30)
    time.sleep(0.5)  # both wait for more
    world.server.stop(grace=0)
    for reader in readers:
        reader.join(30)
        assert not reader.is_alive()
    for name in ("logs", "events"):
        kinds = [e.kind for e in events(bodies[name])]
        assert kinds and kinds[-1] == "end", (name, bodies[name][-300:])
