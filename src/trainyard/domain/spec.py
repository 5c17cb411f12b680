"""What a user asks to run, and the rules a request must satisfy."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from trainyard.domain.contract import reserved_reason
from trainyard.domain.errors import InvalidArgument
from trainyard.domain.retry import MAX_ATTEMPTS_LIMIT, MAX_DURATION_S, MAX_RETRY_EXIT_CODES

# \Z, not $: a name must not end in a newline ($ matches before one).
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
LABEL_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}\Z")
HASH_RE = re.compile(r"^[0-9a-f]{64}\Z")
# A git commit the client names as the code's version: an abbreviated or full SHA-1/SHA-256.
GIT_COMMIT_RE = re.compile(r"^[0-9a-f]{7,64}\Z")
# A local image reference: lowercase path components, then an optional tag or digest; or
# an image id.
IMAGE_RE = re.compile(
    r"^(?:sha256:[0-9a-f]{64}|[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?"
    r"(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?"
    r"(?:@sha256:[0-9a-f]{64})?)\Z"
)
DEFAULT_QUEUE = "default"


@dataclass(frozen=True)
class Resources:
    cpus: float = 1.0
    memory_mb: int = 1024
    gpus: int = 0


@dataclass(frozen=True)
class DatasetRef:
    name: str
    version: str


@dataclass(frozen=True)
class AlgorithmRef:
    """A registered algorithm: NAME (its latest version), NAME:VERSION or NAME@ALIAS. On a
    stored job it is pinned: the version it was resolved to at submit, no alias."""

    name: str
    version: int = 0  # 0: by alias, or the latest
    alias: str = ""

    def __str__(self) -> str:
        if self.alias:
            return f"{self.name}@{self.alias}"
        return f"{self.name}:{self.version}" if self.version else self.name


@dataclass(frozen=True)
class JobSpec:
    name: str
    command: str = ""
    image: str = ""
    dataset: DatasetRef | None = None
    hyperparameters: dict[str, str] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    # Processes started together as one gang, all or none; `resources` are each one's.
    workers: int = 1
    # The code's version beside the command or image: a git commit the client supplies.
    git_commit: str = ""
    # The model the job's artifact becomes a version of; empty: the job's name.
    model_name: str = ""
    # Whose worker variables each worker of a group gets (FRAMEWORKS); empty: both sets.
    framework: str = ""
    # The attempts it may use (domain.retry): lost ones are retried up to this, failed ones
    # only with retry_on_failure or their exit code listed. 0: its queue's default.
    max_attempts: int = 0
    retry_on_failure: bool = False
    retry_exit_codes: tuple[int, ...] = ()
    # Each attempt's running time, then TERM and KILL; 0: none (or its queue's default).
    time_limit_s: float = 0.0
    # How long it may wait to start before it is cancelled; 0: as long as it takes.
    pending_timeout_s: float = 0.0
    # The registered algorithm it runs (domain.algorithms): a handle in a request, pinned to
    # one version at submit, whose image and command the spec then holds; and, for an
    # algorithm of a code directory, that directory's content hash (CODE_PATH in the job).
    algorithm: AlgorithmRef | None = None
    code_hash: str = ""

    @property
    def total_resources(self) -> Resources:
        """What the whole job holds: every worker's resources."""
        return total_resources(self.resources, self.workers)

    @property
    def model(self) -> str:
        """The model name its artifact is a version of."""
        return self.model_name or self.name


def total_resources(per_worker: Resources, workers: int) -> Resources:
    """A gang's demand, as the scheduler and the pools count it: one unit, all or none."""
    if workers == 1:
        return per_worker
    # Rounded so that 3 x 0.1 CPUs is 0.3, not a hair more than a pool of 0.3.
    return Resources(round(per_worker.cpus * workers, 9), per_worker.memory_mb * workers,
                     per_worker.gpus * workers)


@dataclass(frozen=True)
class SpecLimits:
    """Bounds beyond which a request is treated as a mistake, not a wish."""

    max_cpus: float = 1024.0
    max_memory_mb: int = 16 * 1024 * 1024  # 16 TiB
    max_gpus: int = 64
    max_workers: int = 64
    max_priority: int = 1_000_000
    max_command_bytes: int = 64 * 1024
    max_hyperparameters: int = 256
    max_value_bytes: int = 16 * 1024
    # HYPERPARAMETERS is one environment string: the kernel refuses any over 128 KiB.
    max_hyperparameters_bytes: int = 64 * 1024
    max_labels: int = 64
    max_image_chars: int = 512


