"""The use cases on a real SQLite store, called directly with identities the authenticator
makes from real tokens. The server is assembled but not started: no tracker runs, so jobs
stay where the use cases leave them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from trainyard.auth.policy import Identity
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.services.access import AccessService
from trainyard.services.bundle import Services

ROOT = Identity(user="root", admin=True)


@dataclass
class World:
    server: TrainyardServer
    who: dict[str, Identity] = field(default_factory=dict)  # caller -> identity

    @property
    def services(self) -> Services:
        return self.server.services


def identity_of(server: TrainyardServer, token: str) -> Identity:
    return server.access.identify([("authorization", f"Bearer {token}")])


def assemble(tmp_path: Path, policy: str | None = None) -> TrainyardServer:
    """A server on tmp_path, not started; with `policy`, the text of its policy file."""
    policy_file = None
    if policy is not None:
        policy_file = tmp_path / "policy.toml"
        policy_file.write_text(policy)
    return TrainyardServer(ServerConfig(data_dir=tmp_path / "data", port=0,
                                        policy_file=policy_file))


def add_people(access: AccessService) -> None:
    """root (admin); mia and max in team red, otto in team blue; red-q takes team red."""
    access.bootstrap("root")
    for name in ("mia", "otto", "max"):
        access.create_user(ROOT, name, admin=False)
    access.create_team(ROOT, "red")
    access.create_team(ROOT, "blue")
    access.add_member(ROOT, "red", "mia")
    access.add_member(ROOT, "blue", "otto")
    access.add_member(ROOT, "red", "max")
    access.set_queue_access(ROOT, "red-q", [], ["red"])


def populate(srv: TrainyardServer) -> World:
    """root (admin); mia and max in team red, otto in team blue; red-q takes team red. The
    callers: admin (root), member (mia), read_only (mia's read-only token), other_team
    (otto) and teammate (max)."""
    access = srv.access
    add_people(access)
    tokens = {"admin": ("root", False), "member": ("mia", False),
              "read_only": ("mia", True), "other_team": ("otto", False),
              "teammate": ("max", False)}
    who = {caller: identity_of(srv, access.create_token(ROOT, user, expires_in=0,
                                                        read_only=read_only).token)
           for caller, (user, read_only) in tokens.items()}
    return World(srv, who)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    srv = assemble(tmp_path)
    yield populate(srv)
    srv.stop(grace=0)
