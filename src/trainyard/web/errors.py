"""One table from gRPC status codes to HTTP ones, and one JSON body for every error:
{"error": {"code": "NOT_FOUND", "status": 404, "message": "job 'x' not found"}}. A body the
route's schema refuses is 422 naming each field; nothing unexpected leaves as a traceback."""

from __future__ import annotations

import logging
import math
from typing import Any

import grpc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from trainyard.api.errors import RETRY_AFTER, status_for
from trainyard.domain.errors import ResourceExhausted, TrainyardError
from trainyard.web.transcode import Aborted

log = logging.getLogger(__name__)

HTTP_BY_CODE: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.ABORTED: 409,
    # The request is sound but the object's state refuses it: cancelling a finished job.
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}
_CODE_BY_HTTP = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 409: "FAILED_PRECONDITION",
                 413: "PAYLOAD_TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE",
                 422: "INVALID_ARGUMENT"}


def error_body(code: str, status: int, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "status": status, "message": message, **extra}}


def error_response(code: str, status: int, message: str, retry_after: str | None = None,
                   **extra: Any) -> JSONResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="trainyard"'} if status == 401 else {}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return JSONResponse(error_body(code, status, message, **extra), status_code=status,
                        headers=headers or None)


def from_grpc(code: grpc.StatusCode, message: str,
              trailing: tuple[tuple[str, str], ...] = ()) -> JSONResponse:
    """The body of a status; a rate's refusal (429) says when to retry in Retry-After."""
    retry_after = dict(trailing).get(RETRY_AFTER)
    return error_response(code.name, HTTP_BY_CODE.get(code, 500), message, retry_after)


def from_error(exc: TrainyardError) -> JSONResponse:
    wait = exc.retry_after if isinstance(exc, ResourceExhausted) else None
    trailing = ((RETRY_AFTER, str(math.ceil(wait))),) if wait is not None else ()
    return from_grpc(status_for(exc), str(exc), trailing)


def _where(loc: tuple[Any, ...]) -> str:
    """'body.resources.cpus' for pydantic's ('body', 'resources', 'cpus')."""
    return ".".join(str(part) for part in loc if part != "body") or "body"


def install(app: FastAPI) -> None:
    """The error handlers of the app: every refusal in the one body."""

    @app.exception_handler(Aborted)
    async def aborted(request: Request, exc: Aborted) -> JSONResponse:
        return from_grpc(exc.code, exc.details, exc.trailing)

    @app.exception_handler(TrainyardError)
    async def refused(request: Request, exc: TrainyardError) -> JSONResponse:
        return from_error(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # A body that is not JSON at all is a bad value, not a body of the wrong shape.
        broken = [e for e in exc.errors() if e.get("type") == "json_invalid"]
        if broken:
            why = broken[0].get("ctx", {}).get("error", "")
            return error_response("INVALID_ARGUMENT", 400, f"body: is not valid JSON"
                                  f"{': ' + str(why)[:80] if why else ''}")
        problems = [{"field": _where(tuple(e.get("loc", ()))), "problem": str(e.get("msg"))}
                    for e in exc.errors()]
        text = "; ".join(f"{p['field']}: {p['problem']}" for p in problems[:5])
        return error_response("INVALID_ARGUMENT", 422, text or "the request body is not "
                              "valid", fields=problems)

    @app.exception_handler(HTTPException)
    async def http(request: Request, exc: HTTPException) -> JSONResponse:
        code = _CODE_BY_HTTP.get(exc.status_code, "UNKNOWN")
        return error_response(code, exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error serving %s %s", request.method, request.url.path,
                  exc_info=exc)
        return error_response("INTERNAL", 500, "internal error; see the server log")
