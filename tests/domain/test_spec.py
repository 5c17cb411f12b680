from dataclasses import replace

import pytest

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import DatasetRef, JobSpec, Resources, total_resources, validate_spec

GOOD = JobSpec(name="train-1", command="python train.py", hyperparameters={"LR": "0.1"},
               dataset=DatasetRef("digits", "a" * 64), labels={"team": "vision"})

BAD = [
    ("name", replace(GOOD, name=""), "must not be empty"),
    ("name", replace(GOOD, name="has space"), "letters"),
    ("name", replace(GOOD, name="x" * 200), "128"),
    ("command", replace(GOOD, command="  "), "must not be empty"),
    ("command", replace(GOOD, command="a\x00b"), "NUL"),
    ("image", replace(GOOD, image="Not An Image"), "image reference"),
    ("image", replace(GOOD, image="x:"), "image reference"),
    ("image", replace(GOOD, image="a" * 600), "at most 512"),
    ("resources.cpus", replace(GOOD, resources=Resources(cpus=-1)), "positive"),
    ("resources.cpus", replace(GOOD, resources=Resources(cpus=float("nan"))), "positive"),
    ("resources.cpus", replace(GOOD, resources=Resources(cpus=100000)), "limit"),
    ("resources.memory_mb", replace(GOOD, resources=Resources(memory_mb=-5)), "positive"),
    ("resources.memory_mb", replace(GOOD, resources=Resources(memory_mb=10**12)), "limit"),
    ("resources.gpus", replace(GOOD, resources=Resources(gpus=-1)), "negative"),
    ("resources.gpus", replace(GOOD, resources=Resources(gpus=1000)), "GPUs this server"),
    ("queue", replace(GOOD, queue="no/slash"), "queue"),
    ("framework", replace(GOOD, framework="jax"), "pytorch, tensorflow, none"),
    ("priority", replace(GOOD, priority=10**9), "between"),
    ("dataset.name", replace(GOOD, dataset=DatasetRef("", "a" * 64)), "empty"),
    ("dataset.version", replace(GOOD, dataset=DatasetRef("digits", "abc")), "64-character"),
    ("hyperparameters.1LR", replace(GOOD, hyperparameters={"1LR": "x"}),
     "environment variable"),
    ("hyperparameters.MY-LR", replace(GOOD, hyperparameters={"MY-LR": "x"}),
     "environment variable"),
    ("hyperparameters.JOB_ID", replace(GOOD, hyperparameters={"JOB_ID": "x"}), "reserved"),
    ("hyperparameters.MODEL_SAVE_PATH", replace(GOOD, hyperparameters={"MODEL_SAVE_PATH": "/"}),
     "reserved"),
    ("hyperparameters.PATH", replace(GOOD, hyperparameters={"PATH": "/"}), "PATH"),
    ("hyperparameters.TRAINYARD_X", replace(GOOD, hyperparameters={"TRAINYARD_X": "1"}),
     "reserved"),
    ("labels.bad key", replace(GOOD, labels={"bad key": "v"}), "key"),
    ("workers", replace(GOOD, workers=0), "from 1 to 64"),
    ("workers", replace(GOOD, workers=-2), "from 1 to 64"),
    ("workers", replace(GOOD, workers=65), "from 1 to 64, got 65"),
    ("workers", replace(GOOD, workers=True), "whole number"),
    ("workers", replace(GOOD, workers=2.5), "whole number"),
    ("hyperparameters.RANK", replace(GOOD, hyperparameters={"RANK": "0"}), "reserved"),
    ("hyperparameters.master_port", replace(GOOD, hyperparameters={"master_port": "1"}),
     "reserved"),
    ("hyperparameters.TF_CONFIG", replace(GOOD, hyperparameters={"TF_CONFIG": "{}"}),
     "reserved"),
    ("command", replace(GOOD, command="", image="trainyard/demo", workers=2),
     "container job of 2 workers needs a command"),
]


def test_a_sound_spec_passes() -> None:
    validate_spec(GOOD)
    validate_spec(replace(GOOD, dataset=None, hyperparameters={}, labels={}))


@pytest.mark.parametrize("image", ["busybox", "trainyard/demo-trainer:v1.2", "localhost:5000/a/b",
                                   "x@sha256:" + "a" * 64, "sha256:" + "b" * 64])
def test_image_references_pass(image: str) -> None:
    validate_spec(replace(GOOD, command="", image=image))


@pytest.mark.parametrize(("field", "spec", "words"), BAD, ids=[f"{b[0]}:{i}" for i, b in
                                                                enumerate(BAD)])
def test_each_bad_field_is_named(field: str, spec: JobSpec, words: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        validate_spec(spec)
    assert info.value.field == field
    assert words in info.value.problem
    assert str(info.value).startswith(field + ":")


def test_workers_are_a_gang_whose_resources_are_each_ones() -> None:
    validate_spec(replace(GOOD, workers=64))
    validate_spec(replace(GOOD, image="trainyard/demo", workers=2))  # with a command
    validate_spec(replace(GOOD, command="", image="trainyard/demo", workers=1))
    gang = replace(GOOD, workers=3, resources=Resources(cpus=0.1, memory_mb=512, gpus=2))
    assert gang.total_resources == Resources(cpus=0.3, memory_mb=1536, gpus=6)
    assert total_resources(Resources(cpus=0.5), 1) == Resources(cpus=0.5)
    assert JobSpec(name="x", command="true").workers == 1
