"""One table from domain errors to gRPC status codes; users never see a traceback."""

from __future__ import annotations

import functools
import inspect
import logging
import math
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from trainyard.domain.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    StaleState,
    TrainyardError,
    Unauthenticated,
)

log = logging.getLogger(__name__)

STATUS_BY_ERROR: tuple[tuple[type[TrainyardError], grpc.StatusCode], ...] = (
    (InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (StaleState, grpc.StatusCode.ABORTED),
    (FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (ResourceExhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
)
# The seconds a refused caller should wait, where a rate refused it: trailing metadata of
# the status, and HTTP's Retry-After.
RETRY_AFTER = "retry-after"

F = TypeVar("F", bound=Callable[..., Any])


def status_for(exc: TrainyardError) -> grpc.StatusCode:
    for cls, code in STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return code
    return grpc.StatusCode.INTERNAL


def abort(context: grpc.ServicerContext, exc: TrainyardError) -> None:
    """End the call with the status of `exc`, telling when to retry where that is known."""
    if isinstance(exc, ResourceExhausted) and exc.retry_after is not None:
        context.set_trailing_metadata(((RETRY_AFTER, str(math.ceil(exc.retry_after))),))
    context.abort(status_for(exc), str(exc))


def grpc_errors(method: F) -> F:
    """Turn domain errors into status codes, and anything unexpected into INTERNAL."""

    @functools.wraps(method)
    def unary(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except TrainyardError as exc:
            abort(context, exc)
        except Exception:
            log.exception("unexpected error in %s", method.__name__)
            context.abort(grpc.StatusCode.INTERNAL, "internal error; see the server log")

    @functools.wraps(method)
    def streaming(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            yield from method(self, request, context)
        except TrainyardError as exc:
            abort(context, exc)
        except Exception:
            log.exception("unexpected error in %s", method.__name__)
            context.abort(grpc.StatusCode.INTERNAL, "internal error; see the server log")

    return (streaming if inspect.isgeneratorfunction(method) else unary)  # type: ignore[return-value]
