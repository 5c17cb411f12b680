"""From a presented job token to the grant of one attempt: what a JobRuntime call may act
on. Read fresh on every call (one query: the token row beside its job's row), never cached:
the token stops working the moment its attempt ends."""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.auth import job_tokens
from trainyard.domain.errors import Unauthenticated
from trainyard.store.job_tokens import JobTokenStore
from trainyard.store.records import JobRecord


@dataclass(frozen=True)
class JobGrant:
    """One attempt of one job, as its token proved: every JobRuntime use case acts on this
    attempt and no other, since no request names a job."""

    job: JobRecord  # as read when the call was authenticated

    @property
    def job_id(self) -> str:
        return self.job.id

    @property
    def attempt(self) -> int:
        return self.job.attempt

    @property
    def name(self) -> str:
        return f"{self.job.id}-{self.job.attempt}"


class JobGrants:
    def __init__(self, store: JobTokenStore) -> None:
        self.store = store

    def verify(self, credential: str) -> JobGrant:
        """The grant of a job token, or Unauthenticated (the sentence names the job and
        attempt the token claims, never its secret)."""
        claimed = job_tokens.parse(credential)
        view = self.store.lookup(claimed.job_id, claimed.attempt)
        if view.job is None:
            raise Unauthenticated(f"the job token of {claimed.job_id}-{claimed.attempt} is "
                                  "not valid here")
        job_tokens.check(claimed, view.secret_hash, view.job.attempt, view.job.state)
        return JobGrant(view.job)

    def still_current(self, grant: JobGrant) -> None:
        """Unauthenticated unless the grant's attempt is still the job's running one: for
        what a long call (an upload) does at its end, after its start was authenticated."""
        view = self.store.lookup(grant.job_id, grant.attempt)
        job = view.job
        if job is None or job.attempt != grant.attempt or not job.state.is_active():
            raise Unauthenticated(f"attempt {grant.name} ended while its upload arrived; "
                                  "nothing was kept")
