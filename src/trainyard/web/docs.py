"""The interactive API docs at /docs: Swagger UI, whose files come from the
swagger-ui-bundle-v2 package and are served by this server, so that the docs work with no
internet (no CDN)."""

from __future__ import annotations

from importlib.resources.abc import Traversable

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import Response

from trainyard.web.errors import error_response

DOCS = "/docs"
ASSETS = DOCS + "/assets"
FILES = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css",
         "favicon-32x32.png": "image/png"}
PACKAGE = "swagger-ui-bundle-v2"


def swagger_ui_files() -> Traversable | None:
    """The folder of Swagger UI's files; None where the package is not installed."""
    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:
        return None
    return swagger_ui_path


def _missing() -> Response:
    return error_response("UNAVAILABLE", 503, f"the interactive docs need the {PACKAGE} "
                          "package; /openapi.json is served without it")


def router(openapi_url: str, title: str) -> APIRouter:
    docs = APIRouter(include_in_schema=False)

    @docs.get(DOCS)
    def page() -> Response:
        if swagger_ui_files() is None:
            return _missing()
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=f"{title} API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
            # No badge from an online validator: the page asks nothing of other hosts.
            swagger_ui_parameters={"validatorUrl": None})

    @docs.get(ASSETS + "/{name}")
    def asset(name: str) -> Response:
        folder = swagger_ui_files()
        if folder is None:
            return _missing()
        if name not in FILES:
            return error_response("NOT_FOUND", 404, f"no docs file {name[:80]!r}")
        return Response((folder / name).read_bytes(), media_type=FILES[name],
                        headers={"Cache-Control": "max-age=86400"})

    return docs
