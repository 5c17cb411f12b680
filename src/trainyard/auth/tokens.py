"""API tokens: "ty_<id>_<secret>". The id is public (it names the token for listing and
revoking); only the SHA-256 of the secret is stored. Secrets are 256 random bits, so a fast
hash suffices: there is nothing to brute-force."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from trainyard.domain.errors import Unauthenticated

TOKEN_RE = re.compile(r"^ty_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")
MAX_HEADER = 512  # longer authorization values are refused without parsing


@dataclass(frozen=True)
class NewToken:
    id: str
    token: str  # shown once
    secret_hash: str


def new_token() -> NewToken:
    token_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    return NewToken(token_id, f"ty_{token_id}_{secret}", hash_secret(secret))


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def matches(secret: str, secret_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), secret_hash)


def parse_bearer(header: str | bytes) -> tuple[str, str]:
    """(token id, secret) from an authorization header value, or Unauthenticated with a
    sentence that never repeats the value."""
    match = TOKEN_RE.match(bearer_value(header))
    if match is None:
        raise Unauthenticated("the bearer token is malformed: Trainyard tokens look like "
                              "ty_<12 hex digits>_<43 characters>")
    return match.group(1), match.group(2)


def bearer_value(header: str | bytes) -> str:
    """The credential of an authorization header value ('Bearer <credential>'), or
    Unauthenticated with a sentence that never repeats the value."""
    if isinstance(header, bytes) or not header.isascii() or not header.isprintable():
        raise Unauthenticated("the authorization header must be printable ASCII: "
                              "'Bearer <token>'")
    if len(header) > MAX_HEADER:
        raise Unauthenticated(f"the authorization header is longer than {MAX_HEADER} "
                              "characters; expected 'Bearer <token>'")
    scheme, _, credential = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise Unauthenticated("the authorization header must use the Bearer scheme: "
                              "'Bearer <token>'")
    return credential.strip()