# The frameworks whose variables a worker group can be given: PyTorch's (WORLD_SIZE, RANK,
# LOCAL_RANK, MASTER_ADDR, MASTER_PORT), TensorFlow's (TF_CONFIG), or neither; "" is both.
FRAMEWORKS = ("pytorch", "tensorflow", "none")


def check_text(field: str, value: str, max_len: int = 256) -> None:
    """A free-text request field that reaches the store: no NUL, bounded length."""
    if "\x00" in value:
        raise InvalidArgument(field, "must not contain NUL bytes")
    if len(value) > max_len:
        raise InvalidArgument(field, f"must be at most {max_len} characters")


def validate_spec(spec: JobSpec, limits: SpecLimits = SpecLimits()) -> None:
    """Raise InvalidArgument naming the first offending field; return if the spec is sound."""
    if not spec.name:
        raise InvalidArgument("name", "must not be empty")
    if not NAME_RE.match(spec.name):
        raise InvalidArgument(
            "name",
            "must start with a letter or digit and hold only letters, digits, '.', '_' "
            "or '-' (at most 128 characters)",
        )
    _validate_program(spec, limits)
    if spec.git_commit and not GIT_COMMIT_RE.match(spec.git_commit):
        raise InvalidArgument("git_commit", f"{spec.git_commit[:80]!r} is not a git commit "
                              "(7 to 64 lowercase hexadecimal digits)")
    if spec.model_name and not NAME_RE.match(spec.model_name):
        raise InvalidArgument("model_name", f"{spec.model_name[:130]!r} is not a valid model "
                              "name (a letter or digit, then letters, digits, '.', '_' or '-'; "
                              "at most 128 characters)")
    _validate_resources(spec.resources, limits)
    _validate_workers(spec, limits)
    if spec.framework and spec.framework not in FRAMEWORKS:
        raise InvalidArgument("framework", f"{spec.framework[:40]!r} is not a framework: give "
                              f"{', '.join(FRAMEWORKS)}, or nothing for both sets of variables")
    if not NAME_RE.match(spec.queue):
        raise InvalidArgument("queue", f"{spec.queue!r} is not a valid queue name")
    if abs(spec.priority) > limits.max_priority:
        raise InvalidArgument("priority", f"must be between -{limits.max_priority} and "
                              f"{limits.max_priority}")
    if spec.dataset is not None:
        _validate_dataset_ref(spec.dataset)
    _validate_hyperparameters(spec.hyperparameters, limits)
    _validate_labels(spec.labels, limits)
    _validate_retries(spec)
    if spec.code_hash and not HASH_RE.match(spec.code_hash):
        raise InvalidArgument("code_hash", "must be the 64-character hash of a code directory")
    if spec.code_hash and spec.algorithm is None:
        raise InvalidArgument("code_hash", "a code directory comes only with an algorithm")


def _validate_retries(spec: JobSpec) -> None:
    if type(spec.max_attempts) is not int or not 0 <= spec.max_attempts <= MAX_ATTEMPTS_LIMIT:
        raise InvalidArgument("max_attempts", f"must be a whole number from 1 to "
                              f"{MAX_ATTEMPTS_LIMIT} (0: the queue's default), got "
                              f"{spec.max_attempts!r}")
    if len(spec.retry_exit_codes) > MAX_RETRY_EXIT_CODES:
        raise InvalidArgument("retry_exit_codes", f"at most {MAX_RETRY_EXIT_CODES} allowed")
    for code in spec.retry_exit_codes:
        if type(code) is not int or not 1 <= code <= 255:
            raise InvalidArgument("retry_exit_codes", f"{code!r} is not an exit code that "
                                  "fails a job (1 to 255)")
    for name, value in (("time_limit", spec.time_limit_s),
                        ("pending_timeout", spec.pending_timeout_s)):
        if not (value == 0 or 1 <= value <= MAX_DURATION_S):  # also NaN
            raise InvalidArgument(name, f"must be a duration from 1 s to 10 years (0: none), "
                                  f"got {value!r} s")


