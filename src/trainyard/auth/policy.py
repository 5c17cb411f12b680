"""Who may do what. Pure: identities and rules in, decisions and sentences out."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from trainyard.domain.errors import PermissionDenied

LOCAL_USER = "local"  # the identity of single-user mode
ANONYMOUS = "anonymous"  # the actor of a call with no valid identity, in the audit log
RESERVED_USERS = frozenset({LOCAL_USER, ANONYMOUS})


class Access(StrEnum):
    """What an RPC needs of its caller."""

    PUBLIC = "public"  # health checks, reflection
    READ = "read"  # any valid identity, read-only tokens included
    WRITE = "write"  # a token that may change state
    ADMIN_READ = "admin-read"  # an admin, read-only token allowed
    ADMIN = "admin"  # an admin with a token that may change state
    JOB = "job"  # the job token of a running attempt, and nothing else (JobRuntime)


@dataclass(frozen=True)
class Identity:
    user: str
    admin: bool = False
    read_only: bool = False
    teams: frozenset[str] = frozenset()
    # Users who share a team with this one: whose jobs team visibility shows.
    teammates: frozenset[str] = frozenset()
    token_id: str = ""
    single_user: bool = False


LOCAL = Identity(user=LOCAL_USER, admin=True, single_user=True)


def check_access(identity: Identity, access: Access, action: str) -> None:
    """Raise PermissionDenied unless the identity may call an RPC needing `access`."""
    if access in (Access.PUBLIC, Access.READ):
        return
    if access is Access.JOB:  # a user's identity never acts as a job's
        raise PermissionDenied(f"{action} needs the job token of a running attempt, not a "
                               f"token of {identity.user!r}")
    if access in (Access.ADMIN, Access.ADMIN_READ) and not identity.admin:
        raise PermissionDenied(f"{action} is for admins, and {identity.user!r} is not one")
    if access in (Access.WRITE, Access.ADMIN) and identity.read_only:
        raise PermissionDenied(f"{action} changes state, and this token of {identity.user!r} "
                               f"({identity.token_id}) is read-only")


def may_see_job(identity: Identity, owner: str, share_team_jobs: bool) -> bool:
    if identity.admin or owner == identity.user:
        return True
    return share_team_jobs and owner in identity.teammates


def check_job(identity: Identity, job_id: str, owner: str, share_team_jobs: bool,
              action: str) -> None:
    if not may_see_job(identity, owner, share_team_jobs):
        whose = "a team's" if share_team_jobs else "another user's"
        raise PermissionDenied(f"{identity.user!r} may not {action} job {job_id}: it is "
                               f"{whose} job that {identity.user!r} does not share")


def visible_owners(identity: Identity, share_team_jobs: bool) -> frozenset[str] | None:
    """Whose jobs a listing shows this identity; None: everyone's."""
    if identity.admin:
        return None
    return frozenset({identity.user} | (identity.teammates if share_team_jobs else set()))
