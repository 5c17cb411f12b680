"""The dashboard's doors: its page and files (all inside the package; no CDN), and signing
in and out. Signing in checks the token as WhoAmI would and keeps it in an HttpOnly,
SameSite=Strict cookie; the page's scripts see only the CSRF token beside it."""

from __future__ import annotations

import json
from importlib import resources

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from trainyard.api.permissions import TRAINING
from trainyard.domain.errors import InvalidArgument, Unauthenticated
from trainyard.web.api import Door
from trainyard.web.errors import from_error
from trainyard.web.session import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    SESSION_MAX_AGE_S,
    check_host,
    credentials,
    csrf_for,
    new_csrf,
)

STATIC = resources.files("trainyard.web") / "static"
TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml",
         ".html": "text/html; charset=utf-8", ".png": "image/png"}
WHOAMI = TRAINING + "WhoAmI"


def _file(name: str) -> Response:
    path = STATIC / name
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    if "/" in name or name.startswith(".") or suffix not in TYPES or not path.is_file():
        return JSONResponse({"error": {"code": "NOT_FOUND", "status": 404,
                                       "message": f"no file {name[:80]!r}"}}, 404)
    return Response(path.read_bytes(), media_type=TYPES[suffix],
                    headers={"Cache-Control": "no-cache"})


def _set_cookies(response: Response, request: Request, token: str) -> None:
    secure = request.url.scheme == "https"
    response.set_cookie(SESSION_COOKIE, token, max_age=SESSION_MAX_AGE_S, httponly=True,
                        samesite="strict", secure=secure, path="/")
    response.set_cookie(CSRF_COOKIE, csrf_for(token), max_age=SESSION_MAX_AGE_S,
                        httponly=False, samesite="strict", secure=secure, path="/")


def router(door: Door) -> APIRouter:
    pages = APIRouter(include_in_schema=False)

    @pages.get("/")
    def index(request: Request) -> Response:
        check_host(request, door.loopback_only)
        response = _file("index.html")
        if not request.cookies.get(SESSION_COOKIE) and not request.cookies.get(CSRF_COOKIE):
            # A server without users needs no sign-in; its page still proves its origin.
            response.set_cookie(CSRF_COOKIE, new_csrf(), httponly=False, samesite="strict",
                                secure=request.url.scheme == "https", path="/")
        return response

    @pages.get("/static/{name}")
    def static(name: str) -> Response:
        return _file(name)

    @pages.post("/signin")
    async def signin(request: Request) -> Response:
        """{"token": "ty_..."} as JSON (a form from another site cannot send JSON without
        asking first, and is refused)."""
        check_host(request, door.loopback_only)
        if request.headers.get("content-type", "").split(";")[0] != "application/json":
            return from_error(InvalidArgument("body", 'must be JSON: {"token": "ty_..."}'))
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
            return from_error(Unauthenticated("a sign-in must come from this server's page"))
        try:
            token = json.loads(await request.body()).get("token", "")
        except (ValueError, AttributeError):
            token = None
        if not isinstance(token, str) or not token.strip():
            return from_error(InvalidArgument("token", "is required"))
        try:
            who = await run_in_threadpool(
                door.callers.caller, WHOAMI, [("authorization", f"Bearer {token.strip()}")])
        except (Unauthenticated, InvalidArgument) as exc:
            return from_error(exc)
        response = JSONResponse({"user": getattr(who, "user", "")})
        _set_cookies(response, request, token.strip())
        return response

    @pages.post("/signout")
    def signout(request: Request) -> Response:
        check_host(request, door.loopback_only)
        credentials(request)  # the CSRF check: another site cannot sign a user out
        response = JSONResponse({"signed_out": True})
        for name in (SESSION_COOKIE, CSRF_COOKIE):
            response.delete_cookie(name, path="/", samesite="strict", httponly=name ==
                                   SESSION_COOKIE)
        return response

    return pages
