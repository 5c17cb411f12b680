"""Users, teams and tokens as the access use cases keep them, and the offline first admin."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.services.conftest import ROOT, World, assemble, identity_of
from trainyard.domain.errors import FailedPrecondition, InvalidArgument
from trainyard.services.access import bootstrap_admin


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


def test_team_changes_reach_identities_and_the_policy_view(world: World) -> None:
    access = world.services.access
    access.create_user(ROOT, "newcomer", admin=False)
    access.add_member(ROOT, "blue", "newcomer")
    assert world.services.policy.effective().policy.teams_of("newcomer") == {"blue"}
    token = access.create_token(ROOT, "newcomer", expires_in=0, read_only=True).token
    who = identity_of(world.server, token)
    assert who.teams == {"blue"} and who.teammates == {"otto"} and who.read_only
    with pytest.raises(InvalidArgument, match="is reserved"):
        access.create_user(ROOT, "local", admin=False)
