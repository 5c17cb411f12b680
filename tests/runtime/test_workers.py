"""A remote worker's variables, from Slurm's and the batch script's, for each framework."""

from __future__ import annotations

import json

import pytest

from trainyard.domain.contract import WORKER_NAMES
from trainyard.runtime import framework_env, worker_env
from trainyard.runtime.workers import worker_vars

SLURM = {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1",
         "TRAINYARD_MASTER_ADDR": "10.0.0.1", "TRAINYARD_MASTER_PORT": "4000",
         "TRAINYARD_WORKER_HOSTS": "10.0.0.1,10.0.0.1,10.0.0.2,10.0.0.2"}
ALWAYS = {"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1"}
PYTORCH = {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "4000"}
TF_CONFIG = {"cluster": {"worker": ["10.0.0.1:4001", "10.0.0.1:4002", "10.0.0.2:4003",
                                    "10.0.0.2:4004"]},
             "task": {"type": "worker", "index": 3}}


def test_both_frameworks_by_default() -> None:
    env = worker_vars(SLURM, "both")
    assert json.loads(env.pop("TF_CONFIG")) == TF_CONFIG
    assert env == {**ALWAYS, **PYTORCH}


@pytest.mark.parametrize(("framework", "expected"), [
    ("pytorch", {**ALWAYS, **PYTORCH}), ("none", ALWAYS),
])
def test_one_framework_or_none(framework: str, expected: dict[str, str]) -> None:
    assert worker_vars(SLURM, framework) == expected


def test_tensorflow_alone() -> None:
    env = worker_vars(SLURM, "tensorflow")
    assert json.loads(env.pop("TF_CONFIG")) == TF_CONFIG
    assert env == ALWAYS


def test_outside_slurm_the_executors_variables_stand() -> None:
    assert worker_vars({"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "h"}, "both") == {}


def test_a_single_task_is_no_group_and_gets_none_of_the_variables() -> None:
    assert worker_vars({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, "both") == {}


def test_a_task_without_the_scripts_variables_talks_to_its_own_host() -> None:
    env = worker_vars({"SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, "both")
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("127.0.0.1", "29500")
    assert json.loads(env["TF_CONFIG"])["cluster"]["worker"] == ["127.0.0.1:29501",
                                                                 "127.0.0.1:29502"]


def test_hosts_for_another_number_of_tasks_are_refused() -> None:
    with pytest.raises(ValueError, match="names 2 hosts for 4 tasks"):
        worker_vars({**SLURM, "TRAINYARD_WORKER_HOSTS": "a,b"}, "both")
    with pytest.raises(ValueError, match="unknown framework"):
        framework_env(0, 1, 0, "a", 1, ["a:2"], "jax")


def test_the_local_gang_keeps_its_variables() -> None:
    env = worker_env(1, 2, 5000, [5001, 5002], ["g0", "g1"])
    assert set(env) == WORKER_NAMES
    assert env["CUDA_VISIBLE_DEVICES"] == "g1" and env["MASTER_ADDR"] == "127.0.0.1"
    assert json.loads(env["TF_CONFIG"])["cluster"]["worker"] == ["127.0.0.1:5001",
                                                                 "127.0.0.1:5002"]


def test_a_tfjob_worker_takes_its_rank_from_tf_config_after_the_chief() -> None:
    tf_config = json.dumps({"cluster": {"chief": ["c:1"], "worker": ["w0:1", "w1:1"]},
                            "task": {"type": "worker", "index": 1}})
    assert worker_vars({"TF_CONFIG": tf_config}, "tensorflow") == {"RANK": "2",
                                                                   "WORLD_SIZE": "3"}
    chief = json.dumps({"cluster": {"chief": ["c:1"], "worker": ["w0:1"]},
                        "task": {"type": "chief", "index": 0}})
    assert worker_vars({"TF_CONFIG": chief}, "both") == {"RANK": "0", "WORLD_SIZE": "2"}


def test_a_trainjob_node_takes_its_rank_and_master_from_the_pet_variables() -> None:
    env = {"PET_NNODES": "2", "PET_NPROC_PER_NODE": "1", "PET_NODE_RANK": "1",
           "PET_MASTER_ADDR": "tj-node-0-0.tj", "PET_MASTER_PORT": "29400"}
    assert worker_vars(env, "pytorch") == {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "0",
                                           "MASTER_ADDR": "tj-node-0-0.tj",
                                           "MASTER_PORT": "29400"}


def test_what_an_operator_set_itself_stands() -> None:
    env = {"PET_NODE_RANK": "1", "PET_NNODES": "2", "RANK": "1", "WORLD_SIZE": "2"}
    assert worker_vars(env, "pytorch") == {"LOCAL_RANK": "0"}


def test_a_tf_config_that_is_not_json_is_refused() -> None:
    with pytest.raises(ValueError, match="TF_CONFIG"):
        worker_vars({"TF_CONFIG": "{nope"}, "tensorflow")
