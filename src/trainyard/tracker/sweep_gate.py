"""What a pass may start of each sweep, the I/O side of scheduler/sweeps.py: a paused sweep's
trials are held with its sentence; a sweep that used a budget (domain/sweep_control.py) is
marked so, and its trials that never started are cancelled with the budget's sentence; one
with a trial budget may start only the trials it has left."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from trainyard.domain.reasons import ReasonCode
from trainyard.domain.sweep_control import (
    SweepStatus,
    budget_reached,
    not_launched,
    paused_sentence,
    trials_left,
)
from trainyard.scheduler import PendingReason
from trainyard.store.jobs import JobStore
from trainyard.store.sweeps import SweepStore

log = logging.getLogger(__name__)


@dataclass
class Gate:
    holds: dict[str, PendingReason] = field(default_factory=dict)
    starts: dict[str, int] = field(default_factory=dict)
    cancelled: list[str] = field(default_factory=list)  # waiting trials it cancelled


class SweepGate:
    def __init__(self, jobs: JobStore, clock: Callable[[], float]) -> None:
        self.jobs = jobs
        self.sweeps = SweepStore(jobs.db)
        self.clock = clock
        self._holds: dict[str, PendingReason] = {}  # kept: the same object each pass

    def prepare(self, group_ids: Iterable[str]) -> Gate:
        gate = Gate()
        records = self.sweeps.of(group_ids)
        budgeted = [r.id for r in records.values() if r.budget]
        use = self.sweeps.use(budgeted, self.clock()) if budgeted else {}
        for sweep in records.values():
            if sweep.status is SweepStatus.PAUSED:
                held = self._holds.get(sweep.id)
                if held is None:
                    held = self._holds[sweep.id] = PendingReason(
                        ReasonCode.SWEEP_PAUSED, paused_sentence(sweep.title))
                gate.holds[sweep.id] = held
                continue
            self._holds.pop(sweep.id, None)
            if sweep.status is SweepStatus.CANCELLED:  # a trial it raced: cancel it too
                gate.cancelled += self._cancel(self.sweeps.waiting(sweep.id, unstarted=False),
                                               f"{sweep.title} was cancelled")
                continue
            if not sweep.budget:
                continue
            reached = budget_reached(sweep.title, sweep.budget, use[sweep.id])
            if reached is None and sweep.status is SweepStatus.BUDGET:
                reached = sweep.status_message
            if reached is not None:
                if sweep.status is not SweepStatus.BUDGET:
                    self.sweeps.set_status(sweep.id, SweepStatus.BUDGET, reached,
                                           unless=(SweepStatus.CANCELLED,))
                    log.info("%s", reached)
                gate.cancelled += self._cancel(self.sweeps.waiting(sweep.id, unstarted=True),
                                               not_launched(reached))
            left = trials_left(sweep.budget, use[sweep.id])
            if left:  # at 0 only trials that started before wait (requeued): they go on
                gate.starts[sweep.id] = left
        return gate

    def _cancel(self, job_ids: list[str], why: str) -> list[str]:
        return self.jobs.cancel_waiting(dict.fromkeys(job_ids, why), now=self.clock()) \
            if job_ids else []
