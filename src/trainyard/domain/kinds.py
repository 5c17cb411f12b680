"""A job's kind: which executor runs it. Decided once, at submit, and stored with the job;
a pool is always a named pool, whose executor runs jobs of one kind."""

from __future__ import annotations

from typing import Final


class JobKind:
    """The kinds there are, as the plain strings that are stored and shown."""

    LOCAL: Final = "local"  # a process on the service's host
    DOCKER: Final = "docker"  # a container on the host's Docker engine


KINDS: tuple[str, ...] = (JobKind.LOCAL, JobKind.DOCKER)


def kind_for(image: str) -> str:
    """A job with an image runs as a container; a bare command as a local process."""
    return JobKind.DOCKER if image else JobKind.LOCAL
