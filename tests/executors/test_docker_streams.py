"""Ending a stream the engine holds open, against the real engine."""

from __future__ import annotations

import contextlib
import gc
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
import requests.exceptions

from tests.dockerenv import TRAINER_IMAGE, Engine, SocketProxy, engine
from trainyard.executors.docker import API_VERSION
from trainyard.executors.docker_streams import close_stream, container_output, interrupt

__all__ = ["engine"]


@pytest.fixture
def talker(engine: Engine) -> Iterator[str]:
    """A running container that has printed a line and prints no more."""
    container = engine.client.containers.run(TRAINER_IMAGE, ["sh", "-c", "echo hello; sleep 300"],
                                             detach=True, network_mode="none")
    try:
        yield container.id
    finally:
        container.remove(force=True)


def unclosed_sockets_after(close: Callable[[Any], None], container_id: str) -> list[str]:
    """The sockets the garbage collector finds open after a follow of the container's output,
    read in part, is ended by `close`."""
    api = docker.APIClient(version=API_VERSION)
    try:
        stream = container_output(api, container_id, follow=True)
        assert b"hello" in next(iter(stream))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            close(stream)
            del stream
            gc.collect()
        return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    finally:
        api.close()


def sockets_left_by_refused(open_output: Callable[[docker.APIClient, str], Any]) -> int:
    """The sockets still open, once the client is closed and with the garbage collector held
    off, after `open_output` asked for the output of a container that does not exist."""
    api = docker.APIClient(version=API_VERSION)
    before = _open_sockets()
    gc.disable()
    try:
        with warnings.catch_warnings():  # what the collector finds at the end is counted here
            warnings.simplefilter("ignore", ResourceWarning)
            try:
                with pytest.raises(docker.errors.NotFound):
                    open_output(api, "trainyard-no-such-container")
                api.close()
                return _open_sockets() - before
            finally:
                gc.enable()
                gc.collect()
    finally:
        api.close()


def _open_sockets() -> int:
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(FileNotFoundError):  # the listing's own, closed since
            count += os.readlink(fd).startswith("socket:")
    return count


def test_a_stream_its_reader_closes_leaves_no_socket_to_the_collector(talker: str) -> None:
    assert unclosed_sockets_after(close_stream, talker) == []


def test_the_sdks_close_alone_leaves_the_connections_socket_behind(talker: str) -> None:
    """Why close_stream closes the response too: a follow the SDK's close ends mid-stream
    leaves its connection's socket to the collector (a ResourceWarning, an error under the
    tests' warning filter)."""
    assert unclosed_sockets_after(interrupt, talker) != []


def test_the_output_of_a_container_that_is_gone_is_refused_leaving_no_socket(
        engine: Engine) -> None:
    assert sockets_left_by_refused(lambda api, name: container_output(api, name, False)) == 0


def test_the_output_is_one_request_so_an_engine_that_goes_strands_nothing(
        talker: str, tmp_path: Path) -> None:
    """An engine that answers one connection, then no more, as one going away between two
    requests: the output's single request is all it needs."""
    proxy = SocketProxy(tmp_path / "engine.sock", accepts=1).start()
    api = docker.APIClient(base_url=proxy.url, version=API_VERSION)
    try:
        stream = container_output(api, talker, follow=True)
        assert b"hello" in next(iter(stream))
        close_stream(stream)
    finally:
        api.close()
        proxy.cut()


def test_the_sdks_logs_strands_its_stream_when_the_engine_goes_between_requests(
        talker: str, tmp_path: Path) -> None:
    """Why container_output makes its own request: the SDK's `logs` asks the engine again
    once its stream is open, and a connection failure there leaves the open response in a
    reference cycle, its socket open until the garbage collector runs (which then warns)."""
    proxy = SocketProxy(tmp_path / "engine.sock", accepts=1).start()
    api = docker.APIClient(base_url=proxy.url, version=API_VERSION)
    gc.collect()
    gc.disable()
    try:
        with pytest.raises(requests.exceptions.ConnectionError):
            api.logs(talker, stream=True, follow=True)
        api.close()
        assert proxy.connections() == 1
    finally:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gc.enable()
            gc.collect()
        api.close()
        proxy.cut()
    assert any(issubclass(w.category, ResourceWarning) for w in caught)
