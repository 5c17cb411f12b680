"""The access rules, pure."""

from __future__ import annotations

import pytest

from trainyard.auth.policy import (
    Access,
    Identity,
    check_access,
    check_job,
    may_see_job,
    visible_owners,
)
from trainyard.auth.tokens import new_token, parse_bearer
from trainyard.domain.errors import PermissionDenied, Unauthenticated

BOB = Identity(user="bob", teams=frozenset({"vision"}), teammates=frozenset({"cat"}))
ADMIN = Identity(user="ann", admin=True)


@pytest.mark.parametrize(("identity", "access", "allowed"), [
    (BOB, Access.READ, True), (BOB, Access.WRITE, True), (BOB, Access.ADMIN, False),
    (BOB, Access.ADMIN_READ, False),
    (Identity("bob", read_only=True), Access.READ, True),
    (Identity("bob", read_only=True), Access.WRITE, False),
    (ADMIN, Access.ADMIN, True), (Identity("ann", admin=True, read_only=True), Access.ADMIN,
                                  False),
    (Identity("ann", admin=True, read_only=True), Access.ADMIN_READ, True),
])
def test_access_levels(identity: Identity, access: Access, allowed: bool) -> None:
    if allowed:
        check_access(identity, access, "X")
    else:
        with pytest.raises(PermissionDenied, match="X"):
            check_access(identity, access, "X")


def test_team_visibility_is_a_setting() -> None:
    assert may_see_job(BOB, "cat", share_team_jobs=True)
    assert not may_see_job(BOB, "cat", share_team_jobs=False)
    assert not may_see_job(BOB, "dan", share_team_jobs=True)
    assert may_see_job(ADMIN, "dan", share_team_jobs=False)
    assert visible_owners(BOB, True) == {"bob", "cat"}
    assert visible_owners(BOB, False) == {"bob"}
    assert visible_owners(ADMIN, False) is None
    with pytest.raises(PermissionDenied, match="may not cancel job j1"):
        check_job(BOB, "j1", "dan", True, "cancel")


def test_tokens_parse_from_bearer_headers_only() -> None:
    made = new_token()
    token_id, secret = parse_bearer(f"Bearer {made.token}")
    assert token_id == made.id and made.token.endswith(secret)
    assert parse_bearer(f"bearer {made.token}")[0] == made.id
    for bad in ("", made.token, f"Basic {made.token}", f"Bearer {made.token}x",
                "Bearer ünïcode", b"Bearer bytes", "Bearer " + "a" * 1000):
        with pytest.raises(Unauthenticated) as info:
            parse_bearer(bad)
        assert made.token not in str(info.value)
