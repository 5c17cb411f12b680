"""GET /metrics on a real server over loopback, parsed as Prometheus parses it: the series
after a few jobs, labels that never carry ids or raw paths, one registry per server, who
may scrape, and the policy code left free of prometheus-client."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.liveserver import wait_for
from tests.web.metricserver import get, metrics_server, run_jobs
from trainyard.auth.policy import LOCAL, Identity
from trainyard.domain.retry import Backoff
from trainyard.domain.spec import JobSpec
from trainyard.domain.states import JobState
from trainyard.tracker.telemetry import preemption_cause

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"


def scrape(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
          **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def test_a_scrape_after_a_few_jobs_holds_every_series(tmp_path: Path, database_url: str) -> None:
    with metrics_server(tmp_path, database_url) as srv:
        ran = run_jobs(srv)
        status, _, _ = get(srv, f"/api/v1/jobs/{ran.running}")
        assert status == 200
        assert get(srv, "/no/such/page")[0] == 404
        status, content_type, text = get(srv, "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    samples = scrape(text)
    assert value(samples, "trainyard_jobs", state="RUNNING", queue="train") == 1
    assert value(samples, "trainyard_jobs", state="WAITING", queue="train") == 0
    assert value(samples, "trainyard_jobs_finished_total", state="SUCCEEDED", queue="train") == 1
    assert value(samples, "trainyard_jobs_finished_total", state="FAILED", queue="train") == 1
    assert value(samples, "trainyard_job_wait_seconds_count", queue="train") == 3
    assert value(samples, "trainyard_job_start_latency_seconds_count", queue="train") == 3
    assert value(samples, "trainyard_tracker_pass_seconds_count") >= 1
    assert value(samples, "trainyard_scheduling_pass_seconds_count") >= 1
    assert value(samples, "trainyard_scheduling_backlog_jobs") == 0
    assert value(samples, "trainyard_launches_total", executor="local") == 3
    assert ("trainyard_launch_failures_total", (("executor", "local"),)) not in samples
    assert value(samples, "trainyard_preemptions_total", cause="reclaim") == 0
    assert value(samples, "trainyard_preemptions_total", cause="demotion") == 0
    # The running job holds one CPU (the default) of the team's quota of two.
    assert value(samples, "trainyard_team_used", team="vision", pool="cpu", resource="cpus") == 1
    assert value(samples, "trainyard_team_quota", team="vision", pool="cpu",
                 resource="cpus") == 2
    assert value(samples, "trainyard_http_requests_total", method="GET",
                 route="/api/v1/jobs/{job_id}", status="200") == 1
    assert value(samples, "trainyard_http_requests_total", method="GET", route="unmatched",
                 status="404") == 1
    assert value(samples, "trainyard_http_request_seconds_count", method="GET",
                 route="/api/v1/jobs/{job_id}") == 1
    assert value(samples, "trainyard_store_commit_seconds_count") >= 6
    # No label carries a job id or a path as requested.
    for job_id in (ran.succeeded, ran.failed, ran.running):
        assert job_id not in text
    assert "/no/such/page" not in text
    # Every series the example dashboard asks for is one the server serves.
    served = set(re.findall(r"^# HELP (\w+)", text, re.MULTILINE))
    assert set(dashboard_series()) <= served, set(dashboard_series()) - served


def dashboard_series() -> list[str]:
    """The series the example Grafana dashboard's queries name, by family."""
    dashboard = json.loads(DASHBOARD.read_text())
    names = [name for panel in dashboard["panels"] for target in panel["targets"]
             for name in re.findall(r"trainyard_\w+", target["expr"])]
    names += [name for variable in dashboard["templating"]["list"]
              for name in re.findall(r"trainyard_\w+", str(variable.get("definition", "")))]
    return [re.sub(r"_(bucket|count|sum)$", "", name) for name in names]


def test_each_server_counts_in_its_own_registry(tmp_path: Path) -> None:
    with metrics_server(tmp_path / "a") as first, metrics_server(tmp_path / "b") as second:
        run_jobs(first)
        one, two = scrape(get(first, "/metrics")[2]), scrape(get(second, "/metrics")[2])
    assert value(one, "trainyard_launches_total", executor="local") == 3
    assert ("trainyard_launches_total", (("executor", "local"),)) not in two
    assert value(two, "trainyard_jobs", state="RUNNING", queue="train") == 0


def test_with_users_a_scrape_needs_a_token(tmp_path: Path) -> None:
    with metrics_server(tmp_path) as srv:
        srv.access.bootstrap("root")
        reader = srv.access.create_token(Identity(user="root", admin=True), "root",
                                         expires_in=0.0, read_only=True)
        status, content_type, body = get(srv, "/metrics")
        assert status == 401 and content_type == "application/json" and "token" in body
        assert get(srv, "/metrics", token="not-a-token")[0] == 401
        status, _, text = get(srv, "/metrics", token=reader.token)
    assert status == 200 and "trainyard_jobs" in text


@pytest.mark.parametrize(("why", "cause"), [
    ("preempted to return borrowed capacity in pool 'gpu' to team 'vision'; it resumes from "
     "its checkpoint", "reclaim"),
    ("preempted for a job of team 'nlp' that has run less; it resumes from its checkpoint",
     "demotion"),
])
def test_a_preemption_is_told_apart_by_its_sentence(why: str, cause: str) -> None:
    assert preemption_cause(why) == cause


def test_the_store_tracker_and_scheduler_load_no_prometheus_client() -> None:
    probe = ("import sys, trainyard.scheduler, trainyard.store.jobs, trainyard.store.db, "
             "trainyard.tracker, trainyard.services.jobs; "
             "print('prometheus_client' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_a_retried_attempt_counts_as_a_retry_not_as_a_failed_job(tmp_path: Path,
                                                                 database_url: str) -> None:
    with metrics_server(tmp_path, database_url) as srv:
        srv.tracker.follower.retries.backoff = Backoff(base_s=0.1, cap_s=0.2)
        job_id = srv.service.train(LOCAL, JobSpec(
            name="flaky", queue="train", max_attempts=2, retry_on_failure=True,
            command='echo x >> "$CHECKPOINT_PATH/n"; [ "$(wc -l < "$CHECKPOINT_PATH/n")" -ge 2 ]'
        ))[0]
        wait_for(srv, job_id, {JobState.SUCCEEDED})
        samples = scrape(get(srv, "/metrics")[2])
    assert value(samples, "trainyard_job_retries_total", queue="train") == 1
    assert value(samples, "trainyard_jobs_finished_total", state="SUCCEEDED", queue="train") == 1
    assert ("trainyard_jobs_finished_total", (("queue", "train"), ("state", "FAILED"))) \
        not in samples
