"""Authentication and the per-RPC access check, as a gRPC server interceptor. A handler
reads the caller's identity with `current_identity()`, a JobRuntime handler the grant of
the caller's job token with `current_grant()`.

Two kinds of credential, kept apart: a user's token ("ty_...") may call everything but
trainyard.v1.JobRuntime; a job token ("tyjob_...", one attempt's) may call JobRuntime and
nothing else."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import grpc

from trainyard.api.errors import status_for, unavailable
from trainyard.api.permissions import access_for
from trainyard.auth import job_tokens
from trainyard.auth.authenticator import AUTHORIZATION
from trainyard.auth.job_grants import JobGrant
from trainyard.auth.policy import Access, Identity, check_access
from trainyard.auth.tokens import bearer_value
from trainyard.domain.errors import PermissionDenied, TrainyardError, Unauthenticated
from trainyard.services.access import AccessService
from trainyard.services.job_runtime import JobRuntimeService

log = logging.getLogger(__name__)
_identity: contextvars.ContextVar[Identity | None] = contextvars.ContextVar("identity",
                                                                            default=None)
_grant: contextvars.ContextVar[JobGrant | None] = contextvars.ContextVar("grant", default=None)
JOB_TOKEN_ELSEWHERE = "a job token may only call trainyard.v1.JobRuntime"
T = TypeVar("T")


def current_identity() -> Identity:
    identity = _identity.get()
    if identity is None:  # only a handler registered without the interceptor gets here
        raise Unauthenticated("no identity was established for this call")
    return identity


def current_grant() -> JobGrant:
    grant = _grant.get()
    if grant is None:  # only a handler registered without the interceptor gets here
        raise Unauthenticated("no job token was verified for this call")
    return grant


class AuthInterceptor(grpc.ServerInterceptor):
    def __init__(self, access: AccessService, runtime: JobRuntimeService) -> None:
        self.access = access
        self.runtime = runtime

    def intercept_service(self, continuation: Callable[[Any], Any],
                          details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None:
            return None
        method = details.method
        if access_for(method) is Access.PUBLIC:
            return handler
        try:
            caller = self.caller(method, details.invocation_metadata or ())
        except TrainyardError as exc:
            return _refusal(handler, status_for(exc), str(exc))
        except Exception as exc:  # the store is down, say: a sentence, not a traceback
            reason = unavailable(exc)
            if reason is not None:
                log.warning("authenticating a call to %s: %s (%s)", method, reason, exc)
                return _refusal(handler, grpc.StatusCode.UNAVAILABLE, reason)
            log.exception("authenticating a call to %s failed", method)
            return _refusal(handler, grpc.StatusCode.INTERNAL,
                            "internal error while checking credentials; see the server log")
        if isinstance(caller, JobGrant):
            return _with(handler, _grant, caller)
        return _with(handler, _identity, caller)

    def caller(self, method: str,
               metadata: Iterable[tuple[str, str | bytes]]) -> Identity | JobGrant:
        """Who calls `method` with these headers, checked against what the method needs:
        a user's identity, or for JobRuntime a job token's grant. A refusal raises
        Unauthenticated or PermissionDenied, audited. The HTTP API asks this too, naming
        the RPC a route stands for, so both doors apply one table."""
        action = method.rsplit("/", 1)[-1]
        needed = access_for(method)
        identity: Identity | None = None
        target = ""
        try:
            if needed is None:
                raise PermissionDenied(f"{method} is not an RPC this server offers")
            credential = _job_credential(metadata)
            if credential is not None:
                target = _claimed_attempt(credential)
                if needed is not Access.JOB:
                    raise Unauthenticated(JOB_TOKEN_ELSEWHERE)
                return self.runtime.authenticate(credential)
            identity = self.access.identify(metadata)
            check_access(identity, needed, action)
        except (Unauthenticated, PermissionDenied) as exc:
            self.access.audit(identity, action, target, False, str(exc))
            raise
        return identity


def run_as(identity: Identity, call: Callable[[], T]) -> T:
    """call() with `identity` as the caller current_identity() names."""
    token = _identity.set(identity)
    try:
        return call()
    finally:
        _identity.reset(token)


def stream_as(var: contextvars.ContextVar[T | None], value: T,
              responses: Iterator[Any]) -> Iterator[Any]:
    """The responses of a stream, each computed with `var` set to `value`: a server may
    resume a stream on another thread."""
    while True:
        var.set(value)
        try:
            item = next(responses)
        except StopIteration:
            return
        yield item


def stream_as_caller(identity: Identity, responses: Iterator[Any]) -> Iterator[Any]:
    """A stream's responses, each computed with `identity` as the caller."""
    return stream_as(_identity, identity, responses)


def _job_credential(metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
    """The call's bearer credential when it is a job token; None for anything else, which
    the user authenticator judges (and refuses in its own words when malformed)."""
    values = [value for key, value in metadata if key.lower() == AUTHORIZATION]
    if len(values) != 1:
        return None
    try:
        credential = bearer_value(values[0])
    except Unauthenticated:
        return None
    return credential if job_tokens.is_job_token(credential) else None


def _claimed_attempt(credential: str) -> str:
    """The attempt a job token names, for the audit log; empty when it is malformed."""
    try:
        claimed = job_tokens.parse(credential)
    except Unauthenticated:
        return ""
    return f"{claimed.job_id}-{claimed.attempt}"


def _refusal(handler: Any, code: grpc.StatusCode, message: str) -> Any:
    def refuse(request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(code, message)

    return _same_kind(handler, refuse)


def _with(handler: Any, var: contextvars.ContextVar[T | None], value: T) -> Any:
    """The handler, run with `var` set to `value` (the caller's identity or grant)."""
    if handler.unary_stream is not None:
        inner = handler.unary_stream

        def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            return stream_as(var, value, inner(request, context))

        return _same_kind(handler, stream)

    inner = handler.unary_unary or handler.stream_unary

    def unary(request: Any, context: grpc.ServicerContext) -> Any:
        # A client stream's requests are read inside this call, on this thread.
        token = var.set(value)
        try:
            return inner(request, context)
        finally:
            var.reset(token)

    return _same_kind(handler, unary)


def _same_kind(handler: Any, behavior: Callable[..., Any]) -> Any:
    """A handler like `handler` (unary, server- or client-streaming) that runs `behavior`."""
    if handler.unary_stream is not None:
        make = grpc.unary_stream_rpc_method_handler
    elif handler.stream_unary is not None:
        make = grpc.stream_unary_rpc_method_handler
    else:
        make = grpc.unary_unary_rpc_method_handler
    return make(behavior, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
