"""Shared fixtures: real SQLite and PostgreSQL stores, a real server on loopback, a real
Kubernetes API server with a test-side Kubeflow operator."""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.postgres import ThrowawayPostgres, find_bindir
from trainyard.client import Client
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.store.db import Database, open_database, sqlite_url
from trainyard.testbed import kube_apiserver
from trainyard.testbed import slurm_cluster as testbed
from trainyard.tracker import TrackerConfig
from trainyard.tracker.forecasts import ForecastConfig

if TYPE_CHECKING:
    from tests.kubeflow_operator import KubeflowOperator

IN_CI = os.environ.get("CI", "").lower() == "true"
DIALECTS = ["sqlite", "postgresql"]


def missing(component: str) -> None:
    """Skip locally, but fail under CI, where every real component must be present."""
    if IN_CI:
        pytest.fail(f"{component} is required under CI=true but is not available")
    pytest.skip(f"{component} is not available")


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testbed.SlurmCluster]:
    """A real two-node Slurm cluster (n1, n2: 2 CPUs and 2 GiB each) for the whole session;
    a test that stops one of its daemons starts it again."""
    why = testbed.available()
    if why is not None:
        missing(f"Slurm ({why})")
    with testbed.cluster(tmp_path_factory.mktemp("slurm"), testbed.two_nodes()) as started:
        yield started


@pytest.fixture(scope="session")
def kube_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kube_apiserver.KubeApiServer]:
    """A real Kubernetes API server for custom resources (the Kubeflow CRDs established)
    for the whole session; a test that stops it starts it again."""
    why = kube_apiserver.available()
    if why is not None:
        missing(f"the Kubernetes API server ({why})")
    with kube_apiserver.api_server(tmp_path_factory.mktemp("kube")) as started:
        yield started


@pytest.fixture
def kube_namespace() -> str:
    """A fresh namespace name per test (the server needs no Namespace object), which keeps
    one test's objects from the next."""
    return f"t-{secrets.token_hex(4)}"


@pytest.fixture
def kubeflow_operator(kube_api: kube_apiserver.KubeApiServer,
                      tmp_path: Path) -> Iterator[KubeflowOperator]:
    """The test-side Kubeflow operator over `kube_api`, stopped (every replica killed) at
    the end; it deletes no objects, and leaves alone those of earlier tests."""
    from tests.kubeflow_operator import KubeflowOperator

    with kube_api.api_client() as api, KubeflowOperator(
            api, tmp_path / "operator", ignore_existing=True) as op:
        yield op


@pytest.fixture(scope="session")
def digits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's digits dataset, written as the demo registers it, for the PyTorch
    trainer's tests (they need PyTorch: skipped without it, failed under CI=true)."""
    if importlib.util.find_spec("torch") is None:
        missing("PyTorch (pip install torch==2.13.0)")
    examples = str(Path(__file__).resolve().parents[1] / "examples")
    sys.path.insert(0, examples)
    try:
        from demo import write_digits
    finally:
        sys.path.remove(examples)
    directory = tmp_path_factory.mktemp("digits")
    write_digits(directory)
    return directory


@pytest.fixture(scope="session")
def postgres() -> Iterator[ThrowawayPostgres | None]:
    bindir = find_bindir()
    if bindir is None:
        yield None
        return
    pg = ThrowawayPostgres(bindir)
    pg.start()
    try:
        yield pg
    finally:
        pg.stop()


def postgres_database(postgres: ThrowawayPostgres | None) -> str:
    """A fresh, empty database of the session's PostgreSQL (missing: skipped, or failed
    under CI)."""
    if postgres is None:
        missing("PostgreSQL (initdb/pg_ctl)")
        raise AssertionError("unreachable")
    return postgres.new_database()


def opened(url: str) -> Iterator[Database]:
    database = open_database(url)
    yield database
    database.close()


@pytest.fixture(params=DIALECTS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path,
                 postgres: ThrowawayPostgres | None) -> str:
    if request.param == "sqlite":
        return sqlite_url(tmp_path)
    return postgres_database(postgres)


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    yield from opened(database_url)


@pytest.fixture
def pg_url(postgres: ThrowawayPostgres | None) -> str:
    """PostgreSQL alone, for what only PostgreSQL has (the leader lease)."""
    return postgres_database(postgres)


@pytest.fixture
def pg(pg_url: str) -> Iterator[Database]:
    yield from opened(pg_url)


def start_server(tmp_path: Path, database_url: str = "", **tracker: object) -> TrainyardServer:
    tracker.setdefault("forecasts", ForecastConfig(interval_s=0))  # asked for where tested
    config = ServerConfig(data_dir=tmp_path / "data", database_url=database_url, port=0,
                          tracker=TrackerConfig(**tracker))  # type: ignore[arg-type]
    server = TrainyardServer(config)
    server.start()
    return server


@pytest.fixture
def server(tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    srv = start_server(tmp_path, database_url, max_concurrent=2, cancel_grace=2.0)
    yield srv
    srv.stop(grace=0)


@pytest.fixture
def client(server: TrainyardServer) -> Iterator[Client]:
    with Client(f"127.0.0.1:{server.port}", timeout=20) as c:
        yield c
