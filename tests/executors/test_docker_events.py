"""The engine's event stream: which containers an engine restart stopped."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from trainyard.executors.docker_events import EngineEvents


def die(name: str, exit_code: str) -> dict[str, Any]:
    return {"Action": "die", "Actor": {"Attributes": {"name": name, "exitCode": exit_code}}}


class Engine:
    """An engine whose stream delivers `events`, then breaks, as a shutting-down one does."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events_left = events

    def events(self, **_: Any) -> Iterator[dict[str, Any]]:
        events, self.events_left = self.events_left, []
        yield from events
        raise OSError("the engine closed the stream")


@pytest.mark.parametrize(("exit_code", "interrupted"), [("143", True), ("137", True),
                                                        ("1", False)])
def test_a_container_killed_just_before_the_stream_broke_was_stopped_by_the_engine(
        exit_code: str, interrupted: bool) -> None:
    engine = Engine([die("trainyard-j-1", exit_code)])
    broke = threading.Event()

    def connected() -> None:  # an inspect finds it running
        stream.vouch("trainyard-j-1", stream.token())

    stream = EngineEvents(engine, "x",  # type: ignore[arg-type]
                          lambda name: None if name else broke.set(), connected)
    stream.start()
    try:
        assert broke.wait(10)
        assert stream.interrupted("trainyard-j-1") is interrupted
        assert not stream.interrupted("trainyard-other-1")
    finally:
        stream.close()
