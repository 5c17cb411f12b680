"""One table from domain errors to gRPC status codes; users never see a traceback."""

from __future__ import annotations

import errno
import functools
import inspect
import logging
import math
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

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

DISK_FULL = "the server's disk is full, so nothing more can be stored; retry once space is freed"
DATABASE_AWAY = "the server cannot reach its database; retry shortly"
# What SQLite says when the file, not the statement, is at fault: worth a retry.
_SQLITE_TRANSIENT = ("database is locked", "disk i/o error", "unable to open database file")


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        if isinstance(current, DBAPIError) and isinstance(current.orig, BaseException):
            yield current.orig
        current = current.__cause__ or current.__context__


def _disk_full(exc: BaseException) -> bool:
    for cause in _causes(exc):
        if isinstance(cause, OSError) and cause.errno == errno.ENOSPC:
            return True
        text = str(cause).lower()
        if isinstance(cause, DBAPIError) and ("disk is full" in text or
                                              "no space left" in text):
            return True
    return False


def _database_away(exc: BaseException) -> bool:
    if isinstance(exc, (DisconnectionError, PoolTimeout)):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    if not isinstance(exc, OperationalError):
        return False
    if type(exc.orig).__module__.startswith("sqlite3"):
        # SQLite also calls a missing table operational: only the file's troubles count.
        return any(text in str(exc.orig).lower() for text in _SQLITE_TRANSIENT)
    return True  # PostgreSQL's operational errors are the connection's and the server's


def unavailable(exc: BaseException) -> str | None:
    """The sentence for a store that cannot answer now but may on a retry: its database
    away, or its disk full. None for anything else."""
    if _disk_full(exc):
        return DISK_FULL
    if _database_away(exc):
        return DATABASE_AWAY
    return None


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


def _abort_unexpected(name: str, exc: Exception, context: grpc.ServicerContext) -> None:
    reason = unavailable(exc)
    if reason is not None:
        log.warning("%s: %s (%s)", name, reason, exc)
        context.abort(grpc.StatusCode.UNAVAILABLE, reason)
    log.exception("unexpected error in %s", name)
    context.abort(grpc.StatusCode.INTERNAL, "internal error; see the server log")


def grpc_errors(method: F) -> F:
    """Turn domain errors into status codes, a store that cannot answer now into UNAVAILABLE,
    and anything else unexpected into INTERNAL."""

    @functools.wraps(method)
    def unary(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except TrainyardError as exc:
            abort(context, exc)
        except Exception as exc:
            _abort_unexpected(method.__name__, exc, context)

    @functools.wraps(method)
    def streaming(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            yield from method(self, request, context)
        except TrainyardError as exc:
            abort(context, exc)
        except Exception as exc:
            _abort_unexpected(method.__name__, exc, context)

    return (streaming if inspect.isgeneratorfunction(method) else unary)  # type: ignore[return-value]
