"""Generated HTTP requests over every route of the JSON API (web/routes.py) and the pages
beside it: path fields from the world's names or strange text, query strings and JSON bodies
from generated messages, with fields of the wrong JSON type, bodies that are not JSON, and
the same callers as over gRPC."""

from __future__ import annotations

import http.client
import json
import math
from typing import Any
from urllib.parse import quote, urlencode

from google.protobuf import json_format  # type: ignore[import-untyped]

from chaos.fuzzing.grpc_calls import MUTATING, Outcome
from chaos.fuzzing.messages import fill, mutate, valid
from chaos.fuzzing.store_snapshot import StoreSnapshot, changed
from chaos.fuzzing.values import Values
from trainyard.web.routes import PREFIX, ROUTES, Route
from trainyard.web.transcode import request_class

# Beside the API: the dashboard, its sign-in, static files, the docs and the metrics.
PAGES = (("GET", "/"), ("GET", "/static/{name}"), ("POST", "/signin"), ("POST", "/signout"),
         ("GET", "/docs"), ("GET", "/openapi.json"), ("GET", "/metrics"),
         ("GET", PREFIX + "/no-such-route"), ("PATCH", PREFIX + "/jobs"))
WRONG_TYPES: tuple[Any, ...] = ([], {}, [1, "a", None], None, True, 1.5, -1, 2**70, "x", "",
                                {"a": {"b": [1]}}, float("inf"))
READ_LIMIT = 256 * 1024


class RestFuzzer:
    def __init__(self, port: int, values: Values, tokens: dict[str, str],
                 store: StoreSnapshot) -> None:
        self.port = port
        self.values = values
        self.tokens = tokens  # caller -> token ("" for none)
        self.store = store
        self._conn: http.client.HTTPConnection | None = None

    def one(self) -> Outcome:
        r = self.values.rng
        caller = self.values.caller(list(self.tokens))
        headers = {"Authorization": f"Bearer {self.tokens[caller]}"} if self.tokens[caller] \
            else {}
        if r.random() < 0.08:
            method, path = r.choice(PAGES)
            name = f"{method} {path}"
            path = path.replace("{name}", quote(self.values.text("name"), safe=""))
            body = self._page_body(headers) if method == "POST" else None
            mutating = False
        else:
            route = r.choice(ROUTES)
            name = f"{route.method} {route.path}"
            method, path, body = self._api_request(route, headers)
            mutating = route.name in MUTATING
        before = self.store.take() if mutating else None
        status, text = self._send(method, path, body, headers)
        # 599: the server closed the connection unanswered, as it may while a client still
        # sends a request line too long to read; not an error it made.
        outcome = Outcome("rest", name, caller, str(status), internal=500 <= status < 599)
        if outcome.internal:
            outcome.detail = f"{method} {path[:200]} body={str(body)[:200]!r} -> {text[:300]}"
        elif before is not None and 400 <= status < 500 and status != 408:
            outcome.changes = changed(before, self.store.take())
            if outcome.changes:
                outcome.detail = f"{method} {path[:200]} -> {status} {text[:200]}"
        return outcome

    def _page_body(self, headers: dict[str, str]) -> bytes:
        r = self.values.rng
        headers["Content-Type"] = "application/json"
        choice = r.random()
        if choice < 0.4:
            return json.dumps(r.choice(WRONG_TYPES)).encode()
        if choice < 0.7:
            return json.dumps({"token": r.choice((*WRONG_TYPES, self.values.text()))}).encode()
        return self.values.text().encode()

    def _api_request(self, route: Route, headers: dict[str, str]) -> tuple[str, str, bytes | None]:
        r, values = self.values.rng, self.values
        request = valid(route.name, values) if r.random() < 0.6 else None
        intact = request is not None and r.random() < 0.5
        if request is None:
            request = fill(request_class(route.rpc)(), values)
        elif not intact:
            request = mutate(request, values)
        data = json_format.MessageToDict(request, preserving_proto_field_name=True)
        target = data.get(route.within, {}) if route.within else data
        path = route.path
        for part in _path_fields(route.path):
            value = target.pop(part, None)
            text = str(value) if value is not None and r.random() < 0.8 else values.text(part)
            if not text:
                text = values.text(part) or "x"
            path = path.replace("{" + part + "}", quote(text, safe=""))
        path = PREFIX + path
        if not intact and r.random() < 0.3:
            _wrong_types(data, values)
        if not route.takes_body:
            query = _query(target, values)
            return route.method, path + ("?" + query if query else ""), None
        headers["Content-Type"] = "application/json" if intact or r.random() < 0.7 else \
            r.choice(("text/plain", "application/x-www-form-urlencoded", ""))
        roll = 1.0 if intact else r.random()
        if roll < 0.1:
            return route.method, path, values.text().encode()
        if roll < 0.15:
            return route.method, path, json.dumps(r.choice(WRONG_TYPES)).encode()
        if roll < 0.18:
            return route.method, path, b"{" * 5000
        return route.method, path, json.dumps(data, allow_nan=True).encode()

    def _send(self, method: str, path: str, body: bytes | None,
              headers: dict[str, str]) -> tuple[int, str]:
        for _ in range(2):
            conn = self._connection()
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                text = resp.read(READ_LIMIT).decode(errors="replace")
                if not resp.isclosed():  # a stream we stopped reading: a fresh connection
                    self.close()
                return resp.status, text
            except TimeoutError:
                self.close()
                return 408, "the client's read timed out (a stream that follows)"
            except (http.client.HTTPException, ConnectionError):
                self.close()
        return 599, "the connection failed twice"

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _path_fields(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


def _query(data: dict[str, Any], values: Values) -> str:
    pairs: list[tuple[str, str]] = []
    for key, value in data.items():
        if isinstance(value, list):
            pairs += [(key, _plain(v)) for v in value[:5]]
        elif isinstance(value, dict):
            pairs += [(f"{key}.{k}", _plain(v)) for k, v in list(value.items())[:5]]
        else:
            pairs.append((key, _plain(value)))
    if values.chance(0.2):
        pairs.append((values.text(), values.text()))
    return urlencode(pairs)


def _plain(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value if isinstance(value, str) else json.dumps(value)


def _wrong_types(data: dict[str, Any], values: Values) -> None:
    """One or two fields (or a new one) given a value of another JSON type."""
    keys = list(data) or ["name"]
    for _ in range(values.rng.randint(1, 2)):
        key = values.rng.choice(keys + ["unknown_field"])
        data[key] = values.rng.choice(WRONG_TYPES)
