"""The notice a job gets before it is preempted: where it stands, and the work it loses."""

from __future__ import annotations

import pytest

from trainyard.domain.notice import (
    DEFAULT_NOTICE,
    NoticeRule,
    NoticeSignal,
    Step,
    next_step,
    stop_due,
    work_lost,
)
from trainyard.domain.policy import Policy, Queue


def step(notice_at: float | None, checkpoint_at: float | None, now: float,
         grace_s: float = 90.0) -> Step:
    return next_step(notice_at=notice_at, checkpoint_at=checkpoint_at, grace_s=grace_s, now=now)


def test_a_job_not_noticed_yet_gets_its_notice_first() -> None:
    assert step(None, None, now=100.0) is Step.NOTIFY
    assert step(None, 50.0, now=100.0) is Step.NOTIFY  # a checkpoint before is no reason


def test_within_its_grace_it_waits_unless_it_saved_a_checkpoint_since_the_notice() -> None:
    assert step(100.0, None, now=150.0) is Step.WAIT
    assert step(100.0, 80.0, now=150.0) is Step.WAIT  # saved before the notice: keeps going
    assert step(100.0, 100.0, now=150.0) is Step.WAIT  # not after it
    assert step(100.0, 120.0, now=121.0) is Step.SAVED


def test_its_grace_ends_it() -> None:
    assert step(100.0, None, now=189.9) is Step.WAIT
    assert step(100.0, None, now=190.0) is Step.OVER
    assert step(100.0, None, now=100.0, grace_s=0.0) is Step.OVER  # no grace: stopped at once
    assert step(100.0, 195.0, now=195.0) is Step.SAVED  # saved: the reason it stops


def test_a_remote_job_is_told_to_stop_once_it_saved_or_its_grace_is_over() -> None:
    def due(checkpoint_at: float | None, now: float) -> bool:
        return stop_due(notice_at=100.0, checkpoint_at=checkpoint_at, grace_s=90.0, now=now)

    assert not due(None, 150.0) and not due(80.0, 150.0)  # in its grace, nothing new saved
    assert due(120.0, 121.0)  # saved since its notice
    assert due(None, 190.0)  # its grace is over
    assert stop_due(notice_at=None, checkpoint_at=None, grace_s=0.0, now=1e9) is False


def test_work_lost_is_the_run_since_its_last_checkpoint_or_its_start() -> None:
    assert work_lost(started_at=100.0, checkpoint_at=None, stopped_at=400.0) == 300.0
    assert work_lost(started_at=100.0, checkpoint_at=350.0, stopped_at=400.0) == 50.0
    # A checkpoint of an earlier attempt (before this one started) saves none of its work.
    assert work_lost(started_at=100.0, checkpoint_at=90.0, stopped_at=400.0) == 300.0
    assert work_lost(started_at=None, checkpoint_at=None, stopped_at=400.0) == 0.0  # never ran
    assert work_lost(started_at=100.0, checkpoint_at=None, stopped_at=90.0) == 0.0


@pytest.mark.parametrize(("rule", "signal", "grace"), [
    (DEFAULT_NOTICE, NoticeSignal.TERM, 10.0),  # today's: TERM, the server's cancel grace
    (NoticeRule(NoticeSignal.SIGUSR1, 90.0), NoticeSignal.SIGUSR1, 90.0),
    (NoticeRule(NoticeSignal.NONE, 0.0), NoticeSignal.NONE, 0.0),
])
def test_a_rule_names_its_signal_and_grace(rule: NoticeRule, signal: NoticeSignal,
                                           grace: float) -> None:
    assert rule.signal is signal and rule.grace(10.0) == grace


def test_a_queue_gives_its_notice_and_an_unlisted_queue_the_default() -> None:
    queue = Queue("train", pools=("cpu",), preempt_notice=NoticeSignal.SIGUSR1,
                  preempt_grace_s=90.0)
    policy = Policy(pools={}, queues={"train": queue, "plain": Queue("plain", pools=("cpu",))})
    assert policy.notice_for("train") == NoticeRule(NoticeSignal.SIGUSR1, 90.0)
    assert policy.notice_for("plain") == DEFAULT_NOTICE
    assert policy.notice_for("gone") == DEFAULT_NOTICE
    assert [s.value for s in NoticeSignal] == ["SIGUSR1", "TERM", "none"]  # the spellings
