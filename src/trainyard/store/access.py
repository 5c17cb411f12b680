"""Users, teams, API tokens, queue access and the audit log."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from trainyard.domain.access import QueueAccess
from trainyard.domain.errors import AlreadyExists, NotFound
from trainyard.store.db import Database
from trainyard.store.schema import (
    api_tokens,
    audit_events,
    queue_access,
    team_members,
    teams,
    users,
)


@dataclass(frozen=True)
class UserRecord:
    name: str
    admin: bool
    teams: tuple[str, ...]
    created_at: float


@dataclass(frozen=True)
class TeamRecord:
    name: str
    members: tuple[str, ...]
    created_at: float


@dataclass(frozen=True)
class TokenRecord:
    id: str
    user: str
    read_only: bool
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    secret_hash: str


@dataclass(frozen=True)
class Principal:
    """What a token's user is, as authentication needs it."""

    admin: bool
    teams: frozenset[str]
    teammates: frozenset[str]


@dataclass(frozen=True)
class AuditRecord:
    time: float
    actor: str
    action: str
    target: str
    allowed: bool
    detail: str


class AccessStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- users and teams -----------------------------------------------------------------

    def any_users(self) -> bool:
        with self.db.read() as conn:
            return conn.execute(select(func.count()).select_from(users)).scalar_one() > 0

    def create_user(self, name: str, admin: bool, now: float | None = None) -> UserRecord:
        created = time.time() if now is None else now
        try:
            with self.db.write() as conn:
                conn.execute(insert(users).values(name=name, admin=admin, created_at=created))
        except IntegrityError:
            raise AlreadyExists("user", name) from None
        return UserRecord(name, admin, (), created)

    def user(self, name: str, conn: Connection | None = None) -> UserRecord:
        with self.db.read(conn) as c:
            row = c.execute(select(users).where(users.c.name == name)).first()
            if row is None:
                raise NotFound("user", name)
            member_of = c.execute(select(team_members.c.team)
                                  .where(team_members.c.user_name == name)
                                  .order_by(team_members.c.team)).scalars().all()
        return UserRecord(row.name, bool(row.admin), tuple(member_of), row.created_at)

    def list_users(self) -> list[UserRecord]:
        with self.db.read() as conn:
            rows = conn.execute(select(users).order_by(users.c.name)).all()
            memberships = conn.execute(select(team_members)).all()
        by_user: dict[str, list[str]] = {}
        for m in memberships:
            by_user.setdefault(m.user_name, []).append(m.team)
        return [UserRecord(r.name, bool(r.admin), tuple(sorted(by_user.get(r.name, []))),
                           r.created_at) for r in rows]

    def create_team(self, name: str, now: float | None = None) -> TeamRecord:
        created = time.time() if now is None else now
        try:
            with self.db.write() as conn:
                conn.execute(insert(teams).values(name=name, created_at=created))
        except IntegrityError:
            raise AlreadyExists("team", name) from None
        return TeamRecord(name, (), created)

    def add_member(self, team: str, user: str) -> TeamRecord:
        with self.db.write() as conn:
            if conn.execute(select(teams.c.name).where(teams.c.name == team)).first() is None:
                raise NotFound("team", team)
            if conn.execute(select(users.c.name).where(users.c.name == user)).first() is None:
                raise NotFound("user", user)
            present = conn.execute(select(team_members).where(
                team_members.c.team == team, team_members.c.user_name == user)).first()
            if present is None:
                conn.execute(insert(team_members).values(team=team, user_name=user))
        return self.team(team)

    def team(self, name: str) -> TeamRecord:
        with self.db.read() as conn:
            row = conn.execute(select(teams).where(teams.c.name == name)).first()
            if row is None:
                raise NotFound("team", name)
            members = conn.execute(select(team_members.c.user_name)
                                   .where(team_members.c.team == name)
                                   .order_by(team_members.c.user_name)).scalars().all()
        return TeamRecord(row.name, tuple(members), row.created_at)

    def list_teams(self) -> list[TeamRecord]:
        with self.db.read() as conn:
            names = conn.execute(select(teams.c.name).order_by(teams.c.name)).scalars().all()
        return [self.team(name) for name in names]

    def team_members(self) -> dict[str, frozenset[str]]:
        """Every team with its members, in one read."""
        with self.db.read() as conn:
            names = conn.execute(select(teams.c.name)).scalars().all()
            rows = conn.execute(select(team_members)).all()
        members: dict[str, set[str]] = {name: set() for name in names}
        for row in rows:
            members.setdefault(row.team, set()).add(row.user_name)
        return {name: frozenset(users_) for name, users_ in members.items()}

    def admins(self) -> frozenset[str]:
        """The names of every admin."""
        with self.db.read() as conn:
            return frozenset(conn.execute(select(users.c.name).where(users.c.admin))
                             .scalars().all())

    def principal(self, user: str) -> Principal:
        with self.db.read() as conn:
            record = self.user(user, conn)
            mates = conn.execute(
                select(team_members.c.user_name).where(
                    team_members.c.team.in_(record.teams),
                    team_members.c.user_name != user)
            ).scalars().all() if record.teams else []
        return Principal(record.admin, frozenset(record.teams), frozenset(mates))

    # --- tokens --------------------------------------------------------------------------

    def add_token(self, user: str, token_id: str, secret_hash: str, *, read_only: bool,
                  expires_at: float | None, now: float | None = None) -> TokenRecord:
        """Record a token by its id and its secret's hash; the secret itself is never
        stored."""
        created = time.time() if now is None else now
        with self.db.write() as conn:
            if conn.execute(select(users.c.name).where(users.c.name == user)).first() is None:
                raise NotFound("user", user)
            conn.execute(insert(api_tokens).values(
                id=token_id, user_name=user, secret_hash=secret_hash, read_only=read_only,
                created_at=created, expires_at=expires_at, revoked_at=None))
        return TokenRecord(token_id, user, read_only, created, expires_at, None, secret_hash)

    def token(self, token_id: str) -> TokenRecord | None:
        with self.db.read() as conn:
            row = conn.execute(select(api_tokens).where(api_tokens.c.id == token_id)).first()
        return _token(row) if row is not None else None

    def list_tokens(self, user: str = "") -> list[TokenRecord]:
        query = select(api_tokens).order_by(api_tokens.c.created_at)
        if user:
            query = query.where(api_tokens.c.user_name == user)
        with self.db.read() as conn:
            return [_token(r) for r in conn.execute(query).all()]

    def revoke_token(self, token_id: str, now: float | None = None) -> TokenRecord:
        moment = time.time() if now is None else now
        with self.db.write() as conn:
            conn.execute(update(api_tokens).where(api_tokens.c.id == token_id,
                                                  api_tokens.c.revoked_at.is_(None))
                         .values(revoked_at=moment))
        record = self.token(token_id)
        if record is None:
            raise NotFound("token", token_id)
        return record

    # --- queue access --------------------------------------------------------------------

    def set_queue_access(self, queue: str, acl: QueueAccess) -> None:
        rows = [{"queue": queue, "kind": "user", "principal": u} for u in sorted(acl.users)]
        rows += [{"queue": queue, "kind": "team", "principal": t} for t in sorted(acl.teams)]
        with self.db.write() as conn:
            conn.execute(delete(queue_access).where(queue_access.c.queue == queue))
            if rows:
                conn.execute(insert(queue_access), rows)

    def queue_acls(self) -> dict[str, QueueAccess]:
        with self.db.read() as conn:
            rows = conn.execute(select(queue_access)).all()
        grouped: dict[str, tuple[set[str], set[str]]] = {}
        for r in rows:
            users_, teams_ = grouped.setdefault(r.queue, (set(), set()))
            (users_ if r.kind == "user" else teams_).add(r.principal)
        return {q: QueueAccess(frozenset(u), frozenset(t)) for q, (u, t) in grouped.items()}

    # --- audit ---------------------------------------------------------------------------

    def audit(self, record: AuditRecord) -> None:
        with self.db.write() as conn:
            conn.execute(insert(audit_events).values(**record.__dict__))

    def list_audit(self, limit: int) -> list[AuditRecord]:
        with self.db.read() as conn:
            rows = conn.execute(select(audit_events).order_by(audit_events.c.id.desc())
                                .limit(limit)).all()
        return [AuditRecord(r.time, r.actor, r.action, r.target, bool(r.allowed), r.detail)
                for r in rows]


def _token(row: object) -> TokenRecord:
    m = row._mapping  # type: ignore[attr-defined]
    return TokenRecord(m["id"], m["user_name"], bool(m["read_only"]), m["created_at"],
                       m["expires_at"], m["revoked_at"], m["secret_hash"])
