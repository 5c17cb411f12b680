"""The one error the SDK raises, and how a gRPC failure becomes it."""

from __future__ import annotations

import grpc


class TrainyardError(Exception):
    """A call the server refused or could not answer; `code` is the gRPC status name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class InvalidValue(TrainyardError):
    """A value the SDK refused before sending it: `field` names the request field
    ("priority", "resources.memory_mb"), `problem` says what is wrong with it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__("INVALID_ARGUMENT", f"{field}: {problem}")
        self.field = field
        self.problem = problem


def translate(exc: grpc.RpcError) -> TrainyardError:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    name = code.name if code is not None else "UNKNOWN"
    if code is grpc.StatusCode.UNAVAILABLE:
        details = f"cannot reach the Trainyard server ({details})"
    return TrainyardError(name, details or name)
