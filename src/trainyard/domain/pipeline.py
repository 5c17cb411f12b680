"""Pipelines: a user's named group of jobs, submitted over time, that runs at most a limit of
them at once. A sweep is the other kind of group; both share one limit rule."""

from __future__ import annotations

import hashlib

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import NAME_RE

PIPELINE = "pipeline"
SWEEP = "sweep"
PIPELINE_PREFIX = "pl"  # group ids of pipelines start so; a sweep's with "sw"
MAX_PARALLEL = 10_000


def pipeline_id(owner: str, name: str) -> str:
    """The same for every submit of this owner to this pipeline, so that concurrent first
    submits agree on one group without asking each other."""
    digest = hashlib.sha256(f"{owner}\0{name}".encode()).hexdigest()
    return PIPELINE_PREFIX + digest[:30]


def check_pipeline(name: str, max_parallel: int) -> None:
    if max_parallel and not name:
        raise InvalidArgument("pipeline_max_parallel", "needs a pipeline to limit; give "
                              "pipeline as well")
    if name and not NAME_RE.match(name):
        raise InvalidArgument("pipeline", f"{name!r} is not a valid name: letters, digits, "
                              "'.', '_' and '-', starting with a letter or digit, at most 128")
    if not 0 <= max_parallel <= MAX_PARALLEL:
        raise InvalidArgument("pipeline_max_parallel", f"must be 0 (keep the pipeline's "
                              f"limit) to {MAX_PARALLEL}, got {max_parallel}")


def group_title(kind: str, name: str) -> str:
    """How a sentence names the group: "pipeline 'etl'", "sweep 'lr'"."""
    return f"{kind} {name!r}"
