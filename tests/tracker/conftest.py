from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tracker.passes import stepped_server
from trainyard.server.assembly import TrainyardServer


@pytest.fixture
def stack(tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    """A server with one job slot whose tracker the test steps (tests.tracker.passes)."""
    with stepped_server(tmp_path, database_url) as srv:
        yield srv
