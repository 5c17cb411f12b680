"""The tracker's scheduler: FIFO without a policy file, the queue policy under one, deciding
each pass by the policy view in force then (a reload, or a change of the store's teams,
takes effect at the next pass)."""

from __future__ import annotations

from collections.abc import Mapping

from trainyard.domain.budgets import Budget, BudgetScope
from trainyard.domain.policy import Policy
from trainyard.scheduler import Decisions, FifoPolicy, Snapshot
from trainyard.scheduler.queues import QueuePolicy
from trainyard.services.policy import PolicyService
from trainyard.sim.forecast import Scheduling


class ActivePolicy:
    """A scheduler.Policy that decides by whatever the policy service holds at each pass:
    without a policy file, FIFO under the server's own limit on running jobs."""

    def __init__(self, source: PolicyService, max_running: int) -> None:
        self.source = source
        self._fifo = FifoPolicy(max_running)
        self._queues: QueuePolicy | None = None  # built once per policy: it indexes quotas

    @property
    def orders_by_service(self) -> bool:
        declared = self.source.declared
        return declared is not None and declared.service_levels

    @property
    def budgets(self) -> Mapping[BudgetScope, Budget]:
        """The budgets of the policy in force (none without a policy file)."""
        current = self.source.for_scheduler()
        return {} if current is None else self._queue_policy(current).budgets

    def _queue_policy(self, current: Policy) -> QueuePolicy:
        if self._queues is None or self._queues.policy is not current:
            self._queues = QueuePolicy(current)
        return self._queues

    def scheduling(self) -> Scheduling:
        """The policy in force, as a forecast rolls the queue forward under it."""
        return Scheduling(self.source.for_scheduler(), self._fifo.max_running)

    def schedule(self, snapshot: Snapshot) -> Decisions:
        current = self.source.for_scheduler()
        if current is None:
            return self._fifo.schedule(snapshot)
        return self._queue_policy(current).schedule(snapshot)
