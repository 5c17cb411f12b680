"""Early stopping, the I/O side: after a running trial's metrics are ingested, its sweep's
rule (domain/early_stopping.py) judges the steps it reached since it was last judged; a
verdict asks the trial to stop through the cancel path (TERM, then KILL after the grace),
marked STOPPED_EARLY with the verdict's sentence as its message."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from trainyard.domain.early_stopping import STOPPED_EARLY, judge
from trainyard.domain.states import JobState
from trainyard.store.jobs import JobStore
from trainyard.store.records import JobRecord
from trainyard.store.sweeps import SweepRecord, SweepStore

log = logging.getLogger(__name__)


class EarlyStopper:
    def __init__(self, jobs: JobStore, clock: Callable[[], float]) -> None:
        self.jobs = jobs
        self.sweeps = SweepStore(jobs.db)
        self._settings: dict[str, SweepRecord | None] = {}  # a sweep's rule never changes
        self._judged: dict[str, int] = {}  # job id -> the last step judged
        self._since = clock()  # trials running before then were judged by an earlier tracker

    def forget(self, job_id: str) -> None:
        """It ended for good: nothing more to judge of it."""
        self._judged.pop(job_id, None)

    def judge(self, job: JobRecord) -> JobRecord:
        """The running job, asked to stop if its sweep's rule says so."""
        if not job.sweep_id or job.cancel_requested or job.state is not JobState.RUNNING:
            return job
        sweep = self._sweep(job.sweep_id)
        if sweep is None or sweep.early_stop is None:
            return job
        rule = sweep.early_stop
        metric = rule.objective.metric
        mine = self.sweeps.curves(job.sweep_id, metric, job.id).get(job.id, [])
        last = max((step for step, _ in mine), default=0)
        after = self._judged.get(job.id)
        if after is None and job.started_at is not None and job.started_at < self._since:
            # Taken over from an earlier tracker: what it judged is not known, and judging
            # old steps against trials that reached them later could stop one that passed.
            # Only the steps it reaches from now on are judged.
            self._judged[job.id] = last
            return job
        after = after or 0
        if last <= after:
            return job  # no new step: nothing to judge
        curves = self.sweeps.curves(job.sweep_id, metric)
        done = self.sweeps.succeeded(job.sweep_id)
        others = [c for j, c in curves.items() if j != job.id]
        completed = [c for j, c in curves.items() if j in done]
        verdict = judge(rule, mine, others, completed, after_step=after)
        self._judged[job.id] = last
        if verdict is None:
            return job
        why = verdict.sentence(rule.objective)
        if not self.jobs.update_fields(job.id, JobState.RUNNING, unless_stopping=True,
                                       cancel_requested=True, end_reason=STOPPED_EARLY,
                                       message=why):
            return job  # it ended, or was asked to stop for another reason, meanwhile
        log.info("job %s: %s", job.id, why)
        self._judged.pop(job.id, None)
        return replace(job, cancel_requested=True, end_reason=STOPPED_EARLY, message=why)

    def _sweep(self, sweep_id: str) -> SweepRecord | None:
        if sweep_id not in self._settings:
            self._settings[sweep_id] = self.sweeps.of([sweep_id]).get(sweep_id)
        return self._settings[sweep_id]
