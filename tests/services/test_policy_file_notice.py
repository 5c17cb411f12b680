"""A queue's preemption notice in the policy file: `preempt_notice` and `preempt_grace`."""

from __future__ import annotations

import pytest

from trainyard.domain.notice import DEFAULT_NOTICE, NoticeRule, NoticeSignal
from trainyard.services.policy_file import PolicyError, parse_policy

BASE = """
[pools.cpu]
cpus = 4
max_jobs = 2

[queues.train]
pools = ["cpu"]
"""


@pytest.mark.parametrize(("lines", "rule"), [
    ("", DEFAULT_NOTICE),
    ('preempt_notice = "SIGUSR1"\npreempt_grace = "90s"\n',
     NoticeRule(NoticeSignal.SIGUSR1, 90.0)),
    ('preempt_notice = "TERM"\npreempt_grace = "2m"\n', NoticeRule(NoticeSignal.TERM, 120.0)),
    ('preempt_notice = "none"\n', NoticeRule(NoticeSignal.NONE, None)),
    ("preempt_grace = 0\n", NoticeRule(NoticeSignal.TERM, 0.0)),
])
def test_a_queue_names_its_notice_and_grace(lines: str, rule: NoticeRule) -> None:
    assert parse_policy(BASE + lines, "toml").notice_for("train") == rule


def test_yaml_says_the_same() -> None:
    text = ("pools: {cpu: {cpus: 4, max_jobs: 2}}\nqueues:\n  train:\n    pools: [cpu]\n"
            "    preempt_notice: SIGUSR1\n    preempt_grace: 90s\n")
    assert parse_policy(text, "yaml").notice_for("train") == \
        NoticeRule(NoticeSignal.SIGUSR1, 90.0)


@pytest.mark.parametrize(("line", "message"), [
    ('preempt_notice = "USR1"', 'queues.train.preempt_notice: must be one of "SIGUSR1", '
                                '"TERM", "none", got "USR1"'),
    ('preempt_notice = "sigusr1"', 'queues.train.preempt_notice: must be one of'),
    ("preempt_notice = 10", "queues.train.preempt_notice: must be a string, got 10"),
    ('preempt_grace = "soon"', "queues.train.preempt_grace: must be a duration"),
    ("preempt_grace = -1", "queues.train.preempt_grace: must be at least 0, got -1"),
])
def test_a_bad_setting_names_its_key(line: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(BASE + line + "\n", "toml")
    assert message in str(info.value)
