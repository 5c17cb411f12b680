"""Users, teams and tokens as the access use cases keep them, and the offline first admin."""

from __future__ import annotations

import pytest

from tests.services.conftest import ROOT, World, identity_of
from trainyard.domain.errors import InvalidArgument


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
