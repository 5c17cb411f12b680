"""A policy file at the limits of what its readers take: nested 1,000 (and 100,000) deep,
huge, or with every kind of odd character, is answered with a PolicyError sentence, never
a RecursionError or another crash; the `[limits]` table is checked like every other."""

from __future__ import annotations

import pytest

from trainyard.services.policy_file import PolicyError, parse_policy

BASE = '[pools.cpu]\nmax_jobs = 2\n[queues.default]\npools = ["cpu"]\n'


def deep_toml(depth: int) -> list[str]:
    return [BASE + "x = " + "[" * depth + "]" * depth + "\n",
            BASE + "x = " + "{a = " * depth + "1" + "}" * depth + "\n",
            BASE + "[" + ".".join(["a"] * depth) + "]\n"]


def deep_yaml(depth: int) -> list[str]:
    return ["x: " + "[" * depth + "]" * depth + "\n",
            "".join(" " * i + "a:\n" for i in range(depth)) + " " * depth + "b: 1\n"]


@pytest.mark.parametrize("depth", [1000, 20_000])
def test_a_file_nested_deep_is_a_sentence(depth: int) -> None:
    for fmt, texts in (("toml", deep_toml(depth)), ("yaml", deep_yaml(depth))):
        for text in texts:
            with pytest.raises(PolicyError) as refused:
                parse_policy(text, fmt, source="deep.policy")
            assert "deep.policy" in str(refused.value)


@pytest.mark.parametrize("text", [
    BASE + "max_running = " + "9" * 5000 + "\n",  # past Python's digit limit for int()
    BASE + "max_running = 1e999\n",
    BASE + "fair_share_half_life = nan\n",
    BASE + '[teams."\\u0000"]\nmembers = []\n',
    BASE + '[teams."a\u202eb"]\nmembers = ["\U0001f642"]\n',
    BASE + '[teams.t]\nmembers = ["' + "x" * (1 << 20) + '"]\n',
    BASE + "[limits]\nmax_waiting_per_user = 9223372036854775808\n" + "#" * (1 << 20),
    BASE + "[limits]\nsubmits_per_minute_per_team = -1\n",
    BASE + "[limits]\nsubmits_per_minute_per_user = true\n",
    BASE + '[limits]\nmax_waiting_per_team = "1k"\n',
    BASE + "[limits]\nmax_waiting = 3\n",
    BASE + "limits = 3\n".replace("limits", "[limits]\nmax_waiting_per_user = [3]"),
])
def test_odd_values_are_sentences(text: str) -> None:
    try:
        parse_policy(text, "toml", source="odd.toml")
    except PolicyError as exc:
        assert "odd.toml" in str(exc)


def test_a_yaml_number_of_thousands_of_digits_is_a_sentence() -> None:
    with pytest.raises(PolicyError, match="odd.yaml: a number has too many digits"):
        parse_policy("max_running: " + "9" * 5000 + "\n", "yaml", source="odd.yaml")


def test_limits_are_read() -> None:
    policy = parse_policy(BASE + "[limits]\nmax_waiting_per_user = 1000\n"
                          "max_waiting_per_team = 5000\nsubmits_per_minute_per_user = 600\n"
                          "submits_per_minute_per_team = 3000\n", "toml")
    assert (policy.limits.max_waiting_per_user, policy.limits.max_waiting_per_team,
            policy.limits.submits_per_minute_per_user,
            policy.limits.submits_per_minute_per_team) == (1000, 5000, 600, 3000)
    assert parse_policy(BASE, "toml").limits.waiting_capped is False


@pytest.mark.parametrize(("line", "said"), [
    ("max_waiting_per_user = 0", "limits.max_waiting_per_user: must be at least 1, got 0"),
    ("max_waiting = 3", "limits.max_waiting: unknown key (expected one of: "
                        "max_waiting_per_user, max_waiting_per_team, "
                        "submits_per_minute_per_user, submits_per_minute_per_team)"),
    ('submits_per_minute_per_team = "3"',
     'limits.submits_per_minute_per_team: must be an integer, got "3"'),
])
def test_a_bad_limit_names_its_line_and_key(line: str, said: str) -> None:
    with pytest.raises(PolicyError) as refused:
        parse_policy(BASE + "[limits]\n" + line + "\n", "toml", source="p.toml")
    assert str(refused.value) == f"p.toml, line 6: {said}"
