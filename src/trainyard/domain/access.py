"""Who may submit to a queue: one rule, asked at submit and again at admission.

The rules come from one merged view built when the policy loads: the policy file's queue
`users` and `teams` where a file is in force, the store's ACLs (`admin queues set`)
otherwise; a team's members are the file's and the store's together."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field


@dataclass(frozen=True)
class QueueAccess:
    """Who may submit to a queue. Empty users and teams: everyone."""

    users: frozenset[str] = field(default_factory=frozenset)
    teams: frozenset[str] = field(default_factory=frozenset)

    @property
    def open(self) -> bool:
        return not self.users and not self.teams

    def admits(self, user: str, teams: Collection[str]) -> bool:
        """Whether `user`, a member of `teams`, may submit (and keep jobs queued) here."""
        return self.open or user in self.users or not self.teams.isdisjoint(teams)

    def principals(self) -> str:
        """'user 'ann', team 'vision'': whom the queue takes jobs from."""
        parts = [f"user {u!r}" for u in sorted(self.users)] + \
            [f"team {t!r}" for t in sorted(self.teams)]
        return ", ".join(parts)
