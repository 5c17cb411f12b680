"""Users, teams, tokens, queue rules and the audit log, and the offline first admin. Every
use case but the first admin's is for admins (services/guard.py checks it, and audits a
refusal); this validates, writes, audits, and tells the authenticator and the policy view
that what they cached is stale. Who a caller is comes from here too, with the teams of the
policy in force."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from trainyard.auth.authenticator import Authenticator
from trainyard.auth.policy import ANONYMOUS, RESERVED_USERS, Access, Identity
from trainyard.auth.tokens import new_token
from trainyard.domain.access import QueueAccess
from trainyard.domain.errors import FailedPrecondition, InvalidArgument, NotFound
from trainyard.domain.spec import NAME_RE
from trainyard.services.guard import Guard
from trainyard.services.policy import PolicyService
from trainyard.store.access import AccessStore, AuditRecord, TeamRecord, TokenRecord, UserRecord

log = logging.getLogger("trainyard.audit")

PRINCIPAL_RE = re.compile(r"^[a-z][a-z0-9._-]{0,63}$")
MAX_TOKEN_LIFETIME = 10 * 365 * 86400.0
MAX_AUDIT_PAGE = 1000


@dataclass(frozen=True)
class CreatedToken:
    record: TokenRecord
    token: str  # shown once


@dataclass
class AccessService:
    store: AccessStore
    authenticator: Authenticator
    clock: Callable[[], float] = time.time
    # The policy view, which merges this store's queue rules and teams; None offline. With
    # a policy file, queue access is the file's and this store's rules do not apply.
    policy: PolicyService | None = None
    guard: Guard = field(init=False)

    def __post_init__(self) -> None:
        self.guard = Guard(on_denied=lambda who, action, target, why: self.audit(
            who, action, target, False, why))

    def identify(self, headers: Iterable[tuple[str, str | bytes]]) -> Identity:
        """The caller a request's headers name ('authorization: Bearer <token>'), or
        Unauthenticated; with no users yet and loopback only, the single local user. Its
        teams and teammates are the store's and those of the policy in force."""
        return self._with_policy_teams(self.authenticator.identify(headers))

    def _with_policy_teams(self, identity: Identity) -> Identity:
        """The identity with the teams the policy view lists it in (a policy file's teams,
        which queue access and quotas count) added to the store's: the members of one team
        see each other's jobs whichever source names the team."""
        if self.policy is None:
            return identity
        policy = self.policy.effective().policy
        teams = policy.teams_of(identity.user)
        mates = {m for team in teams for m in policy.teams[team].members} - {identity.user}
        if teams <= identity.teams and mates <= identity.teammates:
            return identity
        return replace(identity, teams=identity.teams | teams,
                       teammates=identity.teammates | mates)

    # --- audit ---------------------------------------------------------------------------

    def audit(self, actor: Identity | None, action: str, target: str, allowed: bool,
              detail: str = "") -> None:
        """Administrative actions and refused requests, in the store and the server log."""
        name = actor.user if actor is not None else ANONYMOUS
        record = AuditRecord(self.clock(), name, action, target[:256], allowed, detail[:2000])
        log.info("audit: %s %s %s %s%s", name, "did" if allowed else "was refused", action,
                 target, f": {detail}" if detail else "")
        try:
            self.store.audit(record)
        except Exception:  # an audit write must not turn a refusal into an internal error
            log.exception("could not store an audit event")

    def list_audit(self, identity: Identity, limit: int) -> list[AuditRecord]:
        self.guard.require(identity, Access.ADMIN_READ, "ListAudit")
        if limit < 0 or limit > MAX_AUDIT_PAGE:
            raise InvalidArgument("limit", f"must be between 0 and {MAX_AUDIT_PAGE}")
        return self.store.list_audit(limit or 100)

    # --- users and teams -----------------------------------------------------------------

    def bootstrap(self, name: str, expires_in: float = 0.0) -> CreatedToken:
        """The first admin and their token, made directly in the store; refused once users
        exist (an admin makes the others). The one use case without a caller: there is
        nobody yet to ask, and the command runs on the server's host with its store."""
        if self.store.any_users():
            raise FailedPrecondition("this store already has users; an admin creates more "
                                     "with 'trainyard admin users create'")
        me = Identity(user=name, admin=True)
        self._add_user(me, name, admin=True)
        return self.create_token(me, name, expires_in=expires_in, read_only=False)

    def create_user(self, identity: Identity, name: str, admin: bool) -> UserRecord:
        self.guard.require(identity, Access.ADMIN, "CreateUser")
        if not self.store.any_users():
            # Single-user mode ends with the first user, and nobody would hold a token.
            raise FailedPrecondition("this server has no users yet: make the first admin with "
                                     "'trainyard admin bootstrap NAME', which prints their "
                                     "token; a user created now would leave nobody able to "
                                     "sign in")
        return self._add_user(identity, name, admin)

    def _add_user(self, identity: Identity, name: str, admin: bool) -> UserRecord:
        _check_principal("name", name)
        if name in RESERVED_USERS:
            raise InvalidArgument("name", f"{name!r} is reserved")
        user = self.store.create_user(name, admin, now=self.clock())
        self.authenticator.invalidate()  # a first user ends single-user mode
        self.audit(identity, "CreateUser", name, True, "admin" if admin else "member")
        if admin:
            self._rules_changed()  # every queue takes an admin's jobs
        return user

    def list_users(self, identity: Identity) -> list[UserRecord]:
        self.guard.require(identity, Access.ADMIN_READ, "ListUsers")
        return self.store.list_users()

    def create_team(self, identity: Identity, name: str) -> TeamRecord:
        self.guard.require(identity, Access.ADMIN, "CreateTeam")
        _check_principal("name", name)
        team = self.store.create_team(name, now=self.clock())
        self._rules_changed()
        self.audit(identity, "CreateTeam", name, True)
        return team

    def list_teams(self, identity: Identity) -> list[TeamRecord]:
        self.guard.require(identity, Access.ADMIN_READ, "ListTeams")
        return self.store.list_teams()

    def add_member(self, identity: Identity, team: str, user: str) -> TeamRecord:
        self.guard.require(identity, Access.ADMIN, "AddTeamMember")
        _check_principal("team", team)
        _check_principal("user", user)
        record = self.store.add_member(team, user)
        self.authenticator.invalidate()  # teammates changed
        self._rules_changed()  # and the teams queues admit by
        self.audit(identity, "AddTeamMember", f"{team}/{user}", True)
        return record

    # --- tokens --------------------------------------------------------------------------

    def create_token(self, identity: Identity, user: str, *, expires_in: float,
                     read_only: bool) -> CreatedToken:
        self.guard.require(identity, Access.ADMIN, "CreateToken")
        _check_principal("user", user)
        if expires_in < 0 or expires_in > MAX_TOKEN_LIFETIME:
            raise InvalidArgument("expires_in_seconds", "must be between 0 (never expires) "
                                  f"and {MAX_TOKEN_LIFETIME:.0f} (ten years)")
        now = self.clock()
        new = new_token()
        record = self.store.add_token(user, new.id, new.secret_hash, read_only=read_only,
                                      expires_at=now + expires_in if expires_in else None,
                                      now=now)
        self.audit(identity, "CreateToken", f"{user}/{record.id}", True,
                   ("read-only" if read_only else "read-write") +
                   (f", expires in {expires_in:.0f} s" if expires_in else ""))
        return CreatedToken(record, new.token)

    def list_tokens(self, identity: Identity, user: str = "") -> list[TokenRecord]:
        self.guard.require(identity, Access.ADMIN_READ, "ListTokens")
        if user:
            _check_principal("user", user)
        return self.store.list_tokens(user)

    def revoke_token(self, identity: Identity, token_id: str) -> TokenRecord:
        self.guard.require(identity, Access.ADMIN, "RevokeToken")
        if not re.fullmatch(r"[0-9a-f]{12}", token_id):
            raise InvalidArgument("id", "must be the 12-hex-digit id `admin tokens list` shows")
        record = self.store.revoke_token(token_id, now=self.clock())
        self.authenticator.invalidate()
        self.audit(identity, "RevokeToken", f"{record.user}/{token_id}", True)
        return record

    # --- queues --------------------------------------------------------------------------

    def set_queue_access(self, identity: Identity, queue: str, users: Sequence[str],
                         teams: Sequence[str]) -> QueueAccess:
        self.guard.require(identity, Access.ADMIN, "SetQueueAccess")
        policy_file = self.policy.path if self.policy is not None else None
        if policy_file is not None:
            raise FailedPrecondition(f"queue access comes from the policy file "
                                     f"{policy_file}: edit its users and teams, then "
                                     "send the server SIGHUP")
        if not NAME_RE.match(queue):
            raise InvalidArgument("queue", f"{queue!r} is not a valid queue name")
        known_users = {u.name for u in self.store.list_users()}
        known_teams = {t.name for t in self.store.list_teams()}
        for user in users:
            if user not in known_users:
                raise NotFound("user", user)
        for team in teams:
            if team not in known_teams:
                raise NotFound("team", team)
        acl = QueueAccess(frozenset(users), frozenset(teams))
        self.store.set_queue_access(queue, acl)
        self._rules_changed()
        self.audit(identity, "SetQueueAccess", queue, True,
                   "open to everyone" if acl.open else
                   f"users {sorted(acl.users)}, teams {sorted(acl.teams)}")
        return acl

    def queue_acls(self, identity: Identity) -> dict[str, QueueAccess]:
        """The store's queue rules (`admin queues set`); queues not listed are open."""
        self.guard.require(identity, Access.ADMIN_READ, "ListQueueAccess")
        return self.store.queue_acls()

    def _rules_changed(self) -> None:
        if self.policy is not None:
            self.policy.changed()


def _check_principal(field: str, name: str) -> None:
    if not PRINCIPAL_RE.match(name):
        raise InvalidArgument(field, f"{name[:80]!r} is not a valid name: 1-64 lowercase "
                              "letters, digits, '.', '_' or '-', starting with a letter")
