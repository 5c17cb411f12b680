"""Request messages generated from their descriptors: every field present or missing, each
scalar at and next to the edges its wire type holds, enums beyond their values, repeated
fields and maps empty, small or very large; and a valid request of each RPC to mutate."""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor  # type: ignore[import-untyped]
from google.protobuf.message import Message  # type: ignore[import-untyped]

from chaos.fuzzing.values import INT32, INT64, UINT64, Values
from trainyard.v1 import training_pb2 as pb

MAX_DEPTH = 4
FD = FieldDescriptor
RANGES = {FD.TYPE_INT32: INT32, FD.TYPE_SINT32: INT32, FD.TYPE_SFIXED32: INT32,
          FD.TYPE_INT64: INT64, FD.TYPE_SINT64: INT64, FD.TYPE_SFIXED64: INT64,
          FD.TYPE_UINT32: (0, 2**32 - 1), FD.TYPE_FIXED32: (0, 2**32 - 1),
          FD.TYPE_UINT64: UINT64, FD.TYPE_FIXED64: UINT64}


def scalar(field: FieldDescriptor, values: Values) -> Any:
    kind = field.type
    if kind in RANGES:
        low, high = RANGES[kind]
        return max(low, min(high, values.integer(low, high)))
    if kind in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        return values.real()
    if kind == FD.TYPE_BOOL:
        return values.chance(0.5)
    if kind == FD.TYPE_ENUM:
        numbers = [v.number for v in field.enum_type.values]
        return values.rng.choice(numbers) if values.chance(0.8) else \
            values.rng.choice((-1, 99, 2**31 - 1, -(2**31)))
    if kind == FD.TYPE_BYTES:
        return values.text(field.name).encode()[: 1 << 16]
    return values.text(field.name)


def _repeats(values: Values, limit: int) -> int:
    r = values.rng.random()
    if r < 0.02:
        return limit
    return values.rng.randint(0, 3)


def fill(message: Message, values: Values, depth: int = 0, p_missing: float = 0.35) -> Message:
    """Set a random choice of `message`'s fields to generated values."""
    for field in message.DESCRIPTOR.fields:
        if values.chance(p_missing):
            continue
        set_field(message, field, values, depth)
    return message


def set_field(message: Message, field: FieldDescriptor, values: Values, depth: int) -> None:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        _fill_map(getattr(message, field.name), field.message_type, values, depth)
    elif field.is_repeated:
        target = getattr(message, field.name)
        for _ in range(_repeats(values, 500)):
            if field.message_type is not None:
                if depth < MAX_DEPTH:
                    fill(target.add(), values, depth + 1)
            else:
                target.append(scalar(field, values))
    elif field.message_type is not None:
        if depth < MAX_DEPTH:
            fill(getattr(message, field.name), values, depth + 1)
    else:
        setattr(message, field.name, scalar(field, values))


def _fill_map(target: Any, entry: Descriptor, values: Values, depth: int) -> None:
    key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
    count = 10_000 if values.chance(0.005) else _repeats(values, 300)
    for i in range(count):
        key = scalar(key_field, values)
        if count > 10 and isinstance(key, str):
            key = f"K{i}"
        if value_field.message_type is not None:
            if depth < MAX_DEPTH:
                fill(target[key], values, depth + 1)
        else:
            target[key] = scalar(value_field, values)


def mutate(message: Message, values: Values) -> Message:
    """One or two of a valid message's fields set to generated values, or cleared."""
    fields = message.DESCRIPTOR.fields
    for _ in range(values.rng.randint(1, 2) if fields else 0):
        field = values.rng.choice(fields)
        message.ClearField(field.name)
        if values.chance(0.85):
            set_field(message, field, values, 1)
    return message


