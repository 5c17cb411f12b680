"""Prometheus metrics at GET /metrics: the store's and the tracker's telemetry counted as it
happens, and what is live (jobs by state, each team's use against its quota) read at each
scrape from the same use case `trainyard queues` reads.

Every series lives in a registry of this server's own, never prometheus-client's global
one, so several servers in one process keep their counts apart. Labels take bounded values
only: states, executors and causes are fixed sets, queues and teams are the policy's (a
queue the policy does not list counts as "other"), routes are templates (never a path as
requested), methods the HTTP verbs.

Who may scrape: whoever may call GetQueues, since a scrape shows the same figures. With no
users (a loopback-only server) that is anyone on the host, as for the other routes; with
users, a bearer token of any user (a read-only one is enough), which Prometheus sends with
`authorization: {credentials_file: ...}` in its scrape config.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.responses import Response

from trainyard.auth.policy import Identity
from trainyard.domain.spec import Resources
from trainyard.domain.states import ACTIVE_STATES, JobState
from trainyard.services.jobs import JobService
from trainyard.web.api import Door

if TYPE_CHECKING:  # the telemetry's types are named here, their modules not loaded
    from trainyard.store.telemetry import JobMove
    from trainyard.tracker.telemetry import PreemptionCause

# (state, queue) -> how many jobs are in it, for the states before a job ends.
LiveCounts = Callable[[], Mapping[tuple[JobState, str], int]]

GET_QUEUES = "/trainyard.v1.TrainingService/GetQueues"
OTHER = "other"  # the label of a queue the policy does not list, or of an unknown method
UNMATCHED = "unmatched"  # the route label of a request no route took
LIVE_STATES = (JobState.WAITING, *ACTIVE_STATES, JobState.PREEMPTED)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
RESOURCES = ("cpus", "memory_mb", "gpus")
# Who the live collector reads the queues overview as: it needs READ, which every user has.
SCRAPER = Identity(user="metrics", read_only=True)

WAIT_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5)
PASS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)


class ServerMetrics:
    """The server's series, and the telemetry (store and tracker) that feeds them."""

    def __init__(self, queues: Callable[[], Collection[str]]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._queues = queues  # the policy's queue names, as they are now
        r = self.registry
        self.finished = Counter("trainyard_jobs_finished", "Jobs that reached a final state.",
                                ["state", "queue"], registry=r)
        self.retries = Counter("trainyard_job_retries", "Attempts lost or failed that were "
                               "retried (the job waits for its next attempt).", ["queue"],
                               registry=r)
        self.wait = Histogram(
            "trainyard_job_wait_seconds", "From when a job last began to wait (its submit or "
            "its requeue) until it was admitted (WAITING -> LAUNCHING).", ["queue"],
            buckets=WAIT_BUCKETS, registry=r)
        self.start_latency = Histogram(
            "trainyard_job_start_latency_seconds", "From a job's submit until an attempt of "
            "it runs (-> RUNNING).", ["queue"], buckets=WAIT_BUCKETS, registry=r)
        self.tracker_passes = Histogram(
            "trainyard_tracker_pass_seconds", "How long one pass of the tracker takes that "
            "follows the active jobs, settles the jobs waiting for them and admits.",
            buckets=PASS_BUCKETS, registry=r)
        self.passes = Histogram("trainyard_scheduling_pass_seconds",
                                "How long one admission pass takes.", buckets=PASS_BUCKETS,
                                registry=r)
        self.backlog = Gauge("trainyard_scheduling_backlog_jobs",
                             "Jobs waiting at the start of the last admission pass.",
                             registry=r)
        self.launches = Counter("trainyard_launches", "Launches asked of an executor.",
                                ["executor"], registry=r)
        self.launch_failures = Counter("trainyard_launch_failures",
                                       "Launches an executor could not carry out.",
                                       ["executor"], registry=r)
        self.preemptions = Counter("trainyard_preemptions", "Running jobs asked to stop for "
                                   "another: reclaim (borrowed quota returned to its owner) or "
                                   "demotion (for a job that has run less).", ["cause"],
                                   registry=r)
        self.requests = Counter("trainyard_http_requests", "HTTP requests answered.",
                                ["method", "route", "status"], registry=r)
        self.request_seconds = Histogram("trainyard_http_request_seconds",
                                         "Time to answer an HTTP request (a stream: to its "
                                         "first bytes).", ["method", "route"], registry=r)
        self.commits = Histogram("trainyard_store_commit_seconds",
                                 "One write transaction of the store, begin to commit.",
                                 buckets=COMMIT_BUCKETS, registry=r)
        self.leader = Gauge("trainyard_leader", "1 while this server runs the tracker (the "
                            "only server of its database, or the holder of the leader lease "
                            "among several over one PostgreSQL), 0 on a standby.", registry=r)
        for cause in ("reclaim", "demotion"):
            self.preemptions.labels(cause)

    # --- the store's telemetry ------------------------------------------------------------

    def committed(self, seconds: float) -> None:
        self.commits.observe(seconds)

    def job_moved(self, move: JobMove) -> None:
        queue = self.queue_label(move.queue)
        if move.retry:
            self.retries.labels(queue).inc()
        elif move.target.is_final() and not move.passing:
            self.finished.labels(move.target.value, queue).inc()
        elif move.source is JobState.WAITING and move.target is JobState.LAUNCHING:
            self.wait.labels(queue).observe(max(0.0, move.at - move.entered_at))
        elif move.target is JobState.RUNNING:
            self.start_latency.labels(queue).observe(max(0.0, move.at - move.submitted_at))

    def queue_label(self, queue: str) -> str:
        return queue if queue in self._queues() else OTHER

    # --- the tracker's telemetry ----------------------------------------------------------

    def tracker_pass(self, seconds: float) -> None:
        self.tracker_passes.observe(seconds)

    def admission_pass(self, seconds: float, backlog: int) -> None:
        self.passes.observe(seconds)
        self.backlog.set(backlog)

    def launch(self, executor: str, failed: bool) -> None:
        self.launches.labels(executor).inc()
        if failed:
            self.launch_failures.labels(executor).inc()

    def preemption(self, cause: PreemptionCause) -> None:
        self.preemptions.labels(cause).inc()

    # --- the HTTP side --------------------------------------------------------------------

    def install(self, app: FastAPI, door: Door, service: JobService,
                live_counts: LiveCounts) -> None:
        """Serve /metrics on `app`, count its requests, and read what is live per scrape."""
        self.registry.register(LiveCollector(live_counts, service))
        app.middleware("http")(self._count_request)

        @app.get("/metrics", include_in_schema=False)
        def metrics(request: Request) -> Response:
            door.caller(request, GET_QUEUES)  # a refusal is the JSON error of any route
            return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)

    async def _count_request(self, request: Request, call_next: object) -> Response:
        began = time.perf_counter()
        response: Response = await call_next(request)  # type: ignore[operator]
        route = request.scope.get("route")
        template = getattr(route, "path", None) or UNMATCHED
        method = request.method if request.method in METHODS else OTHER
        self.requests.labels(method, template, str(response.status_code)).inc()
        self.request_seconds.labels(method, template).observe(time.perf_counter() - began)
        return response