def _validate_program(spec: JobSpec, limits: SpecLimits) -> None:
    if not spec.command.strip() and not spec.image:
        raise InvalidArgument("command", "must not be empty: give the command to run")
    if len(spec.command.encode()) > limits.max_command_bytes:
        raise InvalidArgument("command", f"is longer than {limits.max_command_bytes} bytes")
    if "\x00" in spec.command:
        raise InvalidArgument("command", "must not contain NUL bytes")
    if spec.image:
        check_text("image", spec.image, limits.max_image_chars)
        if not IMAGE_RE.match(spec.image):
            raise InvalidArgument("image", f"{spec.image!r} is not an image reference "
                                  "(NAME[:TAG] or NAME@sha256:DIGEST, e.g. trainyard/demo)")


def _validate_resources(res: Resources, limits: SpecLimits) -> None:
    if not res.cpus > 0:  # also rejects NaN
        raise InvalidArgument("resources.cpus", f"must be positive, got {res.cpus}")
    if res.cpus > limits.max_cpus:
        raise InvalidArgument("resources.cpus", f"{res.cpus} is more than the limit of "
                              f"{limits.max_cpus:g}")
    if res.memory_mb <= 0:
        raise InvalidArgument("resources.memory_mb", f"must be positive, got {res.memory_mb}")
    if res.memory_mb > limits.max_memory_mb:
        raise InvalidArgument("resources.memory_mb", f"{res.memory_mb} MiB is more than the "
                              f"limit of {limits.max_memory_mb} MiB")
    if res.gpus < 0:
        raise InvalidArgument("resources.gpus", f"must not be negative, got {res.gpus}")
    if res.gpus > limits.max_gpus:
        raise InvalidArgument("resources.gpus", f"{res.gpus} is more than the "
                              f"{limits.max_gpus} GPUs this server can give a job")


def _validate_workers(spec: JobSpec, limits: SpecLimits) -> None:
    workers = spec.workers
    if type(workers) is not int or not 1 <= workers <= limits.max_workers:
        raise InvalidArgument("workers", f"must be a whole number from 1 to "
                              f"{limits.max_workers}, got {workers!r}")
    if workers > 1 and spec.image and not spec.command.strip():
        raise InvalidArgument("command", f"a container job of {workers} workers needs a "
                              "command: each worker runs it, under the gang launcher, in "
                              "place of the image's own command")


def _validate_dataset_ref(ref: DatasetRef) -> None:
    if not ref.name:
        raise InvalidArgument("dataset.name", "must not be empty when a dataset is given")
    if not NAME_RE.match(ref.name):
        raise InvalidArgument("dataset.name", f"{ref.name!r} is not a valid dataset name")
    if not HASH_RE.match(ref.version):
        raise InvalidArgument("dataset.version", "must be the 64-character hash printed by "
                              "'trainyard datasets register'")


def _validate_hyperparameters(params: dict[str, str], limits: SpecLimits) -> None:
    if len(params) > limits.max_hyperparameters:
        raise InvalidArgument("hyperparameters", f"at most {limits.max_hyperparameters} allowed")
    for key, value in params.items():
        field_name = f"hyperparameters.{key}"
        if not ENV_NAME_RE.match(key):
            raise InvalidArgument(field_name, "is not a valid environment variable name "
                                  "(letters, digits and '_', not starting with a digit)")
        reason = reserved_reason(key)
        if reason is not None:
            raise InvalidArgument(field_name, reason)
        if "\x00" in value or len(value.encode()) > limits.max_value_bytes:
            raise InvalidArgument(field_name, f"value must be at most {limits.max_value_bytes} "
                                  "bytes without NUL bytes")
    total = sum(len(k.encode()) + len(v.encode()) for k, v in params.items())
    if total > limits.max_hyperparameters_bytes:
        raise InvalidArgument("hyperparameters", f"{total} bytes in all, more than the limit of "
                              f"{limits.max_hyperparameters_bytes}")


def _validate_labels(labels: dict[str, str], limits: SpecLimits) -> None:
    if len(labels) > limits.max_labels:
        raise InvalidArgument("labels", f"at most {limits.max_labels} allowed")
    for key, value in labels.items():
        if not LABEL_KEY_RE.match(key):
            raise InvalidArgument(f"labels.{key}", "key must be 1-63 letters, digits, '.', "
                                  "'_', '/' or '-'")
        if len(value) > 256 or "\x00" in value:
            raise InvalidArgument(f"labels.{key}", "value must be at most 256 characters")
