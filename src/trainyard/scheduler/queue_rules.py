"""What a pass looks up about a queue: the pools that run each kind of job, and who it takes
jobs from, by the one access rule that submit uses too (domain.access)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from trainyard.domain import policy as cfg
from trainyard.domain.access import QueueAccess


@dataclass(frozen=True)
class QueueRules:
    queue: cfg.Queue
    access: QueueAccess
    restricted: bool  # takes jobs only from some users or teams
    pools: Mapping[str, tuple[str, ...]]  # kind -> the queue's pools that run it, in order

    @classmethod
    def of(cls, policy: cfg.Policy, name: str) -> QueueRules:
        queue = policy.queues[name]
        kinds: dict[str, list[str]] = defaultdict(list)
        for pool in queue.pools:
            if pool in policy.pools:
                kinds[policy.pools[pool].executor].append(pool)
        access = queue.access
        return cls(queue, access, not access.open, {k: tuple(v) for k, v in kinds.items()})


class Owners:
    """Whether a queue takes a waiting job's owner, by the rule submit uses (Policy.takes).
    Each owner's teams are looked up once (the policy does not change in a pass)."""

    def __init__(self, policy: cfg.Policy) -> None:
        self.policy = policy
        self._teams: dict[str, frozenset[str]] = {}

    def admitted(self, rules: QueueRules, owner: str) -> bool:
        if not rules.restricted:
            return True
        teams = self._teams.get(owner)
        if teams is None:
            teams = self._teams[owner] = self.policy.teams_of(owner)
        return self.policy.takes(rules.queue, owner, teams)
