"""The offline first admin: made in the store with no server running."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.services.conftest import assemble, identity_of
from trainyard.domain.errors import FailedPrecondition
from trainyard.server.offline import bootstrap_admin


def test_the_offline_bootstrap_makes_the_one_first_admin(tmp_path: Path) -> None:
    created = bootstrap_admin(tmp_path / "data", "", "boss")
    assert created.record.user == "boss" and created.token.startswith("ty_")
    with pytest.raises(FailedPrecondition, match="already has users"):
        bootstrap_admin(tmp_path / "data", "", "other")
    srv = assemble(tmp_path)  # the server that opens the store later knows the token
    try:
        who = identity_of(srv, created.token)
        assert who.user == "boss" and who.admin and not who.read_only
    finally:
        srv.stop(grace=0)
