"""Debian's Prometheus, started on loopback, scrapes a real server's /metrics every second;
its own query API then answers for each series after a few jobs ran."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import missing
from tests.web.metricserver import metrics_server, run_jobs

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
READY_TIMEOUT_S = 30.0
QUERY_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def prometheus(tmp_path: Path, target_port: int) -> Iterator[str]:
    """A Prometheus scraping 127.0.0.1:target_port every second; yields its base URL."""
    if not Path(PROMETHEUS).exists():
        missing("prometheus (Debian's prometheus package)")
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({  # JSON is YAML
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "trainyard", "scrape_interval": "1s",
                            "static_configs": [{"targets": [f"127.0.0.1:{target_port}"]}]}],
    }))
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            with contextlib.suppress(OSError), \
                    urllib.request.urlopen(f"{url}/-/ready", timeout=2) as reply:
                if reply.status == 200:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (tmp_path / "prometheus.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"prometheus did not become ready:\n{tail}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def query(url: str, promql: str) -> list[float]:
    """The values of an instant query's vector."""
    with urllib.request.urlopen(
            f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}",
            timeout=10) as reply:
        answer = json.load(reply)
    assert answer["status"] == "success", answer
    return [float(sample["value"][1]) for sample in answer["data"]["result"]]


def until_answered(url: str, promql: str, want: float) -> None:
    """Until the query's one value is `want` (later scrapes catch up with the jobs)."""
    deadline = time.monotonic() + QUERY_TIMEOUT_S
    got: list[float] = []
    while time.monotonic() < deadline:
        got = query(url, promql)
        if got == [want]:
            return
        time.sleep(0.5)
    raise AssertionError(f"{promql}: {got}, not [{want}]")


def test_prometheus_scrapes_every_series(tmp_path: Path) -> None:
    with metrics_server(tmp_path / "server") as srv, \
            prometheus(tmp_path / "prometheus", srv.http_port) as url:
        run_jobs(srv)
        until_answered(url, 'up{job="trainyard"}', 1)
        until_answered(url, 'trainyard_jobs{state="RUNNING",queue="train"}', 1)
        until_answered(url, 'trainyard_jobs{state="WAITING",queue="train"}', 0)
        until_answered(url, 'trainyard_jobs_finished_total{state="SUCCEEDED",queue="train"}', 1)
        until_answered(url, 'trainyard_jobs_finished_total{state="FAILED",queue="train"}', 1)
        until_answered(url, 'trainyard_job_wait_seconds_count{queue="train"}', 3)
        until_answered(url, 'trainyard_job_start_latency_seconds_count{queue="train"}', 3)
        until_answered(url, "trainyard_scheduling_pass_seconds_count > bool 0", 1)
        until_answered(url, "trainyard_scheduling_backlog_jobs", 0)
        until_answered(url, 'trainyard_launches_total{executor="local"}', 3)
        until_answered(url, 'sum(trainyard_preemptions_total)', 0)
        until_answered(url, 'trainyard_team_used{team="vision",pool="cpu",resource="cpus"}', 1)
        until_answered(url, 'trainyard_team_quota{team="vision",pool="cpu",resource="cpus"}', 2)
        # Prometheus's own scrapes are requests the server counted, by the route's template.
        until_answered(url, 'trainyard_http_requests_total{method="GET",route="/metrics",'
                            'status="200"} > bool 1', 1)
        until_answered(url, 'trainyard_http_request_seconds_count{route="/metrics"} > bool 1',
                       1)
        until_answered(url, "trainyard_store_commit_seconds_count > bool 5", 1)
        # A quantile over the waits, as a dashboard asks it.
        wait = query(url, 'histogram_quantile(0.5, sum by (le) '
                          '(trainyard_job_wait_seconds_bucket))')
        assert len(wait) == 1 and 0 <= wait[0] < 30
