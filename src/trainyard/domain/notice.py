"""Preemption with notice: what a queue gives a job it is about to stop (a file the job's
runtime watches, a signal, a grace to checkpoint in), the next step for a job being
preempted, and the work a preemption loses. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# What the job sees: the file whose existence says "you are being preempted", and the file
# its runtime's checkpoint_saved() counts complete checkpoints in (trainyard.runtime reads
# the same names; it cannot import this module inside an image).
NOTICE_ENV = "TRAINYARD_PREEMPT_NOTICE"
CHECKPOINT_SIGNAL_ENV = "TRAINYARD_CHECKPOINT_SIGNAL"
# Both in the attempt's working directory, which every executor shows the job (a Docker
# job at its mount): one place for the service to write the notice and read the counter.
NOTICE_FILE = ".trainyard-preempt-notice"
CHECKPOINT_SIGNAL_FILE = ".trainyard-checkpoint-saved"


class NoticeSignal(StrEnum):
    """A queue's `preempt_notice`: the signal sent with the notice file."""

    SIGUSR1 = "SIGUSR1"  # the job goes on running; it checkpoints and is then stopped
    TERM = "TERM"  # today's stop: TERM now, KILL at the grace's end
    NONE = "none"  # the file only


NOTICE_SIGNALS = tuple(s.value for s in NoticeSignal)


@dataclass(frozen=True)
class NoticeRule:
    """A queue's notice: the signal, and the grace between the notice and the stop (None:
    the server's cancel grace, as before queues could say)."""

    signal: NoticeSignal = NoticeSignal.TERM
    grace_s: float | None = None

    def grace(self, default_s: float) -> float:
        return default_s if self.grace_s is None else self.grace_s


DEFAULT_NOTICE = NoticeRule()


class Step(StrEnum):
    NOTIFY = "notify"  # give notice now: write the file, send the queue's signal
    WAIT = "wait"  # within its grace, no checkpoint reported since the notice
    SAVED = "saved"  # it reported a checkpoint after the notice: stop it now
    OVER = "over"  # its grace is over: stop it now


def next_step(*, notice_at: float | None, checkpoint_at: float | None, grace_s: float,
              now: float) -> Step:
    """Where a job being preempted stands: not noticed yet, in its grace, or to be stopped
    (it reported a checkpoint after its notice, so waiting longer saves nothing; or its
    grace ran out)."""
    if notice_at is None:
        return Step.NOTIFY
    if checkpoint_at is not None and checkpoint_at > notice_at:
        return Step.SAVED
    if now >= notice_at + grace_s:
        return Step.OVER
    return Step.WAIT


def work_lost(*, started_at: float | None, checkpoint_at: float | None,
              stopped_at: float) -> float:
    """The seconds a preempted attempt ran past its last reported checkpoint (past its start
    when it reported none): the work its next attempt does again."""
    if started_at is None:
        return 0.0
    since = checkpoint_at if checkpoint_at is not None and checkpoint_at > started_at \
        else started_at
    return max(0.0, stopped_at - since)


def stop_due(*, notice_at: float | None, checkpoint_at: float | None, grace_s: float,
             now: float) -> bool:
    """Whether a job given notice is to be stopped now (next_step's SAVED or OVER): what a
    remote job's runtime agent is told, as the tracker stops it through its engine."""
    return next_step(notice_at=notice_at, checkpoint_at=checkpoint_at, grace_s=grace_s,
                     now=now) in (Step.SAVED, Step.OVER)
