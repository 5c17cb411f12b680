"""Errors a caller can cause. The API maps each class to one status code."""

from __future__ import annotations


class TrainyardError(Exception):
    """Base class of every error meant for a user."""


class InvalidArgument(TrainyardError):
    """A request field is wrong; nothing was changed."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class NotFound(TrainyardError):
    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} {key!r} not found")
        self.kind = kind
        self.key = key


class FailedPrecondition(TrainyardError):
    """The request is well formed but the object is in the wrong state."""


class StaleState(TrainyardError):
    """A compare-and-set lost: the row no longer has the expected state."""


class AlreadyExists(TrainyardError):
    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} {key!r} already exists")


class Unauthenticated(TrainyardError):
    """No valid identity came with the call. The message never repeats the credential."""


class PermissionDenied(TrainyardError):
    """The caller is known but may not do this; the message says what was refused."""


class ResourceExhausted(TrainyardError):
    """A cap of the policy refuses the request for now; `retry_after` is the seconds until
    it would pass, where that is known (a rate), else None (it waits on other jobs)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
