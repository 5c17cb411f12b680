"""The one ASGI app the HTTP port serves: the JSON API, its OpenAPI document and docs, the
dashboard, and the Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from trainyard.web import docs, errors, pages
from trainyard.web.api import Door, api_router
from trainyard.web.errors import error_body

# The dashboard's pages load only what this server sends: no inline script, no CDN.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
                               "base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
# The interactive docs load their own scripts; they are served with their own policy.
DOCS_PATHS = ("/docs", "/redoc")


def _declare_bearer(app: FastAPI) -> None:
    """Say in the OpenAPI document that every route takes the gRPC API's bearer token, so
    the interactive docs offer to send one."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "a Trainyard token, ty_..."}}
            schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


# As gRPC's default message limit: a body is read (and parsed) before its token is checked,
# so its size is bounded before anything else.
MAX_BODY_BYTES = 4 * 1024 * 1024
TOO_LARGE = f"the request body is over {MAX_BODY_BYTES // (1024 * 1024)} MiB"


class BodyTooLarge(HTTPException):
    def __init__(self) -> None:
        super().__init__(413, TOO_LARGE)


class BodyLimit:
    """Refuses a body over MAX_BODY_BYTES: at once by its Content-Length, or as it streams."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            refusal = JSONResponse(error_body("PAYLOAD_TOO_LARGE", 413, TOO_LARGE), 413)
            await refusal(scope, receive, send)
            return
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > MAX_BODY_BYTES:
                    raise BodyTooLarge
            return message

        await self.app(scope, bounded, send)


def create_app(door: Door, version: str) -> FastAPI:
    app = FastAPI(title="Trainyard", version=version,
                  description="The Trainyard training service over HTTP: the gRPC API's "
                              "messages as JSON, with the same tokens and permissions.",
                  docs_url=None, redoc_url=None, openapi_url="/openapi.json")
    errors.install(app)
    app.include_router(api_router(door))
    app.include_router(pages.router(door))
    app.include_router(docs.router("/openapi.json", app.title))
    _declare_bearer(app)
    app.add_middleware(BodyLimit)

    @app.middleware("http")
    async def security_headers(request: Request, call_next: object) -> Response:
        response: Response = await call_next(request)  # type: ignore[operator]
        if not request.url.path.startswith(DOCS_PATHS):
            for key, value in SECURITY_HEADERS.items():
                response.headers.setdefault(key, value)
        return response

    return app
