"""Ending a stream the engine holds open, against the real engine."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import docker
import pytest

from tests.dockerenv import TRAINER_IMAGE, Engine, engine
from trainyard.executors.docker import API_VERSION
from trainyard.executors.docker_streams import close_stream, interrupt

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
        stream = api.logs(container_id, stream=True, follow=True)
        assert b"hello" in next(iter(stream))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            close(stream)
            del stream
            gc.collect()
        return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    finally:
        api.close()


def test_a_stream_its_reader_closes_leaves_no_socket_to_the_collector(talker: str) -> None:
    assert unclosed_sockets_after(close_stream, talker) == []


def test_the_sdks_close_alone_leaves_the_connections_socket_behind(talker: str) -> None:
    """Why close_stream closes the response too: a follow the SDK's close ends mid-stream
    leaves its connection's socket to the collector (a ResourceWarning, an error under the
    tests' warning filter)."""
    assert unclosed_sockets_after(interrupt, talker) != []
