"""From a call's metadata to an Identity. Tokens and users are cached for a few seconds, so a
busy API does not read them on every call; this service's own admin changes clear the cache
at once, and changes made elsewhere (an offline bootstrap) are seen within the TTL."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from trainyard.auth.policy import LOCAL, Identity
from trainyard.auth.tokens import matches, parse_bearer
from trainyard.domain.errors import NotFound, Unauthenticated
from trainyard.store.access import AccessStore, TokenRecord

CACHE_TTL = 5.0
AUTHORIZATION = "authorization"


@dataclass(frozen=True)
class _Cached:
    token: TokenRecord
    identity: Identity
    fetched: float


class Authenticator:
    def __init__(self, store: AccessStore, *, loopback_only: bool,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.loopback_only = loopback_only
        self.clock = clock
        self._lock = threading.Lock()
        self._tokens: dict[str, _Cached] = {}
        self._users_exist: tuple[bool, float] | None = None

    def invalidate(self) -> None:
        with self._lock:
            self._tokens.clear()
            self._users_exist = None

    def single_user(self) -> bool:
        """No users yet and nobody but this host can connect: no tokens needed."""
        if not self.loopback_only:
            return False
        now = time.monotonic()
        with self._lock:
            cached = self._users_exist
        if cached is None or now - cached[1] > CACHE_TTL:
            cached = (self.store.any_users(), now)
            with self._lock:
                self._users_exist = cached
        return not cached[0]

    def identify(self, metadata: Iterable[tuple[str, str | bytes]]) -> Identity:
        values = [value for key, value in metadata if key.lower() == AUTHORIZATION]
        if len(values) > 1:
            raise Unauthenticated("more than one authorization header was sent")
        if not values:
            if self.single_user():
                return LOCAL
            raise Unauthenticated("this server needs a token: send 'authorization: Bearer "
                                  "<token>' (the CLI and SDK read TRAINYARD_TOKEN)")
        token_id, secret = parse_bearer(values[0])
        cached = self._lookup(token_id)
        if cached is None or not matches(secret, cached.token.secret_hash):
            raise Unauthenticated(f"token {token_id} is not valid here")
        token = cached.token
        if token.revoked_at is not None:
            raise Unauthenticated(f"token {token_id} was revoked")
        if token.expires_at is not None and self.clock() >= token.expires_at:
            when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(token.expires_at))
            raise Unauthenticated(f"token {token_id} expired at {when}")
        return cached.identity

    def _lookup(self, token_id: str) -> _Cached | None:
        now = time.monotonic()
        with self._lock:
            cached = self._tokens.get(token_id)
        if cached is not None and now - cached.fetched < CACHE_TTL:
            return cached
        token = self.store.token(token_id)
        if token is None:
            return None
        try:
            principal = self.store.principal(token.user)
        except NotFound:
            return None
        identity = replace(Identity(user=token.user), admin=principal.admin,
                           read_only=token.read_only, teams=principal.teams,
                           teammates=principal.teammates, token_id=token.id)
        fresh = _Cached(token, identity, now)
        with self._lock:
            self._tokens[token_id] = fresh
        return fresh
