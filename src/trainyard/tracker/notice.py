"""Preemption with notice, carried out: the checkpoints a running attempt reports, read from
its counter file; the notice a job being preempted gets (the file, its queue's signal) and,
once it saved its checkpoint or its grace ran out, its stop. domain/notice.py decides."""

from __future__ import annotations

import json
import logging
import os
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
from trainyard.store.preemption_notes import PreemptionNotes
from trainyard.store.records import JobRecord

log = logging.getLogger(__name__)

# How a queue's signal is sent: TERM goes through the executor's cancel (its KILL follows at
# the grace's end, as every stop's does); the others through Signaller.send_signal.
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
        """One pass's step for a running job asked to make room: its notice, or its stop."""
        rule = self.rule_for(job.spec.queue)
        grace = rule.grace(self.cancel_grace)
        now = self.clock()
        step = next_step(notice_at=job.notice_at, checkpoint_at=job.checkpoint_at,
                         grace_s=grace, now=now)
        remote = executor.remote or not isinstance(executor, Signaller)
        if step is Step.NOTIFY:
            if self._notify(job, executor, rule, grace, remote):
                self.notes.noticed(job.id, job.attempt, now)
                log.info("job %s: notice of its preemption given (%s, %g s grace)", job.id,
                         "its engine's stop" if remote else rule.signal, grace)
        elif step is not Step.WAIT and not remote and job.handle not in self._stopped:
            if step is Step.OVER and rule.signal is NoticeSignal.TERM and \
                    job.handle in self._termed:
                return  # its executor KILLs it at the grace's end, as it was asked
            self._stop(job, executor, rule)

    def _notify(self, job: JobRecord, executor: Executor, rule: NoticeRule, grace: float,
                remote: bool) -> bool:
        """The file first (a handler of the signal reads it), then the signal. A remote job
        gets its engine's stop: TERM, KILL at the grace's end. False while the job cannot
        be signalled yet: the next pass tries again."""
        if remote:
            return executor.cancel(job.handle, grace)
        self._write_notice(job, rule, grace)
        if rule.signal is NoticeSignal.TERM:
            if not executor.cancel(job.handle, grace):
                return False
            self._termed.add(job.handle)
            return True
        if rule.signal is NoticeSignal.NONE:
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
        """The file the job's runtime watches (preemption_requested()), written whole by a
        rename; it says the signal sent and the grace."""
        path = self.workspace.attempt(job.id, job.attempt).workdir / NOTICE_FILE
        partial = path.with_name(f"{path.name}.partial")
        try:
            partial.write_text(json.dumps({"signal": rule.signal.value,
                                           "grace_seconds": grace}) + "\n")
            os.replace(partial, path)
        except OSError:
            log.exception("job %s: could not write its preemption notice", job.id)
