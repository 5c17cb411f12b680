"""The one ASGI app the HTTP port serves: the JSON API, its OpenAPI document and docs, the
dashboard, and the Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

from trainyard.web import docs, errors, pages
from trainyard.web.api import Door, api_router

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

    @app.middleware("http")
    async def security_headers(request: Request, call_next: object) -> Response:
        response: Response = await call_next(request)  # type: ignore[operator]
        if not request.url.path.startswith(DOCS_PATHS):
            for key, value in SECURITY_HEADERS.items():
                response.headers.setdefault(key, value)
        return response

    return app
