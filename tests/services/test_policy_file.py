from pathlib import Path

import pytest

from trainyard.domain.policy import Policy, Pool, Queue, Quota, Team
from trainyard.domain.pools import PoolCapacity
from trainyard.services.policy_file import PolicyError, load_policy, parse_policy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Small valid policies, the same in both formats; the tests break them one line at a time.
TOML = """\
max_running = 4
reserve_after = "10m"

[pools.cpu]
cpus = 4
memory_mb = 8192
max_jobs = 2

[pools.gpu]
executor = "docker"
gpus = 2
max_jobs = 2

[queues.default]
pools = ["cpu"]
priority = 0

[teams.vision]
members = ["ann"]

[teams.vision.quota.cpu]
cpus = 2
memory_mb = 4096

[teams.nlp.quota.cpu]
cpus = 2
"""
YAML = """\
max_running: 4
reserve_after: 10m
pools:
  cpu:
    cpus: 4
    memory_mb: 8192
    max_jobs: 2
  gpu:
    executor: docker
    gpus: 2
    max_jobs: 2
queues:
  default:
    pools: [cpu]
    priority: 0
teams:
  vision:
    members: [ann]
    quota:
      cpu:
        cpus: 2
        memory_mb: 4096
  nlp:
    quota:
      cpu:
        cpus: 2
"""
BASES = {"toml": TOML, "yaml": YAML}


def problems(text: str, fmt: str) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, fmt, source=f"policy.{fmt}")
    assert str(caught.value) == "\n".join(caught.value.problems)
    return caught.value.problems


def edit(fmt: str, old: str, new: str) -> str:
    assert BASES[fmt].count(old) == 1, old
    return BASES[fmt].replace(old, new)


def test_the_examples_declare_the_same_policy_in_both_formats() -> None:
    from_toml = load_policy(EXAMPLES / "policy.toml")
    assert load_policy(EXAMPLES / "policy.yaml") == from_toml
    assert from_toml.max_running == 8
    assert from_toml.fair_share_half_life_s == 3600.0
    assert from_toml.reserve_after_s == 600.0
    assert from_toml.service_levels is True
    assert from_toml.pools["cpu"] == Pool(PoolCapacity("cpu", 8, 16.0, 65536), "local")
    assert from_toml.pools["gpu"] == Pool(
        PoolCapacity("gpu", 4, 32.0, 262144, ("0", "1", "2", "3")), "docker")
    assert list(from_toml.queues) == ["default", "gpu", "urgent"]
    assert from_toml.queues["default"] == Queue("default", ("cpu",))
    assert from_toml.queues["gpu"] == Queue("gpu", ("gpu",), priority=10, max_running=4,
                                            teams=frozenset({"vision", "nlp"}), weight=2.0,
                                            max_attempts=3, time_limit_s=12 * 3600,
                                            max_time_limit_s=2 * 86400)
    assert from_toml.queues["urgent"].pools == ("gpu", "cpu")
    assert from_toml.queues["urgent"].users == frozenset({"ann"})
    assert from_toml.teams["vision"] == Team("vision", frozenset({"ann", "bob"}), {
        "gpu": Quota(cpus=16.0, memory_mb=131072, gpus=2, borrow_gpus=1)})
    assert from_toml.teams["nlp"].quotas["cpu"] == Quota(cpus=4.0, memory_mb=16384)
    assert from_toml.teams_of("carol") == {"nlp"}


@pytest.mark.parametrize("fmt", ["toml", "yaml"])
def test_the_small_policies_are_valid_and_defaults_fill_in(fmt: str) -> None:
    policy = parse_policy(BASES[fmt], fmt)
    assert policy == Policy(
        pools={"cpu": Pool(PoolCapacity("cpu", 2, 4.0, 8192)),
               "gpu": Pool(PoolCapacity("gpu", 2, gpu_ids=("0", "1")), "docker")},
        queues={"default": Queue("default", ("cpu",))},
        teams={"vision": Team("vision", frozenset({"ann"}),
                              {"cpu": Quota(cpus=2.0, memory_mb=4096)}),
               "nlp": Team("nlp", quotas={"cpu": Quota(cpus=2.0)})},
        max_running=4, fair_share_half_life_s=3600.0, reserve_after_s=600.0)


@pytest.mark.parametrize("fmt", ["toml", "yaml"])
def test_service_levels_can_be_turned_off(fmt: str) -> None:
    old, new = ("max_running = 4", "max_running = 4\nservice_levels = false") if fmt == "toml" \
        else ("max_running: 4", "max_running: 4\nservice_levels: false")
    assert parse_policy(edit(fmt, old, new), fmt).service_levels is False


