"""Who an HTTP request comes from, and the checks a browser's ambient credentials need.

A script sends `Authorization: Bearer <token>`, as with gRPC. The dashboard keeps the token
in an HttpOnly, SameSite=Strict cookie (page scripts never read it). A request that changes
something and carries no Authorization header must also prove it came from our own pages
(unless nothing in it says a browser sent it: no cookie, no Origin, no Sec-Fetch-Site):
its X-CSRF-Token header equals the CSRF cookie (double submit), which for a signed-in
session is an HMAC of its token; and an Origin, when sent, is this server. On loopback the
Host must name loopback too, so a page on another name that resolves here (DNS rebinding)
is refused even where no token is needed."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets

from starlette.requests import Request

from trainyard.domain.errors import PermissionDenied

SESSION_COOKIE = "trainyard_session"
CSRF_COOKIE = "trainyard_csrf"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# What a browser adds to a request by itself (a cross-site one always carries Origin or
# Sec-Fetch-Site), and a script sends only if it means to.
BROWSER_HEADERS = ("origin", "sec-fetch-site", "cookie")
SESSION_MAX_AGE_S = 12 * 3600
CSRF_REFUSED = ("cross-site request check failed: {why}; send the X-CSRF-Token header the "
                "dashboard sends, or an Authorization header")


def csrf_for(session_token: str) -> str:
    """The CSRF token of a session: only who knows the session's token can make it."""
    return hmac.new(session_token.encode(), b"trainyard csrf", hashlib.sha256).hexdigest()


def new_csrf() -> str:
    """A CSRF token for a browser without a session (a single-user server on loopback)."""
    return secrets.token_hex(32)


def _loopback_name(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    name = name.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_host(request: Request, loopback_only: bool) -> None:
    if loopback_only and not _loopback_name(request.headers.get("host", "")):
        raise PermissionDenied("this server answers on loopback only; the Host header "
                               "must name it (127.0.0.1, localhost or ::1)")


def _check_cross_site(request: Request, session: str | None) -> None:
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
        raise PermissionDenied(CSRF_REFUSED.format(why=f"the request came from {origin[:80]}"))
    sent = request.headers.get(CSRF_HEADER, "")
    expected = csrf_for(session) if session else request.cookies.get(CSRF_COOKIE, "")
    if not sent or not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise PermissionDenied(CSRF_REFUSED.format(why="its X-CSRF-Token is missing or wrong"))


def presented(request: Request) -> list[tuple[str, str]]:
    """The request's credentials as gRPC metadata: its Authorization header, else its
    session cookie's token; none at all for an anonymous request. Nothing is checked."""
    given = request.headers.getlist("authorization")
    if given:
        return [("authorization", value) for value in given]
    session = request.cookies.get(SESSION_COOKIE) or None
    return [("authorization", f"Bearer {session}")] if session else []


def check_cross_site(request: Request) -> None:
    """Refuse a request that changes something on the strength of what a browser sends by
    itself (the session cookie, or nothing on a server without users) unless it proves it
    came from our pages."""
    if request.method in SAFE_METHODS or request.headers.getlist("authorization"):
        return
    session = request.cookies.get(SESSION_COOKIE) or None
    if session is None and not any(name in request.headers for name in BROWSER_HEADERS):
        return  # a script (curl, say) on a server without users: no browser sent it
    _check_cross_site(request, session)


def credentials(request: Request) -> list[tuple[str, str]]:
    """The request's credentials as gRPC metadata, after the cross-site checks a request
    without an Authorization header needs."""
    check_cross_site(request)
    return presented(request)
