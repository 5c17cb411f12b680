"""Generated calls of every RPC of TrainingService and AdminService, each as one of several
callers, with the store compared around every refused call that would have changed it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf.descriptor import MethodDescriptor  # type: ignore[import-untyped]
from google.protobuf.message import Message  # type: ignore[import-untyped]

from chaos.fuzzing.messages import fill, mutate, valid
from chaos.fuzzing.store_snapshot import StoreSnapshot, changed
from chaos.fuzzing.values import Values
from trainyard.v1 import training_pb2 as pb
from trainyard.v1 import training_pb2_grpc as pb_grpc

SERVICES = ("TrainingService", "AdminService")
# The RPCs that change the store when they succeed.
MUTATING = frozenset({"Train", "CancelJob", "RegisterDataset", "SubmitSweep", "ReproduceRun",
                      "SetModelAlias", "DeleteDataset", "CreateUser", "CreateTeam",
                      "AddTeamMember", "CreateToken", "RevokeToken", "SetQueueAccess"})
INTERNAL_CODES = ("INTERNAL", "UNKNOWN", "DATA_LOSS")
# Statuses that do not say whether the call took effect: no verdict on the store after them.
UNDECIDED = ("OK", "DEADLINE_EXCEEDED", "CANCELLED", "UNAVAILABLE")
STREAM_ITEMS = 20  # a streamed reply is read this far, then dropped


@dataclass
class Outcome:
    surface: str  # grpc, rest, cli
    name: str  # the RPC, route or command
    caller: str
    status: str  # a gRPC code's name, an HTTP status, a CLI exit
    internal: bool = False
    traceback: str = ""  # the exception a CLI run ended with
    changes: list[str] = field(default_factory=list)  # what a refused call changed
    detail: str = ""


@dataclass
class Rpc:
    service: str
    method: MethodDescriptor
    call: Callable[..., Any]

    @property
    def name(self) -> str:
        return str(self.method.name)

    @property
    def streaming(self) -> bool:
        return bool(self.method.server_streaming)


def rpcs(channel: grpc.Channel) -> list[Rpc]:
    stubs = {"TrainingService": pb_grpc.TrainingServiceStub(channel),  # type: ignore[no-untyped-call]
             "AdminService": pb_grpc.AdminServiceStub(channel)}  # type: ignore[no-untyped-call]
    out = []
    for service in SERVICES:
        for method in pb.DESCRIPTOR.services_by_name[service].methods:
            out.append(Rpc(service, method, getattr(stubs[service], method.name)))
    return out


def request_for(rpc: Rpc, values: Values) -> tuple[Message, str]:
    """A request, and how it was made: valid, a mutation of a valid one, or generated."""
    roll = values.rng.random()
    base = valid(rpc.name, values) if roll < 0.6 else None
    if base is not None and roll < 0.3:
        return base, "valid"
    if base is not None:
        return mutate(base, values), "mutated"
    message_class = _message_class(rpc.method)
    return fill(message_class(), values), "generated"


def _message_class(method: MethodDescriptor) -> type[Message]:
    found: type[Message] = getattr(pb, method.input_type.name)
    return found


def invoke(rpc: Rpc, request: Message, metadata: tuple[tuple[str, str], ...]) -> tuple[str, Any]:
    """The status code's name and, for a unary call, the reply."""
    try:
        if not rpc.streaming:
            return "OK", rpc.call(request, metadata=metadata, timeout=15)
        replies = rpc.call(request, metadata=metadata, timeout=3)
        for i, _ in enumerate(replies):
            if i >= STREAM_ITEMS:
                replies.cancel()
                break
        return "OK", None
    except grpc.RpcError as exc:
        code = exc.code()
        return (code.name if code is not None else "UNKNOWN"), exc.details()


class GrpcFuzzer:
    def __init__(self, channel: grpc.Channel, values: Values,
                 callers: dict[str, tuple[tuple[str, str], ...]], store: StoreSnapshot,
                 learn: Callable[[str, Any], None]) -> None:
        self.rpcs = rpcs(channel)
        self.values = values
        self.callers = callers
        self.store = store
        self.learn = learn  # told of each successful call's reply, to grow the pools

    def one(self) -> Outcome:
        r = self.values.rng
        rpc = r.choice(self.rpcs)
        caller = self.values.caller(list(self.callers))
        request, how = request_for(rpc, self.values)
        before = self.store.take() if rpc.name in MUTATING else None
        status, reply = invoke(rpc, request, self.callers[caller])
        outcome = Outcome("grpc", rpc.name, caller, status,
                          internal=status in INTERNAL_CODES)
        if outcome.internal:
            outcome.detail = f"{how}: {str(reply)[:300]} | {_short(request)}"
        if status == "OK":
            self.learn(rpc.name, reply)
        elif before is not None and status not in UNDECIDED:
            outcome.changes = changed(before, self.store.take())
            if outcome.changes:
                outcome.detail = f"{how}: {status} {str(reply)[:200]} | {_short(request)}"
        return outcome


def _short(message: Message, limit: int = 400) -> str:
    text = str(message).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"