@pytest.mark.parametrize(("fmt", "old", "new", "expected"), [
    # a wrong type
    ("toml", "priority = 0", 'priority = "high"',
     'line 16: queues.default.priority: must be an integer, got "high"'),
    ("yaml", "priority: 0", "priority: high",
     'line 15: queues.default.priority: must be an integer, got "high"'),
    ("toml", "cpus = 4", "cpus = true", "line 5: pools.cpu.cpus: must be a number, got true"),
    ("yaml", "members: [ann]", "members: ann",
     'line 18: teams.vision.members: must be a list of names, got "ann"'),
    # out of range
    ("toml", "max_running = 4", "max_running = 0",
     "line 1: max_running: must be at least 1, got 0"),
    ("toml", "max_running = 4", 'max_running = 4\nservice_levels = "yes"',
     'line 2: service_levels: must be true or false, got "yes"'),
    ("yaml", "cpus: 4", "cpus: -1", "line 5: pools.cpu.cpus: must be greater than 0, got -1"),
    # retries and time limits
    ("yaml", "priority: 0", "priority: 0\n    max_attempts: 0",
     "line 16: queues.default.max_attempts: must be at least 1, got 0"),
    ("toml", "priority = 0", 'priority = 0\ntime_limit = "soon"',
     'line 17: queues.default.time_limit: must be a duration like "90s", "10m", "1h30m" or '
     '"2d", or a number of seconds, got "soon"'),
    ("yaml", "priority: 0", "priority: 0\n    time_limit: 3h\n    max_time_limit: 2h",
     "line 16: queues.default.time_limit: must not be longer than the queue's "
     "max_time_limit, got 10800.0 seconds"),
    # an unknown key
    ("toml", "max_jobs = 2\n\n[pools.gpu]", "max_jobs = 2\ncores = 4\n\n[pools.gpu]",
     "line 8: pools.cpu.cores: unknown key (expected one of: executor, cpus, memory_mb, "
     "gpus, gpu_ids, max_jobs, partition, account, qos, staging, cache_dir, cache_mb, "
     "python, service_address, spread, grace, kubernetes)"),
    ("yaml", "    members: [ann]", "    members: [ann]\n    lead: ann",
     "line 19: teams.vision.lead: unknown key (expected one of: members, quota, budget)"),
    ("toml", "max_running = 4", "max_running = 4\n[queue.default]",
     "line 2: queue: unknown key (expected one of: max_running, fair_share_half_life, "
     "reserve_after, min_runtime, service_levels, limits, pools, queues, teams)"),
    # an unknown pool in a queue
    ("toml", 'pools = ["cpu"]', 'pools = ["cpu", "gpux"]',
     'line 15: queues.default.pools[1]: no pool named "gpux" is declared (pools: cpu, gpu)'),
    ("yaml", "pools: [cpu]", "pools:\n      - cpu\n      - gpux",
     'line 16: queues.default.pools[1]: no pool named "gpux" is declared (pools: cpu, gpu)'),
    # and other references
    ("toml", "priority = 0", 'teams = ["vision", "audio"]',
     'line 16: queues.default.teams[1]: no team named "audio" is declared '
     "(teams: nlp, vision)"),
    ("yaml", "  nlp:\n    quota:\n      cpu:", "  nlp:\n    quota:\n      tpu:",
     'line 25: teams.nlp.quota.tpu: no pool named "tpu" is declared (pools: cpu, gpu)'),
    # a quota over the pool's capacity
    ("toml", "cpus = 2\nmemory_mb = 4096", "cpus = 2\nmemory_mb = 9000",
     'line 23: teams.vision.quota.cpu.memory_mb: 9000 MiB is more than the 8192 MiB of '
     'pool "cpu"'),
    ("yaml", "        memory_mb: 4096", "        memory_mb: 4096\n        gpus: 1",
     'line 23: teams.vision.quota.cpu.gpus: 1 is more than the 0 GPUs of pool "cpu"'),
    # quotas that fit one by one but not together: reported at the pool
    ("toml", "[teams.nlp.quota.cpu]\ncpus = 2", "[teams.nlp.quota.cpu]\ncpus = 2.5",
     "line 5: pools.cpu.cpus: the teams' quotas add up to 4.5 CPUs (vision 2, nlp 2.5), "
     "more than the pool's 4"),
    ("yaml", "  nlp:\n    quota:\n      cpu:\n        cpus: 2\n",
     "  nlp:\n    quota:\n      cpu:\n        cpus: 2\n        memory_mb: 4097\n",
     "line 6: pools.cpu.memory_mb: the teams' quotas add up to 8193 MiB (vision 4096, "
     "nlp 4097), more than the pool's 8192"),
    # a bad duration
    ("toml", 'reserve_after = "10m"', 'reserve_after = "10 minutes"',
     'line 2: reserve_after: must be a duration like "90s", "10m", "1h30m" or "2d", or a '
     'number of seconds, got "10 minutes"'),
    ("yaml", "reserve_after: 10m", "reserve_after: [10m]",
     "line 2: reserve_after: must be a number, got a list"),
    # a missing required key is reported at its table
    ("toml", "gpus = 2\nmax_jobs = 2", "gpus = 2", "line 9: pools.gpu.max_jobs: is required"),
    # names
    ("toml", "[queues.default]", '[queues."my queue"]',
     'line 14: queues.my queue: "my queue" is not a valid name: use letters, digits, '
     "'.', '_' and '-', starting with a letter or digit"),
    ("yaml", "members: [ann]", "members: [ann, ann]",
     'line 18: teams.vision.members[1]: "ann" is listed twice'),
    # GPUs twice over
    ("toml", "gpus = 2", 'gpus = 2\ngpu_ids = ["0"]',
     "line 12: pools.gpu.gpu_ids: give gpus or gpu_ids, not both"),
    # a key given twice, which PyYAML alone would let pass
    ("yaml", "    priority: 0", "    priority: 0\n    priority: 1",
     "line 16: queues.default.priority: duplicate key (first on line 15)"),
])
def test_each_problem_names_the_line_and_the_field(
        fmt: str, old: str, new: str, expected: str) -> None:
    assert problems(edit(fmt, old, new), fmt) == [f"policy.{fmt}, {expected}"]


