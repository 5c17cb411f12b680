"""Jobs whose outcome their own command decides, each counting its executions: a line in its
checkpoint directory's marker (kept across attempts) and one in its attempt's work directory."""

from __future__ import annotations

import random
from collections.abc import Mapping

from trainyard.client import Resources, TrainSpec

EXPECT = "chaos-expect"  # the label that says how the job must end
RUN = "chaos-run"  # the label every job of a scenario's run carries
MARKER = "marker"  # in $CHECKPOINT_PATH: one line per execution, over all attempts
RAN = "ran"  # in the attempt's work directory: one line per execution of that attempt
IMAGE = "trainyard/base:latest"
FOREVER_S = 600  # a job that only a cancel ends


def command(seconds: float, exit_code: int, *, container: bool = False) -> str:
    """Count this execution, run `seconds`, end with `exit_code`."""
    work = 'cd "$HOME" && ' if container else ""  # a container's HOME is its work directory
    return (f'{work}echo x >> "$CHECKPOINT_PATH/{MARKER}" && echo x >> {RAN} && '
            f"sleep {seconds:.2f}; exit {exit_code}")


def spec(name: str, run: str, *, seconds: float, exit_code: int = 0, container: bool = False,
         expect: str = "", request_id: str = "", queue: str = "default",
         labels: Mapping[str, str] | None = None) -> TrainSpec:
    expected = expect or ("SUCCEEDED" if exit_code == 0 else "FAILED")
    return TrainSpec(
        name=name, command=command(seconds, exit_code, container=container),
        image=IMAGE if container else "", queue=queue,
        resources=Resources(cpus=1, memory_mb=256),
        labels={RUN: run, EXPECT: expected, **(labels or {})},
        client_request_id=request_id)


def mixed(run: str, index: int, rng: random.Random, *, queue: str, container_queue: str = "",
          container_share: float = 0.0) -> TrainSpec:
    """A job of a mixed workload: mostly short successes, a tenth failing on purpose, a few
    containers where `container_queue` is given, with a request id of its own."""
    container = bool(container_queue) and rng.random() < container_share
    exit_code = 1 if rng.random() < 0.1 else 0
    return spec(f"job-{index}", run, seconds=rng.uniform(0.2, 2.0), exit_code=exit_code,
                container=container, request_id=f"{run}-{index}",
                queue=container_queue if container else queue)


def forever(run: str, index: int, *, queue: str) -> TrainSpec:
    """A job that runs until cancelled."""
    return spec(f"cancel-{index}", run, seconds=FOREVER_S, expect="CANCELLED",
                request_id=f"{run}-cancel-{index}", queue=queue)
