"""How a call to an API server failed: away (ask again later) or refused (the server's own
sentence). Free of the Kubernetes client, so that callers need not load it."""

from __future__ import annotations


class ApiAway(Exception):
    """The API server did not answer, or answered that it cannot serve now (5xx, 429)."""


class ApiRefused(Exception):
    """The API server refused the call (4xx); the message is its own."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
