"""A job's kind: which executor runs it. Decided once, at submit, and stored with the job;
a pool is always a named pool, whose executor runs jobs of one kind."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final


class JobKind:
    """The kinds there are, as the plain strings that are stored and shown."""

    LOCAL: Final = "local"  # a process on the service's host
    DOCKER: Final = "docker"  # a container on the host's Docker engine
    SLURM: Final = "slurm"  # a batch job on a Slurm cluster, through the job runtime
    # A Kubeflow custom resource on a Kubernetes cluster (its operator runs the workers),
    # through the job runtime.
    KUBERNETES: Final = "kubernetes"


KINDS: tuple[str, ...] = (JobKind.LOCAL, JobKind.DOCKER, JobKind.SLURM, JobKind.KUBERNETES)
# The kinds that run a bare command (no image), and those that run an image.
COMMAND_KINDS: frozenset[str] = frozenset({JobKind.LOCAL, JobKind.SLURM})
IMAGE_KINDS: frozenset[str] = frozenset({JobKind.DOCKER, JobKind.KUBERNETES})


def kind_for(image: str) -> str:
    """A job with an image runs as a container; a bare command as a local process."""
    return JobKind.DOCKER if image else JobKind.LOCAL


def runs_shape(executor: str, image: str, code: bool = False) -> bool:
    """Whether a pool of this executor runs a job with (or without) an image. A registered
    algorithm's code directory (`code`) with an image runs anywhere: as a command on the
    host of a command backend, in its image on a container backend."""
    if code and image:
        return executor in COMMAND_KINDS or executor in IMAGE_KINDS
    return executor in IMAGE_KINDS if image else executor in COMMAND_KINDS


def kind_in(pool_executors: Iterable[str], image: str, code: bool = False) -> str:
    """The kind of a job in a queue whose pools have these executors, in order of
    preference: the first that runs its shape; kind_for() when none does (the submit check
    then says the queue runs no such jobs)."""
    return next((e for e in pool_executors if runs_shape(e, image, code)), kind_for(image))