@pytest.mark.parametrize(("fmt", "text", "expected"), [
    ("toml", 'max_running = 4\n[pools.cpu]\nmax_jobs = \n',
     "policy.toml, line 3: Invalid value (column 12)"),
    ("toml", "max_running = 4\n[pools.cpu\n",
     "policy.toml, line 2: Expected ']' at the end of a table declaration (column 11)"),
    ("yaml", "pools:\n  cpu:\n    max_jobs: 2\n   cpus: 1\n",
     "policy.yaml, line 4: expected <block end>, but found '<block mapping start>' "
     "(while parsing a block mapping from line 2)"),
    ("yaml", 'max_running: 4\nreserve_after: "10m\n',
     "policy.yaml, line 3: found unexpected end of stream "
     "(while scanning a quoted scalar from line 2)"),
    ("yaml", "- 1\n- 2\n", "policy.yaml: must be a mapping, got a list"),
    ("yaml", "", "policy.yaml: must be a mapping, got nothing"),
    ("json", "{}", "policy.json: unsupported policy format 'json'; use toml or yaml"),
])
def test_unreadable_text_is_reported_with_its_line(fmt: str, text: str, expected: str) -> None:
    assert problems(text, fmt) == [expected]


def test_an_empty_policy_needs_pools_and_queues() -> None:
    assert problems("[pools]\n", "toml") == [
        "policy.toml: queues: at least one queue must be declared",
        "policy.toml, line 1: pools: at least one pool must be declared",
    ]


def test_all_problems_are_reported_together_in_file_order() -> None:
    text = edit("toml", 'reserve_after = "10m"', 'reserve_after = "soon"')
    text = text.replace("cpus = 4", "cpus = 0").replace("max_jobs = 2", 'max_jobs = "2"', 1)
    text = text.replace('pools = ["cpu"]', 'pools = ["tpu"]\nweight = 0')
    found = problems(text, "toml")
    assert [problem.split(": ")[0:2] for problem in found] == [
        ["policy.toml, line 2", "reserve_after"],
        ["policy.toml, line 5", "pools.cpu.cpus"],
        ["policy.toml, line 7", "pools.cpu.max_jobs"],
        ["policy.toml, line 15", "queues.default.pools[0]"],
        ["policy.toml, line 16", "queues.default.weight"],
    ]
    assert "must be greater than 0, got 0" in found[1]
    assert 'must be an integer, got "2"' in found[2]


def test_load_policy_picks_the_format_by_suffix(tmp_path: Path) -> None:
    (tmp_path / "policy.yml").write_text(YAML, encoding="utf-8")
    assert load_policy(tmp_path / "policy.yml") == parse_policy(TOML, "toml")
    bad = tmp_path / "policy.toml"
    bad.write_text(TOML.replace("priority = 0", "priority = 1.5"), encoding="utf-8")
    with pytest.raises(PolicyError, match=rf"^{bad}, line 16: queues\.default\.priority: "):
        load_policy(bad)


def test_load_policy_refuses_other_suffixes_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "policy.json").write_text("{}", encoding="utf-8")
    with pytest.raises(PolicyError, match=r"unsupported policy file type '\.json'; use "
                       r"\.toml, \.yaml or \.yml$"):
        load_policy(tmp_path / "policy.json")
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "absent.toml")


@pytest.mark.parametrize(("value", "seconds"), [
    ('"90s"', 90.0), ('"1h30m"', 5400.0), ('"2d"', 172800.0), ('"0.5h"', 1800.0),
    ("45", 45.0), ("2.5", 2.5),
])
def test_durations_are_strings_with_units_or_seconds(value: str, seconds: float) -> None:
    policy = parse_policy(f"fair_share_half_life = {value}\n" + TOML, "toml")
    assert policy.fair_share_half_life_s == seconds
