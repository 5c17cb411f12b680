"""The rules of the policy file's pydantic schema that tests/services/test_policy_file.py does
not reach: exact types, nulls, device ids, durations, keys that are not strings, problems
reported together with the quotas they leave checkable, and the order of problems written
on one line."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from trainyard.domain.kinds import KINDS
from trainyard.services.policy_file import PolicyError, parse_policy, parse_policy_document
from trainyard.services.policy_file.schema import (
    PolicyModel,
    PoolModel,
    QueueModel,
    QuotaModel,
    TeamModel,
    declared,
)

NAME_RULE = "use letters, digits, '.', '_' and '-', starting with a letter or digit"
TOML = """\
[pools.cpu]
cpus = 4
memory_mb = 8192
max_jobs = 2

[pools.gpu]
executor = "docker"
gpu_ids = ["0", "1"]
max_jobs = 2

[queues.default]
pools = ["cpu"]

[teams.vision.quota.gpu]
gpus = 1
"""
CPU_POOL = "[pools.cpu]\ncpus = 4\nmemory_mb = 8192\nmax_jobs = 2\n"


def problems(text: str, fmt: str = "toml") -> list[str]:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, fmt, source=f"policy.{fmt}")
    return [problem.removeprefix(f"policy.{fmt}, ") for problem in caught.value.problems]


def edit(old: str, new: str) -> str:
    assert TOML.count(old) == 1, old
    return TOML.replace(old, new)


@pytest.mark.parametrize(("old", "new", "expected"), [
    # exact types: a boolean is not a number, 2.0 is not an integer, 1 is not true
    ("max_jobs = 2\n\n[pools.gpu]", "max_jobs = true\n\n[pools.gpu]",
     ["line 4: pools.cpu.max_jobs: must be an integer, got true"]),
    ("max_jobs = 2\n\n[pools.gpu]", "max_jobs = 2.0\n\n[pools.gpu]",
     ["line 4: pools.cpu.max_jobs: must be an integer, got 2.0"]),
    ('pools = ["cpu"]', 'pools = ["cpu"]\npreemptible = 1',
     ["line 13: queues.default.preemptible: must be true or false, got 1"]),
    # numbers are finite
    ("cpus = 4", "cpus = inf", ["line 2: pools.cpu.cpus: must be a finite number, got inf"]),
    ('pools = ["cpu"]', 'pools = ["cpu"]\nweight = nan',
     ["line 13: queues.default.weight: must be a finite number, got nan"]),
    # a queue's pools
    ('pools = ["cpu"]', "pools = []",
     ["line 12: queues.default.pools: must name at least one pool"]),
    ('pools = ["cpu"]', 'pools = ["tpu"]',  # one problem, not also "at least one"
     ['line 12: queues.default.pools[0]: no pool named "tpu" is declared (pools: cpu, gpu)']),
    # executors
    ('executor = "docker"', 'executor = "podman"',
     [f'line 7: pools.gpu.executor: must be one of {", ".join(KINDS)}, got "podman"']),
    # device ids; a pool whose ids are refused has no GPUs
    ('gpu_ids = ["0", "1"]', 'gpu_ids = "0,1"',
     ['line 8: pools.gpu.gpu_ids: must be a list of device ids, got "0,1"',
      'line 15: teams.vision.quota.gpu.gpus: 1 is more than the 0 GPUs of pool "gpu"']),
    ('gpu_ids = ["0", "1"]', 'gpu_ids = [0, "0", "bad id", true, "GPU-8d2f/1"]',
     ['line 8: pools.gpu.gpu_ids[1]: "0" is listed twice',
      'line 8: pools.gpu.gpu_ids[2]: "bad id" is not a valid device id',
      "line 8: pools.gpu.gpu_ids[3]: true is not a valid device id"]),
    ('gpu_ids = ["0", "1"]', 'gpu_ids = ["0", "1"]\ngpus = 2',
     ["line 8: pools.gpu.gpu_ids: give gpus or gpu_ids, not both",
      'line 16: teams.vision.quota.gpu.gpus: 1 is more than the 0 GPUs of pool "gpu"']),
    # quotas: CPUs alone, GPUs added up (reported at the key that declares them), a bad table
    ("gpus = 1", "gpus = 1\n[teams.vision.quota.cpu]\ncpus = 5",
     ['line 17: teams.vision.quota.cpu.cpus: 5 is more than the 4 CPUs of pool "cpu"']),
    ("gpus = 1", "gpus = 2\n[teams.nlp.quota.gpu]\ngpus = 1",
     ["line 8: pools.gpu.gpu_ids: the teams' quotas add up to 3 GPUs (vision 2, nlp 1), more "
      "than the pool's 2"]),
    ("gpus = 1", "gpus = 1\n[teams.nlp.quota]\ncpu = 2",
     ["line 17: teams.nlp.quota.cpu: must be a table, got 2"]),
])
def test_each_rule_of_the_schema_has_its_sentence(old: str, new: str,
                                                   expected: list[str]) -> None:
    assert problems(edit(old, new)) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ('fair_share_half_life = "0s"\n' + TOML,
     ['line 1: fair_share_half_life: must be longer than 0, got "0s"']),
    ("fair_share_half_life = 0\nreserve_after = -1\nmin_runtime = \"1 h\"\n" + TOML,
     ["line 1: fair_share_half_life: must be greater than 0, got 0",
      "line 2: reserve_after: must be at least 0, got -1"]),
])
def test_durations_are_positive_where_they_must_be(text: str, expected: list[str]) -> None:
    assert problems(text) == expected


def test_a_null_is_a_value_of_the_wrong_type_not_a_key_left_out() -> None:
    text = ("pools:\n  cpu:\n    cpus:\n    max_jobs: 1\n    gpu_ids: null\n"
            "queues:\n  q:\n    pools: [cpu]\n    preemptible: ~\n    max_running: null\n")
    assert problems(text, "yaml") == [
        "line 3: pools.cpu.cpus: must be a number, got nothing",
        "line 5: pools.cpu.gpu_ids: must be a list of device ids, got nothing",
        "line 9: queues.q.preemptible: must be true or false, got nothing",
        "line 10: queues.q.max_running: must be an integer, got nothing",
    ]


def test_yaml_keys_that_are_not_strings() -> None:
    text = ("pools:\n  cpu: {max_jobs: 1, gpu_ids: [0, 1]}\n  1: {max_jobs: 0}\n"
            "queues:\n  q: {pools: [cpu]}\nteams:\n  a: {members: [{x: 1}]}\n2: x\n")
    # An entry under such a key is not read further; the ids 0 and 1 are "0" and "1".
    assert problems(text, "yaml") == [
        f"line 3: pools.1: 1 is not a valid name: {NAME_RULE}",
        f"line 7: teams.a.members[0]: a mapping is not a valid name: {NAME_RULE}",
        "line 8: 2: unknown key (expected one of: max_running, fair_share_half_life, "
        "reserve_after, min_runtime, service_levels, limits, pools, queues, teams)",
    ]
    valid = text.replace("  1: {max_jobs: 0}\n", "").replace("[{x: 1}]", "[ann]")
    assert parse_policy(valid.replace("2: x\n", ""), "yaml").pools["cpu"].capacity.gpu_ids == (
        "0", "1")


@pytest.mark.parametrize(("old", "new", "expected"), [
    # a pool with a refused value still holds its quotas
    ("cpus = 4", "cpus = 0", ["line 2: pools.cpu.cpus: must be greater than 0, got 0",
                              "line 17: teams.vision.quota.cpu.memory_mb: 9000 MiB is more "
                              'than the 8192 MiB of pool "cpu"']),
    # and so does one that lacks a required key
    ("max_jobs = 2\n\n[pools.gpu]", "\n[pools.gpu]",
     ["line 1: pools.cpu.max_jobs: is required",
      "line 16: teams.vision.quota.cpu.memory_mb: 9000 MiB is more than the 8192 MiB of "
      'pool "cpu"']),
])
def test_quotas_are_checked_beside_other_problems(old: str, new: str,
                                                  expected: list[str]) -> None:
    text = edit(old, new).replace("gpus = 1", "gpus = 1\n[teams.vision.quota.cpu]\n"
                                  "memory_mb = 9000")
    assert problems(text) == expected


def test_a_name_that_is_not_a_name_still_names_its_entry() -> None:
    text = edit("[pools.cpu]", '[pools."my cpu"]').replace('pools = ["cpu"]',
                                                            'pools = ["my cpu"]')
    assert problems(text) == [
        f'line 1: pools.my cpu: "my cpu" is not a valid name: {NAME_RULE}',
        f'line 12: queues.default.pools[0]: "my cpu" is not a valid name: {NAME_RULE}',
    ]


@pytest.mark.parametrize(("old", "new", "expected"), [
    # a table's unknown keys first, then its values in the order the schema documents
    (CPU_POOL, "[pools]\ncpu = {cores = 4, cpus = 0}\n",
     ["line 2: pools.cpu.cores: unknown key (expected one of: executor, cpus, memory_mb, "
      "gpus, gpu_ids, max_jobs, partition, account, qos, staging, cache_dir, cache_mb, "
     "python, service_address, spread, grace, kubernetes)",
      "line 2: pools.cpu.max_jobs: is required",
      "line 2: pools.cpu.cpus: must be greater than 0, got 0"]),
    # a team's quotas one by one, each with its own problems
    ("[teams.vision.quota.gpu]\ngpus = 1", "[teams.vision]\nquota = {gpu = {gpus = 3}, "
     "tpu = {gpus = 1}}",
     ['line 15: teams.vision.quota.gpu.gpus: 3 is more than the 2 GPUs of pool "gpu"',
      'line 15: teams.vision.quota.tpu: no pool named "tpu" is declared (pools: cpu, gpu)']),
])
def test_problems_on_one_line_come_in_the_order_of_checking(
        old: str, new: str, expected: list[str]) -> None:
    assert problems(edit(old, new)) == expected


def test_other_sections_are_allowed_and_kept_apart() -> None:
    document = parse_policy_document(TOML + "[sim]\nqos = {high = 'default'}\n", "toml",
                                     sections=("sim",))
    assert document.sections == {"sim": {"qos": {"high": "default"}}}
    assert document.where(("sim", "qos")) == "<policy>, line 17: sim.qos"
    with pytest.raises(PolicyError, match=r"line 1: simulate: unknown key \(expected one "
                       r"of: .*, teams, sim\)$"):
        parse_policy_document("simulate = 1\n" + TOML, "toml", sections=("sim",))


def test_the_models_alone_report_pydantic_errors_with_their_key_paths() -> None:
    data = {"pools": {"cpu": {"max_jobs": 0}}, "queues": {"q": {"pools": ["cpu", "tpu"]}}}
    with pytest.raises(ValidationError) as caught:
        PolicyModel.model_validate(data, context=declared(data))
    assert [(error["type"], error["loc"]) for error in caught.value.errors()] == [
        ("greater_than_equal", ("pools", "cpu", "max_jobs")),
        ("undeclared", ("queues", "q", "pools", 1)),
    ]
    with pytest.raises(TypeError, match="context=declared"):
        PolicyModel.model_validate(data)


@pytest.mark.parametrize("model", [PolicyModel, PoolModel, QueueModel, TeamModel, QuotaModel])
def test_the_documented_keys_are_the_fields(model: type[PolicyModel]) -> None:
    assert sorted(model.documented_keys()) == sorted(model.model_fields)

