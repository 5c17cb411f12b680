"""Every value the SDK sends fits its proto field, or it is refused naming the field before
anything is sent."""

from __future__ import annotations

from typing import Any

import pytest

from trainyard.client import Client, Resources, TrainSpec
from trainyard.client.errors import InvalidValue
from trainyard.client.values import MAX_STRING_BYTES, build
from trainyard.v1 import training_pb2 as pb

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


@pytest.mark.parametrize(("message", "fields", "field", "problem"), [
    (pb.TrainRequest, {"priority": INT32_MAX + 1}, "priority", "out of range"),
    (pb.TrainRequest, {"priority": -(2**31) - 1}, "priority", "out of range"),
    (pb.TrainRequest, {"priority": 10**5000}, "priority", "thousands of digits"),
    (pb.TrainRequest, {"priority": "high"}, "priority", "whole number"),
    (pb.TrainRequest, {"priority": 1.5}, "priority", "whole number"),
    (pb.TrainRequest, {"priority": True}, "priority", "whole number"),
    (pb.TrainRequest, {"resources": {"memory_mb": INT64_MAX + 1}}, "resources.memory_mb",
     "out of range"),
    (pb.TrainRequest, {"resources": {"cpus": float("nan")}}, "resources.cpus", "finite"),
    (pb.TrainRequest, {"resources": {"cpus": float("inf")}}, "resources.cpus", "finite"),
    (pb.TrainRequest, {"resources": {"cpus": 10**400}}, "resources.cpus", "finite"),
    (pb.TrainRequest, {"resources": {"cpus": "2"}}, "resources.cpus", "a number"),
    (pb.TrainRequest, {"resources": 3}, "resources", "must be a Resources"),
    (pb.TrainRequest, {"name": "\ud800"}, "name", "lone surrogate"),
    (pb.TrainRequest, {"name": 7}, "name", "must be text"),
    (pb.TrainRequest, {"command": "x" * (MAX_STRING_BYTES + 1)}, "command", "at most"),
    (pb.TrainRequest, {"labels": {"k": "\ud83d"}}, "labels.k", "lone surrogate"),
    (pb.TrainRequest, {"labels": {"k\udfff": "v"}}, "labels key", "lone surrogate"),
    (pb.TrainRequest, {"labels": ["k"]}, "labels", "mapping"),
    (pb.ListJobsRequest, {"states": "RUNNING"}, "states", "a list"),
    (pb.ListJobsRequest, {"states": [999]}, "states", "not a JobState"),
    (pb.ListJobsRequest, {"page_size": INT32_MAX + 1}, "page_size", "out of range"),
    (pb.StreamLogsRequest, {"follow": "yes"}, "follow", "true or false"),
    (pb.StreamLogsRequest, {"offset": -(2**63) - 1}, "offset", "out of range"),
    (pb.SweepRequest, {"parameters": [{"name": "lr", "min": float("-inf")}]},
     "parameters.min", "finite"),
    (pb.CreateTokenRequest, {"expires_in_seconds": 2**64}, "expires_in_seconds",
     "out of range"),
])
def test_a_value_that_does_not_fit_is_refused_naming_its_field(
        message: Any, fields: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(InvalidValue) as refused:
        build(message, **fields)
    assert refused.value.field == field
    assert problem in refused.value.problem
    assert refused.value.code == "INVALID_ARGUMENT"
    assert len(str(refused.value)) < 200  # never the whole value


@pytest.mark.parametrize(("message", "fields"), [
    (pb.TrainRequest, {"priority": INT32_MAX, "resources": {"memory_mb": INT64_MAX}}),
    (pb.TrainRequest, {"priority": -(2**31), "name": "é ‮ 🙂 \u200b e\u0301"}),
    (pb.TrainRequest, {"command": "x" * MAX_STRING_BYTES, "labels": {"": "\x00"}}),
    (pb.StreamLogsRequest, {"offset": INT64_MAX, "follow": True}),
    (pb.SweepRequest, {"template": pb.TrainRequest(name="t"), "seed": -(2**63)}),
])
def test_values_at_their_limits_are_sent_as_they_are(message: Any,
                                                     fields: dict[str, Any]) -> None:
    built = build(message, **fields)
    assert built.ByteSize() > 0


def test_memory_as_a_size_with_its_unit() -> None:
    spec = TrainSpec(name="m", resources=Resources(memory_mb="4Gi"))
    assert spec.to_pb().resources.memory_mb == 4096
    assert TrainSpec(name="m", resources=Resources(memory_mb="512M")).to_pb() \
        .resources.memory_mb == 512
    with pytest.raises(InvalidValue, match="resources.memory_mb: '4X' is not a size"):
        TrainSpec(name="m", resources=Resources(memory_mb="4X")).to_pb()


def test_the_client_refuses_before_it_sends() -> None:
    # Nothing listens at port 1: a refusal that needed the server would be UNAVAILABLE.
    with Client("127.0.0.1:1", timeout=2) as client:
        with pytest.raises(InvalidValue, match="priority: 99999999999999999999 is out"):
            client.train(TrainSpec(name="x", command="true", priority=10**20 - 1))
        with pytest.raises(InvalidValue, match="^INVALID_ARGUMENT: offset: "):
            list(client.logs("j", offset=2**63))
        with pytest.raises(InvalidValue, match="parameters.max"):
            client.sweep(TrainSpec(name="s"), ranges={"lr": (0.0, float("nan"), False)},
                         trials=2)
        with pytest.raises(InvalidValue, match="metrics.value"):
            client.list_runs(metrics=[("acc", ">=", float("inf"))])
        with pytest.raises(InvalidValue, match="version"):
            client.set_model_alias("m", "prod", 2**31)
        with pytest.raises(InvalidValue, match="job_id: is not valid Unicode"):
            client.status("j\udc80")
