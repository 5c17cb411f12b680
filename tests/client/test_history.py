"""`Client.export_history` against a real server: the first page read at once with the
policy in force, the others as the jobs are iterated, every figure as the store has it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.liveserver import live_server
from tests.store.test_history import finished
from trainyard.client import Client
from trainyard.domain.spec import Resources


def test_the_jobs_come_page_by_page_in_submit_order(tmp_path: Path) -> None:
    with live_server(tmp_path, "") as srv:
        ids = [finished(srv.jobs, f"j{i}", 1000.0 + i, 1010.0 + i, 1030.0 + 2 * i,
                        resources=Resources(cpus=2, memory_mb=100, gpus=0), workers=2)
               for i in range(5)]
        with Client(f"127.0.0.1:{srv.port}") as client:
            history = client.export_history(page_size=2)
            assert (history.total, history.first_submit) == (5, 1000.0)
            assert history.policy.text == "" and history.policy.max_running == 4
            assert [p.name for p in history.policy.pools] == ["local"]
            jobs = list(history.jobs)
            recent = list(client.export_history(1003.0, page_size=1).jobs)
    assert [job.job_id for job in jobs] == ids
    job = jobs[4]
    assert (job.name, job.owner, job.team, job.queue, job.state) == \
        ("j4", "ann", "vision", "default", "SUCCEEDED")
    assert (job.cpus, job.memory_mb, job.gpus, job.attempts) == (4.0, 200, 0, 1)
    assert (job.submitted_at, job.ended_at, job.ran_s) == (1004.0, 1038.0, 24.0)
    assert job.launch_s == pytest.approx(0.5)
    assert (job.jct_s, job.wait_s) == (34.0, 10.0)
    assert [j.job_id for j in recent] == ids[3:]
