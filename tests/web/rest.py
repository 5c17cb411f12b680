"""A small HTTP client for the tests of the JSON API: one request on a fresh connection to a
server on loopback, its reply whole, and server-sent events parsed from their lines."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass, field
from typing import Any

from trainyard.server.assembly import TrainyardServer
from trainyard.store.jobs import JobFilter


@dataclass(frozen=True)
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def error(self) -> dict[str, Any]:
        """The error body every refusal has; fails the test when it is not that shape."""
        data = self.json()
        assert set(data) == {"error"}, data
        error = data["error"]
        assert {"code", "status", "message"} <= set(error), error
        assert error["status"] == self.status and error["message"], error
        assert "Traceback" not in self.body.decode(), self.body
        return error  # type: ignore[no-any-return]

    def cookies(self) -> dict[str, str]:
        """Set-Cookie headers by cookie name (the whole header, attributes and all)."""
        return {h.split("=", 1)[0]: h for h in self.headers.get_all("set-cookie") or []}


@dataclass(frozen=True)
class Event:
    kind: str
    data: Any
    id: str


def events(body: bytes) -> list[Event]:
    """The events of a text/event-stream body, from their `event:`, `data:` and `id:` lines."""
    out: list[Event] = []
    for block in body.decode().split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.splitlines():
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields.setdefault(name, []).append(value.removeprefix(" "))
        if fields:
            out.append(Event(fields.get("event", ["message"])[0],
                             json.loads("\n".join(fields.get("data", ["null"]))),
                             fields.get("id", [""])[0]))
    return out


@dataclass
class Rest:
    """Requests to one server's HTTP port, as a caller with `token` (None: anonymous)."""

    port: int
    token: str | None = None
    host: str = "127.0.0.1"
    extra: dict[str, str] = field(default_factory=dict)

    def as_(self, token: str | None) -> Rest:
        return Rest(self.port, token, self.host, dict(self.extra))

    def call(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
             headers: dict[str, str] | None = None, timeout: float = 30) -> Reply:
        sent = {**self.extra, **(headers or {})}
        if self.token is not None:
            sent.setdefault("Authorization", f"Bearer {self.token}")
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
        if data is not None:
            sent.setdefault("Content-Type", "application/json")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            return Reply(response.status, response.headers, response.read())
        finally:
            conn.close()

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return self.call("POST", path, body, **kwargs)

    def put(self, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return self.call("PUT", path, body, **kwargs)


def job_count(server: TrainyardServer) -> int:
    """Every job in the store, whoever owns it (a refused request must not add one)."""
    return len(server.jobs.list(JobFilter(), page_size=1000)[0])