class LiveCollector(Collector):
    """Jobs by live state and queue, and each team's use and quota, read at each scrape:
    the counts from the jobs index (never the finished jobs), the use and the quotas from
    the queues overview."""

    def __init__(self, live_counts: LiveCounts, service: JobService) -> None:
        self.live_counts = live_counts
        self.service = service

    def describe(self) -> list[Metric]:
        return []  # made at each scrape; nothing to check against at registration

    def collect(self) -> Iterator[Metric]:
        overview = self.service.queues(SCRAPER)
        known = overview.policy.queues
        counts: dict[tuple[str, str], int] = {
            (state.value, queue): 0 for state in LIVE_STATES for queue in known}
        for (live, queue), count in self.live_counts().items():
            key = (live.value, queue if queue in known else OTHER)
            counts[key] = counts.get(key, 0) + count
        jobs = GaugeMetricFamily("trainyard_jobs", "Jobs not yet ended, by state and queue.",
                                 labels=["state", "queue"])
        for (state, queue), count in sorted(counts.items()):
            jobs.add_metric([state, queue], count)
        yield jobs
        used = GaugeMetricFamily("trainyard_team_used", "What a team's active jobs hold of a "
                                 "pool (cpus, memory_mb, gpus).",
                                 labels=["team", "pool", "resource"])
        quota = GaugeMetricFamily("trainyard_team_quota", "A team's nominal quota of a pool, "
                                  "for the resources its quota names.",
                                  labels=["team", "pool", "resource"])
        teams = overview.policy.teams
        for name, team in sorted(teams.items()):
            for pool, owed in sorted(team.quotas.items()):
                held = overview.teams.get((name, pool), Resources(0, 0, 0))
                for resource in RESOURCES:
                    used.add_metric([name, pool, resource], getattr(held, resource))
                    limit = getattr(owed, resource)
                    if limit is not None:
                        quota.add_metric([name, pool, resource], limit)
        for (name, pool), held in sorted(overview.teams.items()):
            if name in teams and pool not in teams[name].quotas:  # borrowing with no quota
                for resource in RESOURCES:
                    used.add_metric([name, pool, resource], getattr(held, resource))
        yield used
        yield quota
