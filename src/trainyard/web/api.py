"""The JSON API under /api/v1: one FastAPI route per entry of web/routes.py, each the RPC
it names called through its gRPC servicer (web/transcode.py), as the caller its
credentials name, after the same access check the gRPC interceptor makes."""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Body, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response, StreamingResponse
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from trainyard.api.auth import AuthInterceptor, run_as, stream_as_caller
from trainyard.auth.policy import Identity
from trainyard.client.messages import plain
from trainyard.domain.errors import InvalidArgument, Unauthenticated
from trainyard.web import streams
from trainyard.web.errors import error_body
from trainyard.web.routes import ROUTES, Reply, Route
from trainyard.web.schemas import enum_names, model_for
from trainyard.web.session import check_cross_site, check_host, presented
from trainyard.web.transcode import (
    HttpCall,
    method_descriptor,
    path_fields,
    query_fields,
    request_message,
)


@dataclass(frozen=True)
class Door:
    """What the HTTP side needs of the server: who calls (the gRPC interceptor's check),
    the servicers by service name, and whether the server listens on loopback only."""

    callers: AuthInterceptor
    servicers: dict[str, Any]
    loopback_only: bool
    # Set as the server stops: open streams end at their next look instead of holding the
    # shutdown for its whole grace.
    stopping: threading.Event = field(default_factory=threading.Event)

    def streaming(self, active: threading.Event) -> Callable[[], bool]:
        return lambda: active.is_set() and not self.stopping.is_set()

    def caller(self, request: Request, rpc: str) -> tuple[Identity, list[tuple[str, str]]]:
        """The caller of a request for `rpc`, or the refusal (raised, audited)."""
        check_host(request, self.loopback_only)
        metadata = presented(request)
        # Who it is first: a request with no credentials on a server with users is
        # unauthenticated, whatever else it lacks.
        who = self.callers.caller(rpc, metadata)
        if not isinstance(who, Identity):  # a job token reaches only JobRuntime
            raise Unauthenticated("a job token may only call trainyard.v1.JobRuntime")
        check_cross_site(request)
        return who, metadata

    def handler(self, rpc: str) -> Callable[[Message, HttpCall], Any]:
        service, name = rpc.strip("/").split("/")
        return getattr(self.servicers[service], name)  # type: ignore[no-any-return]


def _fields_of(route: Route) -> Descriptor:
    descriptor = method_descriptor(route.rpc).input_type
    if route.within:
        descriptor = descriptor.fields_by_name[route.within].message_type
    return descriptor


def _nest(route: Route, fields: dict[str, Any]) -> dict[str, Any]:
    return {route.within: fields} if route.within else fields


def _request(route: Route, request: Request, body: Any) -> Message:
    descriptor = _fields_of(route)
    if route.takes_body:
        if request.query_params:  # its fields come in the body, as OpenAPI says
            name = next(iter(request.query_params))
            raise InvalidArgument(name[:40], "goes in the JSON body of this route, not the "
                                  "query")
        given = body.model_dump(mode="json", exclude_none=True) if body is not None else {}
        fields = given.get(route.within, {}) if route.within else given
    else:
        fields = query_fields(descriptor, request.query_params.multi_items())
    path_fields(descriptor, dict(request.path_params), fields)
    return request_message(route.rpc, _nest(route, fields))


class ProtoJSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":"), default=str).encode()


def _unary(door: Door, route: Route) -> Callable[..., Any]:
    def endpoint(request: Request, body: Any = None) -> Response:
        identity, metadata = door.caller(request, route.rpc)
        message = _request(route, request, body)
        call = door.handler(route.rpc)
        reply = run_as(identity, lambda: call(message, HttpCall(metadata)))
        return ProtoJSON(plain(reply), status_code=201 if _created(route, reply) else 200)

    return endpoint


# The routes that make jobs: 201 Created, unless a retried request found its earlier job.
_CREATING = frozenset({"Train", "ReproduceRun", "SubmitSweep"})


def _created(route: Route, reply: Message) -> bool:
    return route.name in _CREATING and not getattr(reply, "existing", False)


def _last_event_id(request: Request) -> int:
    text = request.headers.get("last-event-id", "")
    return int(text) if text.isdigit() and len(text) < 19 else 0


