"""Authentication and the per-RPC access check, as a gRPC server interceptor. A handler
reads the caller's identity with `current_identity()`."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from trainyard.api.errors import status_for
from trainyard.api.permissions import access_for
from trainyard.auth.policy import Access, Identity, check_access
from trainyard.domain.errors import PermissionDenied, TrainyardError, Unauthenticated
from trainyard.services.access import AccessService

log = logging.getLogger(__name__)
_identity: contextvars.ContextVar[Identity | None] = contextvars.ContextVar("identity",
                                                                            default=None)


def current_identity() -> Identity:
    identity = _identity.get()
    if identity is None:  # only a handler registered without the interceptor gets here
        raise Unauthenticated("no identity was established for this call")
    return identity


class AuthInterceptor(grpc.ServerInterceptor):
    def __init__(self, access: AccessService) -> None:
        self.access = access

    def intercept_service(self, continuation: Callable[[Any], Any],
                          details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None:
            return None
        method = details.method
        action = method.rsplit("/", 1)[-1]
        needed = access_for(method)
        if needed is Access.PUBLIC:
            return handler
        identity: Identity | None = None
        try:
            if needed is None:
                raise PermissionDenied(f"{method} is not an RPC this server offers")
            identity = self.access.identify(details.invocation_metadata or ())
            check_access(identity, needed, action)
        except (Unauthenticated, PermissionDenied) as exc:
            self.access.audit(identity, action, "", False, str(exc))
            return _refusal(handler, status_for(exc), str(exc))
        except TrainyardError as exc:
            return _refusal(handler, status_for(exc), str(exc))
        except Exception:  # the store is down, say: a sentence, not a traceback
            log.exception("authenticating a call to %s failed", method)
            return _refusal(handler, grpc.StatusCode.INTERNAL,
                            "internal error while checking credentials; see the server log")
        return _with_identity(handler, identity)


def _refusal(handler: Any, code: grpc.StatusCode, message: str) -> Any:
    def refuse(request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(code, message)

    return _same_kind(handler, refuse)


def _with_identity(handler: Any, identity: Identity) -> Any:
    inner = handler.unary_unary or handler.unary_stream

    if handler.unary_stream is not None:
        def stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            # Set at each resumption: the server may resume a stream on another thread.
            responses = inner(request, context)
            while True:
                _identity.set(identity)
                try:
                    item = next(responses)
                except StopIteration:
                    return
                yield item

        return _same_kind(handler, stream)

    def unary(request: Any, context: grpc.ServicerContext) -> Any:
        token = _identity.set(identity)
        try:
            return inner(request, context)
        finally:
            _identity.reset(token)

    return _same_kind(handler, unary)


def _same_kind(handler: Any, behavior: Callable[..., Any]) -> Any:
    """A handler like `handler` (unary or server-streaming) that runs `behavior`."""
    make = grpc.unary_stream_rpc_method_handler if handler.unary_stream is not None \
        else grpc.unary_unary_rpc_method_handler
    return make(behavior, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
