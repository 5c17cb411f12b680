"""A real TrainyardServer in-process, on a throwaway data directory, for live scenarios."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainyard.auth.policy import LOCAL
from trainyard.domain.errors import TrainyardError
from trainyard.domain.retry import Backoff
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.tracker import TrackerConfig
from trainyard.tracker.forecasts import ForecastConfig

# No background forecast: tests of predicted starts write them, or ask for one.
FAST = TrackerConfig(active_interval=0.1, idle_interval=0.2, cancel_grace=2.0,
                     retry_backoff=Backoff(base_s=0.5, cap_s=2.0),
                     forecasts=ForecastConfig(interval_s=0))
ACTIVE = (JobState.WAITING, JobState.LAUNCHING, JobState.RUNNING)


def make_server(tmp_path: Path, database_url: str, policy: str | None = None,
                tls: tuple[Path, Path] | None = None, **tracker: Any) -> TrainyardServer:
    """Not started; with `policy`, the text of its policy file (TOML); with `tls`, (PEM
    certificate, PEM key) it serves TLS with."""
    policy_file = None
    if policy is not None:
        policy_file = tmp_path / "policy.toml"
        policy_file.write_text(policy)
    return TrainyardServer(ServerConfig(
        data_dir=tmp_path / "data", database_url=database_url, port=0,
        policy_file=policy_file, tracker=replace(FAST, **tracker),
        tls_cert=tls[0] if tls else None, tls_key=tls[1] if tls else None))


@contextlib.contextmanager
def live_server(tmp_path: Path, database_url: str, policy: str | None = None,
                tls: tuple[Path, Path] | None = None,
                **tracker: Any) -> Iterator[TrainyardServer]:
    """Started; at the end its active jobs are cancelled and it stops."""
    srv = make_server(tmp_path, database_url, policy, tls, **tracker)
    srv.start()
    try:
        yield srv
    finally:
        for job in srv.jobs.in_states(ACTIVE):
            with contextlib.suppress(TrainyardError):  # it may have ended meanwhile
                srv.service.cancel(LOCAL, job.id)
        srv.stop(grace=0)


def wait_for(srv: TrainyardServer, job_id: str, states: set[JobState],
             timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while srv.jobs.get(job_id).state not in states:
        assert time.monotonic() < deadline, srv.jobs.get(job_id)
        time.sleep(0.05)


def wait_until(check: Callable[[], object], timeout: float = 30, what: str = "condition"
               ) -> None:
    """Until `check()` is true; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
