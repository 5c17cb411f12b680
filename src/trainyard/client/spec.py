"""What a job asks for, as the SDK and the CLI build it, and model references."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainyard.client.errors import InvalidValue, TrainyardError
from trainyard.client.values import build
from trainyard.quantities import SIZE_HINT, size_mib
from trainyard.v1 import training_pb2 as pb

DEFAULT_QUEUE = "default"


@dataclass
class Resources:
    """Each worker's share. The defaults are the server's (trainyard.domain.spec.Resources);
    a test holds them equal."""

    cpus: float = 1.0
    memory_mb: int | str = 1024  # MiB, or a size as typed: "512M", "4G", "4Gi"
    gpus: int = 0

    def mib(self) -> int:
        """The memory in MiB; a size that is no size is refused naming the field."""
        if not isinstance(self.memory_mb, str):
            return self.memory_mb
        mib = size_mib(self.memory_mb)
        if mib is None:
            raise InvalidValue("resources.memory_mb", f"{self.memory_mb[:40]!r} is not "
                                                      f"{SIZE_HINT}")
        return mib


@dataclass(frozen=True)
class After:
    """A job to wait for: the new job joins the queue once it has ended as `condition`
    asks: "succeeded" (the default; its failure or cancellation cancels the new job) or
    "finished" (any end). The server checks both."""

    job_id: str
    condition: str = ""

    @classmethod
    def parse(cls, text: str) -> After:
        """"JOB_ID", "JOB_ID:succeeded" or "JOB_ID:finished", as `--after` takes it."""
        job_id, _, condition = text.strip().partition(":")
        return cls(job_id, condition)


def after_to_pb(items: Sequence[str | After]) -> list[dict[str, str]]:
    """The TrainRequest's `after`, from strings as `--after` takes them or After values."""
    parsed = [After.parse(item) if isinstance(item, str) else item for item in items]
    return [{"job_id": a.job_id, "condition": a.condition} for a in parsed]


@dataclass
class TrainSpec:
    """A job to submit. The defaults are the server's (trainyard.domain.spec.JobSpec); a test
    holds them equal."""

    name: str
    command: str = ""  # with an image, empty runs the image's own command
    image: str = ""
    dataset: str = ""  # NAME:VERSION
    hyperparameters: Mapping[str, str] = field(default_factory=dict)
    # None: its algorithm's default resources, else the server's (Resources()).
    resources: Resources | None = None
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)
    client_request_id: str = ""
    workers: int = 1  # started together, all or none; resources are each worker's
    pipeline: str = ""  # the caller's pipeline this job joins (made on its first job)
    pipeline_max_parallel: int = 0  # its running limit from now on; 0 keeps the limit it has
    git_commit: str = ""  # the code's version, recorded on each run
    model_name: str = ""  # the model its files become a version of; empty: the name
    framework: str = ""  # "pytorch", "tensorflow" or "none": its workers' variables; "": both
    # Attempts it may use: lost ones are retried up to this, failed ones with
    # retry_on_failure or their exit code listed; 0: the queue's default (3 without one).
    max_attempts: int = 0
    retry_on_failure: bool = False
    retry_exit_codes: Sequence[int] = ()
    time_limit_s: float = 0.0  # each attempt's running time; 0: the queue's default, or none
    pending_timeout_s: float = 0.0  # cancelled if still waiting to start then; 0: never
    # Jobs it waits for: "JOB_ID", "JOB_ID:succeeded" (the default) or "JOB_ID:finished",
    # or After values. It joins the queue once each has ended so.
    after: Sequence[str | After] = ()
    # A registered algorithm, NAME, NAME:VERSION or NAME@ALIAS, in place of command and
    # image: resolved by the server at submit to the version the job keeps.
    algorithm: str = ""

    def to_pb(self) -> pb.TrainRequest:
        res = self.resources
        req = build(
            pb.TrainRequest, name=self.name, command=self.command, image=self.image,
            hyperparameters={k: str(v) for k, v in self.hyperparameters.items()},
            # 0 is "not given" on the wire: the algorithm's default, else the server's.
            resources={"cpus": res.cpus, "memory_mb": res.mib(), "gpus": res.gpus}
            if res is not None else {},
            algorithm=self.algorithm,
            queue=self.queue, priority=self.priority, labels=dict(self.labels),
            client_request_id=self.client_request_id, workers=self.workers,
            pipeline=self.pipeline, pipeline_max_parallel=self.pipeline_max_parallel,
            git_commit=self.git_commit, model_name=self.model_name, framework=self.framework,
            max_attempts=self.max_attempts, retry_on_failure=self.retry_on_failure,
            retry_exit_codes=list(self.retry_exit_codes), time_limit_seconds=self.time_limit_s,
            pending_timeout_seconds=self.pending_timeout_s, after=after_to_pb(self.after),
        )
        if self.dataset:
            name, _, version = self.dataset.partition(":")
            req.dataset.CopyFrom(build(pb.DatasetRef, name=name, version=version))
        return req


def model_ref(text: str) -> pb.ModelRef:
    """NAME, NAME:VERSION or NAME@ALIAS; the server checks the parts."""
    name, at, alias = text.partition("@")
    if at:
        if not alias:
            raise TrainyardError("INVALID_ARGUMENT", "model: name the alias after '@' "
                                 "(NAME@ALIAS)")
        return build(pb.ModelRef, name=name, alias=alias)
    name, colon, version = text.partition(":")
    if colon:
        if not version.isdigit() or not 0 < int(version) < 2**31:
            raise TrainyardError("INVALID_ARGUMENT", f"model: {version[:20]!r} is not a "
                                 "version number (NAME:VERSION)")
        return build(pb.ModelRef, name=name, version=int(version))
    return build(pb.ModelRef, name=name)


def states_to_pb(states: list[str] | None) -> list[Any]:
    try:
        return [pb.JobState.Value(s.upper()) for s in states or []]
    except ValueError as exc:
        raise TrainyardError("INVALID_ARGUMENT", f"states: {exc}") from None


