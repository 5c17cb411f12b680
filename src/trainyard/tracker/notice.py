"""Preemption with notice, carried out: the checkpoints a running attempt reports, read from
its counter file; the notice a job being preempted gets (the file, its queue's signal) and,
once it saved its checkpoint or its grace ran out, its stop. domain/notice.py decides."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from trainyard.domain.notice import (
    CHECKPOINT_SIGNAL_FILE,
    NOTICE_FILE,
    NoticeRule,
    NoticeSignal,
    Step,
    next_step,
)
from trainyard.executors.base import Executor, Signaller
from trainyard.metadata.workspace import Workspace
from trainyard.runtime.notice import GivenNotice, write_notice
from trainyard.store.preemption_notes import PreemptionNotes
from trainyard.store.records import JobRecord

log = logging.getLogger(__name__)

# How a queue's signal is sent on the service's host: TERM goes through the executor's
# cancel (its KILL follows at the grace's end, as every stop's does); the others through
# Signaller.send_signal. A remote job's agent sends them itself.
_SIGNUMS = {NoticeSignal.SIGUSR1: signal.SIGUSR1}


def read_count(path: Path) -> int:
    """The checkpoints a runtime has counted in its signal file (written by rename, so never
    half); 0 before the first, or when the file holds no count."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


class Notices:
    def __init__(self, *, notes: PreemptionNotes, workspace: Workspace,
                 rule_for: Callable[[str], NoticeRule], cancel_grace: float,
                 clock: Callable[[], float]) -> None:
        self.notes = notes
        self.workspace = workspace
        self.rule_for = rule_for  # a queue's notice, by the policy in place
        self.cancel_grace = cancel_grace  # the grace of a queue that names none
        self.clock = clock
        self._stopped: set[str] = set()  # handles stopped after their notice
        self._termed: set[str] = set()  # handles this process gave a TERM notice (and KILL)

    def observe(self, job: JobRecord) -> JobRecord:
        """A running attempt's checkpoints: a count beyond the one noted is noted, seen now.
        Returns the job with what is noted."""
        path = self.workspace.attempt(job.id, job.attempt).workdir / CHECKPOINT_SIGNAL_FILE
        count = read_count(path)
        if count <= job.checkpoints:
            return job
        now = self.clock()
        if not self.notes.checkpointed(job.id, job.attempt, count, now):
            return job
        return replace(job, checkpoints=count, checkpoint_at=now)

    def preempt(self, job: JobRecord, executor: Executor) -> None:
        """One pass's step for a running job asked to make room: its notice, or its stop.
        A remote job's notice goes through its runtime agent: the file written here is what
        the job runtime service tells the agent in its replies (services/job_runtime.py),
        and the agent writes its own and signals its command; the stop is its engine's."""
        rule = self.rule_for(job.spec.queue)
        grace = rule.grace(self.cancel_grace)
        now = self.clock()
        step = next_step(notice_at=job.notice_at, checkpoint_at=job.checkpoint_at,
                         grace_s=grace, now=now)
        # Neither remote nor a Signaller: no way to warn it, so its notice is its stop.
        engine_only = not executor.remote and not isinstance(executor, Signaller)
        if step is Step.NOTIFY:
            if self._notify(job, executor, rule, grace, engine_only):
                self.notes.noticed(job.id, job.attempt, now)
                how = "its engine's stop" if engine_only else \
                    f"{rule.signal} through its runtime agent" if executor.remote else rule.signal
                log.info("job %s: notice of its preemption given (%s, %g s grace)", job.id,
                         how, grace)
        elif step is not Step.WAIT and not engine_only and job.handle not in self._stopped:
            if step is Step.OVER and rule.signal is NoticeSignal.TERM and \
                    job.handle in self._termed:
                return  # its executor KILLs it at the grace's end, as it was asked
            self._stop(job, executor, rule)

    def _notify(self, job: JobRecord, executor: Executor, rule: NoticeRule, grace: float,
                engine_only: bool) -> bool:
        """The file first (a handler of the signal reads it), then the signal; a remote
        job's agent sends it, once the service told it. False while the job cannot be
        signalled yet: the next pass tries again."""
        if engine_only:
            return executor.cancel(job.handle, grace)
        self._write_notice(job, rule, grace)
        if executor.remote or rule.signal is NoticeSignal.NONE:
            return True
        if rule.signal is NoticeSignal.TERM:
            if not executor.cancel(job.handle, grace):
                return False
            self._termed.add(job.handle)
            return True
        assert isinstance(executor, Signaller)
        return executor.send_signal(job.handle, _SIGNUMS[rule.signal])

    def _stop(self, job: JobRecord, executor: Executor, rule: NoticeRule) -> None:
        """Stop it now: its checkpoint is saved, or its grace is over. After a TERM notice
        the KILL (the executor's own comes at the grace's end, unless the service restarted
        since); after the others TERM, then KILL after the server's cancel grace."""
        kill_after = 0.0 if rule.signal is NoticeSignal.TERM else self.cancel_grace
        if executor.cancel(job.handle, kill_after):
            self._stopped.add(job.handle)

    def forget(self, handle: str) -> None:
        """The attempt ended."""
        self._stopped.discard(handle)
        self._termed.discard(handle)

    def _write_notice(self, job: JobRecord, rule: NoticeRule, grace: float) -> None:
        """The file the job's runtime watches (preemption_requested()); it says the signal
        sent and the grace. A remote job's service reads it here (its agent writes its
        own on its node)."""
        path = self.workspace.attempt(job.id, job.attempt).workdir / NOTICE_FILE
        try:
            write_notice(path, GivenNotice(rule.signal.value, grace))
        except OSError:
            log.exception("job %s: could not write its preemption notice", job.id)
