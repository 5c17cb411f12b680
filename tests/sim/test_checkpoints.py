"""What a preemption loses in the replay: the work since the victim's last checkpoint, and
nothing in a queue whose grace lets its jobs checkpoint on notice."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.sim.test_policies import THREE, pool_policy, replay
from trainyard.domain.notice import NoticeSignal
from trainyard.sim.checkpoints import NO_CHECKPOINTS, Checkpointing, checkpointing


def test_a_preemption_loses_the_run_since_the_last_periodic_checkpoint() -> None:
    every = Checkpointing(30.0)
    assert every.lost(100.0, "q") == 10.0  # checkpoints at 30, 60, 90
    assert every.lost(90.0, "q") == 0.0
    assert every.lost(20.0, "q") == 20.0  # none yet: all of it
    assert NO_CHECKPOINTS.lost(100.0, "q") == 0.0 and not NO_CHECKPOINTS.modelled
    assert Checkpointing(30.0, frozenset({"q"})).lost(100.0, "q") == 0.0  # on notice


def test_queues_whose_grace_covers_a_checkpoint_save_one_on_notice() -> None:
    policy = pool_policy(2, {"long": 0, "short": 0, "plain": 0}).policy
    queues = dict(policy.queues)
    queues["long"] = replace(queues["long"], preempt_notice=NoticeSignal.SIGUSR1,
                             preempt_grace_s=120.0)
    queues["short"] = replace(queues["short"], preempt_grace_s=10.0)
    policy = replace(policy, queues=queues)
    assert checkpointing(policy, 1800.0, 60.0).on_notice == frozenset({"long"})
    assert checkpointing(policy, 1800.0).on_notice == frozenset()  # no checkpoint time


def test_the_replay_resumes_from_the_checkpoint_and_counts_the_gpu_hours_lost() -> None:
    # srtf-oracle stops a and b at 10 for c; with a checkpoint every 4 s each loses 2 s.
    jobs, summary = replay(THREE, "srtf-oracle", checkpoints=Checkpointing(4.0))
    assert jobs == {"a": (112, 10), "b": (62, 10), "c": (10, 0)}
    assert summary["preemptions"] == 2
    assert summary["gpu_hours_lost"] == pytest.approx(4 / 3600)
    assert summary["teams"]["y"]["gpu_hours_lost"] == pytest.approx(2 / 3600)
    # Without an interval nothing is lost and the summary says nothing of it, as before.
    before, plain = replay(THREE, "srtf-oracle")
    assert before == {"a": (110, 10), "b": (60, 10), "c": (10, 0)}
    assert "gpu_hours_lost" not in plain and "gpu_hours_lost" not in plain["teams"]["y"]
