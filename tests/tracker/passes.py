"""A real server whose tracker runs one pass at a time (no background thread), for tests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.tracker import TrackerConfig


@contextmanager
def stepped_server(tmp_path: Path, database_url: str,
                   max_concurrent: int = 1) -> Iterator[TrainyardServer]:
    """Not started: the test runs each pass itself."""
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", database_url=database_url,
                                       tracker=TrackerConfig(max_concurrent=max_concurrent)))
    try:
        yield srv
    finally:
        srv.tracker.stop()
        srv.db.close()


def step(srv: TrainyardServer) -> None:
    """One pass, and the launches it started."""
    srv.tracker.run_once()
    assert srv.tracker.wait_for_launches()


def run_to_end(srv: TrainyardServer, job_id: str, timeout: float = 15) -> JobState:
    """Passes until the job is final; its final state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        step(srv)
        state = srv.jobs.get(job_id).state
        if state.is_final():
            return state
        time.sleep(0.02)
    raise AssertionError(f"{job_id} still {state}")