def _streaming(door: Door, route: Route) -> Callable[..., Any]:
    async def endpoint(request: Request) -> Response:
        identity, metadata = await run_in_threadpool(door.caller, request, route.rpc)
        message = await run_in_threadpool(_request, route, request, None)
        resume = _last_event_id(request)
        if route.name == "StreamLogs" and resume and "offset" not in request.query_params:
            message.offset = resume  # type: ignore[attr-defined]
        active = threading.Event()
        active.set()
        call = door.handler(route.rpc)
        responses = stream_as_caller(identity,
                                     call(message, HttpCall(metadata, door.streaming(active))))
        pump = streams.Pump(responses, active)
        first = await pump.started()
        if route.reply is Reply.TAR:
            model = first.model if first is not None else None
            name = f"{model.model_name}-v{model.version}.tar" if model else "model.tar"
            registered = model.created_at.seconds \
                if model is not None and model.HasField("created_at") else None
            return StreamingResponse(streams.tar(pump, registered),
                                     media_type="application/x-tar",
                                     headers={"Content-Disposition":
                                              f'attachment; filename="{name}"'})
        event_of = (streams.log_events() if route.name == "StreamLogs"
                    else streams.transition_events(resume))
        return StreamingResponse(streams.sse(pump, event_of), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache",
                                          "X-Accel-Buffering": "no"})

    return endpoint


def _schema(fd: FieldDescriptor) -> dict[str, Any]:
    if fd.enum_type is not None:
        one: dict[str, Any] = {"type": "string", "enum": list(enum_names(fd))}
    elif fd.type == FieldDescriptor.TYPE_BOOL:
        one = {"type": "boolean"}
    elif fd.cpp_type in (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_INT64,
                         FieldDescriptor.CPPTYPE_UINT32, FieldDescriptor.CPPTYPE_UINT64):
        one = {"type": "integer"}
    elif fd.cpp_type in (FieldDescriptor.CPPTYPE_DOUBLE, FieldDescriptor.CPPTYPE_FLOAT):
        one = {"type": "number"}
    else:
        one = {"type": "string"}
    return {"type": "array", "items": one} if fd.is_repeated else one


def _parameters(route: Route) -> list[dict[str, Any]]:
    """The OpenAPI parameters of a route: its path's, and for one without a body, the
    request's fields as query parameters."""
    descriptor = _fields_of(route)
    out: list[dict[str, Any]] = []
    in_path = {part[1:-1] for part in route.path.split("/") if part.startswith("{")}
    for fd in descriptor.fields:
        if fd.name in in_path:
            out.append({"name": fd.name, "in": "path", "required": True,
                        "schema": _schema(fd)})
        elif not route.takes_body:
            entry = fd.message_type
            if entry is not None and entry.GetOptions().map_entry:
                schema: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
                note = "KEY=VALUE, repeated"
            elif entry is not None:
                schema = {"type": "array", "items": {"type": "string"}}
                note = "as text, e.g. accuracy>=0.9; repeated"
            else:
                schema, note = _schema(fd), ("repeated" if fd.is_repeated else "")
            out.append({"name": fd.name, "in": "query", "required": False, "schema": schema,
                        "description": note})
    return out


_ERRORS = {code: {"description": text, "content": {"application/json": {
    "example": error_body(name, code, text)}}}
    for code, name, text in (
        (400, "INVALID_ARGUMENT", "a field is wrong, named in the message"),
        (401, "UNAUTHENTICATED", "no valid token"),
        (403, "PERMISSION_DENIED", "the token's user may not do this"),
        (404, "NOT_FOUND", "no such object, or not one the caller may see"),
        (409, "FAILED_PRECONDITION", "the object's state refuses it"),
        (422, "INVALID_ARGUMENT", "the body does not match the schema"))}


def _with_signature(endpoint: Callable[..., Any], route: Route) -> Callable[..., Any]:
    """The endpoint as FastAPI should read it: the request, and a body of the RPC's
    request message where the route takes one."""
    params = [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                annotation=Request)]
    if route.takes_body:
        model = model_for(method_descriptor(route.rpc).input_type, request=True)
        params.append(inspect.Parameter("body", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        annotation=model | None, default=Body(None)))
    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__annotations__ = {}
    return endpoint


def api_router(door: Door) -> APIRouter:
    router = APIRouter()
    for route in ROUTES:
        output = method_descriptor(route.rpc).output_type
        ok: dict[str, Any] = {"description": "OK"}
        if route.reply is Reply.JSON:
            endpoint = _with_signature(_unary(door, route), route)
            ok["model"] = model_for(output, request=False)
        else:
            endpoint = _streaming(door, route)
            ok["content"] = ({"application/x-tar": {}} if route.reply is Reply.TAR
                             else {"text/event-stream": {}})
        responses: dict[int | str, dict[str, Any]] = {200: ok, **_ERRORS}
        # A stream's 200 is its own media type alone, not JSON beside it.
        kind = ProtoJSON if route.reply is Reply.JSON else StreamingResponse
        router.add_api_route(
            route.url, endpoint, methods=[route.method], name=route.name,
            summary=route.summary, tags=[route.tag], responses=responses,
            openapi_extra={"parameters": _parameters(route)}, response_class=kind)
    return router
