"""Users, teams, tokens, queue access and audit rows on both dialects."""

from __future__ import annotations

import pytest

from trainyard.auth.tokens import new_token
from trainyard.domain.access import QueueAccess
from trainyard.domain.errors import AlreadyExists, NotFound
from trainyard.store.access import AccessStore, AuditRecord
from trainyard.store.db import Database


def test_users_teams_and_teammates(db: Database) -> None:
    store = AccessStore(db)
    assert not store.any_users()
    store.create_user("ann", admin=True)
    for name in ("bob", "cat"):
        store.create_user(name, admin=False)
    with pytest.raises(AlreadyExists):
        store.create_user("ann", admin=False)
    store.create_team("vision")
    store.add_member("vision", "bob")
    store.add_member("vision", "cat")
    store.add_member("vision", "cat")  # twice is once
    with pytest.raises(NotFound):
        store.add_member("vision", "nobody")
    with pytest.raises(NotFound):
        store.add_member("nlp", "bob")
    assert store.any_users()
    assert store.team("vision").members == ("bob", "cat")
    assert [(u.name, u.admin, u.teams) for u in store.list_users()] == [
        ("ann", True, ()), ("bob", False, ("vision",)), ("cat", False, ("vision",))]
    bob = store.principal("bob")
    assert bob.teams == {"vision"} and bob.teammates == {"cat"} and not bob.admin
    store.create_team("empty")
    assert store.team_members() == {"vision": {"bob", "cat"}, "empty": frozenset()}


def test_tokens_are_stored_as_hashes_and_revoked(db: Database) -> None:
    store = AccessStore(db)
    store.create_user("ann", admin=False)
    new = new_token()
    record = store.add_token("ann", new.id, new.secret_hash, read_only=True, expires_at=123.0,
                             now=100.0)
    stored = store.token(new.id)
    assert stored == record and stored.secret_hash != new.token.split("_", 2)[2]
    assert new.token.split("_", 2)[2] not in repr(store.list_tokens("ann"))
    assert store.revoke_token(new.id, now=200.0).revoked_at == 200.0
    assert store.revoke_token(new.id, now=300.0).revoked_at == 200.0  # first revocation kept
    other = new_token()
    with pytest.raises(NotFound):
        store.add_token("nobody", other.id, other.secret_hash, read_only=False,
                        expires_at=None)


def test_queue_access_replaces_and_opens(db: Database) -> None:
    store = AccessStore(db)
    store.set_queue_access("gpu", QueueAccess(frozenset({"ann"}), frozenset({"vision"})))
    assert store.queue_acls() == {"gpu": QueueAccess(frozenset({"ann"}),
                                                     frozenset({"vision"}))}
    store.set_queue_access("gpu", QueueAccess())  # no users, no teams: open again
    assert store.queue_acls() == {}


def test_audit_newest_first(db: Database) -> None:
    store = AccessStore(db)
    for i in range(3):
        store.audit(AuditRecord(float(i), "ann", f"A{i}", "t", i % 2 == 0, ""))
    assert [e.action for e in store.list_audit(2)] == ["A2", "A1"]
