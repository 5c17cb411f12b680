"""A live server for the job runtime's tests: users exist (so user tokens mean something),
and jobs run as local processes that wait for a go file, each given a job token minted the
way the tracker mints one for a remote executor's launch."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from tests.liveserver import live_server
from tests.services.conftest import ROOT
from trainyard.domain.spec import DatasetRef, JobSpec
from trainyard.domain.states import JobState
from trainyard.server.assembly import TrainyardServer
from trainyard.store.db import sqlite_url
from trainyard.v1 import runtime_pb2 as rpb
from trainyard.v1 import runtime_pb2_grpc as rpb_grpc


@dataclass
class RuntimeWorld:
    server: TrainyardServer
    channel: grpc.Channel
    user_token: str  # root's
    tmp: Path

    @property
    def stub(self) -> rpb_grpc.JobRuntimeStub:
        return rpb_grpc.JobRuntimeStub(self.channel)

    def running_job(self, name: str, dataset: DatasetRef | None = None, *,
                    ignoring_term: bool = False) -> tuple[str, str]:
        """A RUNNING job that exits 0 once its go file exists, and its job token.
        ignoring_term: a stop does not end it before its KILL, so that it stays RUNNING."""
        go = self.tmp / f"go-{name}"
        command = ("trap '' TERM; " if ignoring_term else "") + \
            f"for i in $(seq 1200); do [ -e {go} ] && exit 0; sleep 0.05; done; exit 1"
        job_id, _ = self.server.service.train(ROOT, JobSpec(name=name, command=command,
                                                           dataset=dataset))
        self.wait(job_id, {JobState.RUNNING})
        job = self.server.jobs.get(job_id)
        return job_id, self.server.tracker.launcher.requests.mint(job)

    def dataset(self, name: str, files: dict[str, bytes]) -> DatasetRef:
        """A dataset version of these files (relative path -> bytes), registered."""
        src = self.tmp / f"src-{name}"
        for rel, data in files.items():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            (src / rel).write_bytes(data)
        record, _ = self.server.datasets.register(ROOT, name, str(src))
        return DatasetRef(name, record.version)

    def finish(self, name: str, job_id: str) -> None:
        (self.tmp / f"go-{name}").touch()
        self.wait(job_id, {JobState.SUCCEEDED})

    def wait(self, job_id: str, states: set[JobState], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.server.jobs.get(job_id).state not in states:
            assert time.monotonic() < deadline, self.server.jobs.get(job_id)
            time.sleep(0.05)


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


def runtime_world(tmp: Path, tls: tuple[Path, Path] | None = None, policy: str | None = None,
                  **tracker: Any) -> Iterator[RuntimeWorld]:
    """tls: (PEM certificate, PEM key): the server serves TLS, the channel trusts it.
    policy: a policy file's text."""
    with live_server(tmp, sqlite_url(tmp), policy, tls=tls, **tracker) as srv:
        created = srv.access.bootstrap("root")
        address = f"127.0.0.1:{srv.port}"
        channel = grpc.insecure_channel(address) if tls is None else grpc.secure_channel(
            address, grpc.ssl_channel_credentials(root_certificates=tls[0].read_bytes()))
        try:
            yield RuntimeWorld(srv, channel, created.token, tmp)
        finally:
            channel.close()


def chunks(files: dict[str, bytes], piece: int = 64 * 1024) -> Iterator[rpb.FileChunk]:
    """The files as a client streams them, each chunk naming its file's size and sha256."""
    for path, data in files.items():
        sha = hashlib.sha256(data).hexdigest()
        for offset in range(0, max(len(data), 1), piece):
            yield rpb.FileChunk(path=path, offset=offset, data=data[offset:offset + piece],
                                size=len(data), sha256=sha)


def received(stream: Iterator[rpb.FileChunk]) -> dict[str, bytes]:
    """The files of a pulled stream, each checked against the size and sha256 it names."""
    files: dict[str, bytearray] = {}
    expected: dict[str, tuple[int, str]] = {}
    for chunk in stream:
        data = files.setdefault(chunk.path, bytearray())
        assert chunk.offset == len(data)
        data.extend(chunk.data)
        expected[chunk.path] = (chunk.size, chunk.sha256)
    for path, data in files.items():
        assert (len(data), hashlib.sha256(data).hexdigest()) == expected[path]
    return {path: bytes(data) for path, data in files.items()}
