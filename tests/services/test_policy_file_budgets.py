"""The policy file's budgets: a team's and a queue's `budget = { gpu_hours, cpu_hours,
period }`, read in TOML and YAML, and every mistake a sentence naming its key path."""

from __future__ import annotations

import pytest

from trainyard.domain.budgets import Budget
from trainyard.services.policy_file import PolicyError, parse_policy

TOML = """
[pools.gpu]
gpus = 4
max_jobs = 4

[queues.train]
pools = ["gpu"]
{queue}

[teams.nlp]
members = ["ann"]
{team}
"""


def toml(team: str = "", queue: str = "") -> str:
    return TOML.format(team=team, queue=queue)


def refused(text: str, fmt: str = "toml") -> list[str]:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, fmt, source="p")
    return caught.value.problems


def test_a_team_and_a_queue_budget_are_read() -> None:
    policy = parse_policy(toml(team='budget = { gpu_hours = 1000, period = "7d" }',
                               queue='budget = { cpu_hours = 12.5, gpu_hours = 0, '
                                     'period = "36h" }'), "toml")
    assert policy.teams["nlp"].budget == Budget(7 * 86400, gpu_hours=1000)
    assert policy.queues["train"].budget == Budget(36 * 3600, gpu_hours=0, cpu_hours=12.5)


def test_no_budget_is_none() -> None:
    policy = parse_policy(toml(), "toml")
    assert policy.teams["nlp"].budget is None and policy.queues["train"].budget is None


def test_yaml_reads_the_same() -> None:
    text = """
pools: {gpu: {gpus: 2, max_jobs: 2}}
queues: {train: {pools: [gpu], budget: {gpu_hours: 5, period: 3600}}}
teams:
  nlp:
    members: [ann]
    budget: {gpu_hours: 100, cpu_hours: 400, period: 1d}
"""
    policy = parse_policy(text, "yaml")
    assert policy.teams["nlp"].budget == Budget(86400, 100, 400)
    assert policy.queues["train"].budget == Budget(3600, 5)


@pytest.mark.parametrize(("budget", "problem"), [
    ('budget = { period = "7d" }', "p, line 12: teams.nlp.budget: must give gpu_hours, "
                                   "cpu_hours or both"),
    ("budget = { gpu_hours = 10 }", "p, line 12: teams.nlp.budget.period: is required"),
    ('budget = { gpu_hours = -1, period = "7d" }',
     "p, line 12: teams.nlp.budget.gpu_hours: must be at least 0, got -1"),
    ('budget = { cpu_hours = "lots", period = "7d" }',
     'p, line 12: teams.nlp.budget.cpu_hours: must be a number, got "lots"'),
    ('budget = { gpu_hours = true, period = "7d" }',
     "p, line 12: teams.nlp.budget.gpu_hours: must be a number, got true"),
    ('budget = { gpu_hours = 1, period = "soon" }',
     'p, line 12: teams.nlp.budget.period: must be a duration like "90s", "10m", "1h30m" or '
     '"2d", or a number of seconds, got "soon"'),
    ('budget = { gpu_hours = 1, period = "0s" }',
     'p, line 12: teams.nlp.budget.period: must be longer than 0, got "0s"'),
    ('budget = { gpu_hours = 1, period = "7d", hours = 3 }',
     "p, line 12: teams.nlp.budget.hours: unknown key (expected one of: gpu_hours, cpu_hours, "
     "period)"),
    ("budget = 1000", "p, line 12: teams.nlp.budget: must be a table, got 1000"),
])
def test_a_bad_team_budget_names_its_key(budget: str, problem: str) -> None:
    assert refused(toml(team=budget)) == [problem]


def test_a_bad_queue_budget_names_its_key_beside_the_others() -> None:
    problems = refused(toml(queue='budget = { gpu_hours = nan, period = "1d" }',
                            team="budget = { cpu_hours = 1, period = -5 }"))
    assert problems == [
        "p, line 8: queues.train.budget.gpu_hours: must be a finite number, got nan",
        "p, line 12: teams.nlp.budget.period: must be greater than 0, got -5",
    ]


def test_the_budget_table_is_listed_among_a_teams_keys() -> None:
    assert refused(toml(team="budgets = 1")) == [
        "p, line 12: teams.nlp.budgets: unknown key (expected one of: members, quota, budget)"]
