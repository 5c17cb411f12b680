"""At start-up, before new work is admitted: the store's view of what runs is reconciled with
what the executors hold."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from trainyard.domain.kinds import JobKind
from trainyard.domain.states import ACTIVE_STATES, JobState
from trainyard.executors.base import Executor
from trainyard.executors.registry import executor_for
from trainyard.store.jobs import JobStore
from trainyard.store.records import JobRecord
from trainyard.tracker.follow import Follower, requeue

log = logging.getLogger(__name__)


class Recovery:
    def __init__(self, *, jobs: JobStore, executors_by_kind: Mapping[str, Executor],
                 follower: Follower, clock: Callable[[], float]) -> None:
        self.jobs = jobs
        self.executors_by_kind = executors_by_kind
        self.follower = follower
        self.clock = clock

    def recover(self) -> None:
        """Put back in the queue the jobs left PREEMPTED, re-attach to what the store says is
        running, then remove what the executors hold for no active job."""
        for job in self.jobs.in_states([JobState.PREEMPTED]):
            self.follower.guarded(job, self._requeue)
        active = self.jobs.in_states(ACTIVE_STATES)
        for job in active:
            self.follower.guarded(job, self._adopt)
        self.jobs.db.confirm_lease()  # a sweep by a server that no longer leads could
        # remove what the leader just launched
        for kind, executor in self.executors_by_kind.items():
            handles = {j.handle for j in active if j.kind == kind}
            try:
                for removed in executor.sweep(handles):
                    log.warning("%s executor: %s", kind, removed)
            except Exception:  # a sweep is housekeeping: it must not keep the service down
                log.exception("sweeping the %s executor failed", kind)

    def missing_executors(self) -> str | None:
        """A sentence if active jobs need an executor this server does not run: starting
        would leave them unfollowed and holding their slots."""
        needed: dict[str, int] = {}
        for job in self.jobs.in_states(ACTIVE_STATES):
            if job.kind not in self.executors_by_kind:
                needed[job.kind] = needed.get(job.kind, 0) + 1
        if not needed:
            return None
        what = ", ".join(f"{count} on the {kind} executor" for kind, count in needed.items())
        hint = " (start the server with --docker)" if JobKind.DOCKER in needed else ""
        return f"active jobs run where this server does not look: {what}{hint}"

    def _requeue(self, job: JobRecord) -> None:
        """A job stopped for preemption whose move back to WAITING was never written (by a
        version that wrote the two moves apart): it waits again now."""
        requeue(self.jobs, job.id, expected=JobState.PREEMPTED, now=self.clock())
        log.info("requeued %s, found preempted", job.id)
        self.follower.waiting.invalidate()
        executor = self.executors_by_kind.get(job.kind)
        if executor is not None:  # what its stopped attempt may have left running
            executor.release(job.handle)

    def _adopt(self, job: JobRecord) -> None:
        observation = executor_for(self.executors_by_kind, job.kind).adopt(job.handle)
        log.info("recovered %s (%s): %s", job.id, job.state, observation.phase)
        ending = self.follower.apply(job, observation, recovering=True)
        if ending is not None:
            self.follower.finish(ending)