def valid(rpc: str, values: Values) -> Message | None:
    """A request of `rpc` that should succeed for a caller allowed to make it."""
    p, r = values.pools, values.rng

    def one(pool: list[str], default: str = "none") -> str:
        return r.choice(pool) if pool else default

    dataset = one(p.datasets, "none:1").split(":")
    made: dict[str, Any] = {
        "Train": lambda: pb.TrainRequest(name=f"fuzz-{r.randint(0, 10**6)}",
                                         command=values.safe_command(),
                                         hyperparameters={"LR": "0.1"}, labels={"k": "v"},
                                         priority=r.randint(-5, 5)),
        "GetTrainingStatus": lambda: pb.GetTrainingStatusRequest(job_id=one(p.job_ids)),
        "ListJobs": lambda: pb.ListJobsRequest(page_size=r.randint(0, 50)),
        "CancelJob": lambda: pb.CancelJobRequest(job_id=one(p.job_ids)),
        "WatchJob": lambda: pb.WatchJobRequest(job_id=one(p.job_ids)),
        "StreamLogs": lambda: pb.StreamLogsRequest(job_id=one(p.job_ids)),
        "RegisterDataset": lambda: pb.RegisterDatasetRequest(
            name=f"fuzz-{r.randint(0, 10**6)}", path=one(p.dataset_paths)),
        "ListDatasets": lambda: pb.ListDatasetsRequest(),
        "WhoAmI": lambda: pb.WhoAmIRequest(),
        "GetQueues": lambda: pb.GetQueuesRequest(),
        "SubmitSweep": lambda: _sweep(values),
        "ListRuns": lambda: pb.ListRunsRequest(page_size=r.randint(0, 50)),
        "GetRun": lambda: pb.GetRunRequest(run_id=one(p.run_ids)),
        "CompareRuns": lambda: pb.CompareRunsRequest(run_ids=r.sample(p.run_ids,
                                                                       min(2, len(p.run_ids)))),
        "ReproduceRun": lambda: pb.ReproduceRunRequest(run_id=one(p.run_ids)),
        "ListModels": lambda: pb.ListModelsRequest(),
        "GetModel": lambda: pb.GetModelRequest(name=one(p.models)),
        "GetModelLineage": lambda: pb.GetModelLineageRequest(model=pb.ModelRef(
            name=one(p.models))),
        "DownloadModel": lambda: pb.DownloadModelRequest(model=pb.ModelRef(
            name=one(p.models), version=1)),
        "SetModelAlias": lambda: pb.SetModelAliasRequest(name=one(p.models), alias="prod",
                                                         version=1),
        "SetQueueAccess": lambda: pb.QueueAccess(queue=one(p.queues), users=[one(p.users)]),
        "GetDatasetLineage": lambda: pb.GetDatasetLineageRequest(name=dataset[0],
                                                                 version=dataset[-1]),
        "DeleteDataset": lambda: pb.DeleteDatasetRequest(name=dataset[0], version=dataset[-1]),
        "CreateUser": lambda: pb.CreateUserRequest(name=f"u{r.randint(0, 10**6)}"),
        "ListUsers": lambda: pb.ListUsersRequest(),
        "CreateTeam": lambda: pb.CreateTeamRequest(name=f"t{r.randint(0, 10**6)}"),
        "ListTeams": lambda: pb.ListTeamsRequest(),
        "AddTeamMember": lambda: pb.AddTeamMemberRequest(team=one(p.teams), user=one(p.users)),
        "CreateToken": lambda: pb.CreateTokenRequest(user=one(p.users)),
        "ListTokens": lambda: pb.ListTokensRequest(),
        "RevokeToken": lambda: pb.RevokeTokenRequest(id=one(p.token_ids)),
        "ListQueueAccess": lambda: pb.ListQueueAccessRequest(),
        "ListAudit": lambda: pb.ListAuditRequest(),
    }
    build = made.get(rpc)
    return build() if build is not None else None


def _sweep(values: Values) -> Message:
    request = pb.SweepRequest()
    template = request.DESCRIPTOR.fields_by_name.get("template")
    if template is not None and template.message_type is pb.TrainRequest.DESCRIPTOR:
        request.template.CopyFrom(pb.TrainRequest(name="fuzz-sweep",
                                                  command=values.safe_command()))
    request.parameters.add(name="LR", values=["0.1", "0.2"])
    request.max_parallel = 1
    return request
