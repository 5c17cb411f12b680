"""What a caller may do and see, and the audit of every refusal: the one gate every use case
passes. `require` gives a use case its need (auth.policy.Access, decided by
auth.policy.check_access, the rule the RPC interceptor applies too); `job`, `may_see` and
`owners` say which jobs, and the runs, models and datasets behind them, the caller sees."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from trainyard.auth.policy import (
    Access,
    Identity,
    check_access,
    check_job,
    may_see_job,
    visible_owners,
)
from trainyard.domain.errors import PermissionDenied
from trainyard.store.records import JobRecord

T = TypeVar("T")
# (identity, action, target, sentence): each refusal, for the audit log.
OnDenied = Callable[[Identity, str, str, str], None]


def _ignore(identity: Identity, action: str, target: str, why: str) -> None:
    return None


@dataclass(frozen=True)
class Guard:
    share_team_jobs: bool = True  # members see (and cancel) their teams' jobs too
    on_denied: OnDenied = _ignore

    def require(self, identity: Identity, access: Access, action: str) -> None:
        """PermissionDenied, audited, unless the identity may do what needs `access`. The
        first line of every use case, before it reads or validates anything."""
        self.audited(identity, action, "", lambda: check_access(identity, access, action))

    def audited(self, identity: Identity, action: str, target: str,
                check: Callable[[], T]) -> T:
        """check(), with a PermissionDenied it raises audited before it goes on."""
        try:
            return check()
        except PermissionDenied as exc:
            self.on_denied(identity, action, target, str(exc))
            raise

    def job(self, identity: Identity, job: JobRecord, action: str, verb: str) -> JobRecord:
        """The job, if the identity may see it (its own, a teammate's, or any for admins);
        otherwise PermissionDenied, audited, saying it may not `verb` it."""
        if not identity.admin:
            self.audited(identity, action, job.id, lambda: check_job(
                identity, job.id, job.owner, self.share_team_jobs, verb))
        return job

    def may_see(self, identity: Identity, owner: str) -> bool:
        return may_see_job(identity, owner, self.share_team_jobs)

    def owners(self, identity: Identity) -> frozenset[str] | None:
        """Whose jobs (and runs) the identity sees; None: everyone's."""
        return visible_owners(identity, self.share_team_jobs)
