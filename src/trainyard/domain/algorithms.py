"""Registered algorithms: versioned training code a job names by handle. Pure: the handle's
grammar, a version's fields and their checks, and how a version fills a job's spec.

A version is either an image, pinned by its content id at registration (so a moved tag never
changes what a version runs), or a code directory stored by content hash, with the image it
runs in (for container backends) and its command. Its default hyperparameters and resources
apply under the job's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.runs import model_ref, parse_model_ref
from trainyard.domain.spec import (
    GIT_COMMIT_RE,
    HASH_RE,
    IMAGE_RE,
    AlgorithmRef,
    JobSpec,
    Resources,
    check_text,
)

# The alias the sample service's requests resolve an algorithm by, before its latest version.
PRODUCTION_ALIAS = "production"
MAX_DESCRIPTION_CHARS = 4096
IMAGE_ID_RE_PREFIX = "sha256:"
# A job's resources before its algorithm's defaults fill them: each 0 is "not given".
UNSET_RESOURCES = Resources(0.0, 0, 0)


class Source(StrEnum):
    """What a version runs: an image as it is, or a code directory inside an image."""

    IMAGE = "image"
    CODE = "code"


@dataclass(frozen=True)
class DefaultResources:
    """A version's default resources: each one set (non-zero) applies where the job leaves
    its own at the spec's default."""

    cpus: float = 0.0
    memory_mb: int = 0
    gpus: int = 0

    @property
    def empty(self) -> bool:
        return not (self.cpus or self.memory_mb or self.gpus)


@dataclass(frozen=True)
class AlgorithmVersion:
    name: str
    version: int
    source: Source
    # The image as registered (a tag, for people) and its content id (what jobs run). For a
    # code directory, the image it runs in on container backends ("" if none).
    image: str = ""
    image_id: str = ""
    code_hash: str = ""  # a code directory's content hash ("" for an image)
    code_size_bytes: int = 0
    code_file_count: int = 0
    command: str = ""  # for an image: "" runs its own command
    hyperparameters: dict[str, str] = field(default_factory=dict)
    resources: DefaultResources = field(default_factory=DefaultResources)
    description: str = ""
    git_commit: str = ""
    created_at: float = 0.0
    created_by: str = ""
    aliases: tuple[str, ...] = ()  # the aliases naming it now

    @property
    def ref(self) -> AlgorithmRef:
        return AlgorithmRef(self.name, self.version)

    @property
    def handle(self) -> str:
        return f"{self.name}:{self.version}"


def algorithm_ref(name: str, version: int = 0, alias: str = "",
                  field: str = "algorithm") -> AlgorithmRef:
    """A reference from its parts, checked as model references are."""
    ref = model_ref(name, version, alias, field, what="algorithm")
    return AlgorithmRef(ref.name, ref.version, ref.alias)


def parse_algorithm_ref(text: str, field: str = "algorithm") -> AlgorithmRef:
    """NAME, NAME:VERSION or NAME@ALIAS, as the CLI and the request take it."""
    ref = parse_model_ref(text, field, what="algorithm")
    return AlgorithmRef(ref.name, ref.version, ref.alias)


def check_registration(version: AlgorithmVersion) -> None:
    """What a new version must hold, each mistake naming its field. Its hyperparameters are
    checked as a job's (domain.spec) by the caller, through apply() on a bare spec."""
    algorithm_ref(version.name, 0, "", "name")
    if version.source is Source.IMAGE:
        if not version.image:
            raise InvalidArgument("image", "must not be empty for an algorithm of an image")
    elif not version.command.strip():
        raise InvalidArgument("command", "a code directory needs the command that runs it "
                              "(in the directory, e.g. 'python3 train.py')")
    if version.image:
        check_text("image", version.image, 512)
        if not IMAGE_RE.match(version.image):
            raise InvalidArgument("image", f"{version.image[:80]!r} is not an image reference")
    if version.image_id and not (version.image_id.startswith(IMAGE_ID_RE_PREFIX)
                                 and HASH_RE.match(version.image_id[7:])):
        raise InvalidArgument("image", f"{version.image_id[:80]!r} is not an image id")
    if version.code_hash and not HASH_RE.match(version.code_hash):
        raise InvalidArgument("code", "must be the 64-character hash of a code directory")
    if "\x00" in version.command:
        raise InvalidArgument("command", "must not contain NUL bytes")
    check_text("description", version.description, MAX_DESCRIPTION_CHARS)
    if version.git_commit and not GIT_COMMIT_RE.match(version.git_commit):
        raise InvalidArgument("git_commit", f"{version.git_commit[:80]!r} is not a git commit "
                              "(7 to 64 lowercase hexadecimal digits)")
    res = version.resources
    for name, value in (("resources.cpus", res.cpus), ("resources.memory_mb", res.memory_mb),
                        ("resources.gpus", res.gpus)):
        if not value >= 0:  # also NaN
            raise InvalidArgument(name, f"must not be negative, got {value}")


def conflicting_program(spec: JobSpec) -> InvalidArgument | None:
    """A request that names an algorithm and its own image or command: refused, naming both."""
    if spec.algorithm is None:
        return None
    given = [name for name, value in (("image", spec.image), ("command", spec.command.strip()))
             if value]
    if not given:
        return None
    return InvalidArgument(given[0], f"give --algorithm or --{given[0]}, not both: the "
                           f"algorithm {spec.algorithm} brings its own image and command")


def apply(spec: JobSpec, version: AlgorithmVersion) -> JobSpec:
    """The job's spec with the version pinned: its image (by content id) and command, its code
    directory, and its defaults under the job's own hyperparameters and resources. A resource
    the job leaves at 0 (UNSET_RESOURCES: what a request that names none carries) takes the
    version's default, else the service's; so a job cannot ask for fewer GPUs than its
    algorithm's default."""
    refused = conflicting_program(spec)
    if refused is not None:
        raise refused
    res = spec.resources
    defaults = version.resources
    resources = Resources(
        cpus=res.cpus or defaults.cpus or Resources.cpus,
        memory_mb=res.memory_mb or defaults.memory_mb or Resources.memory_mb,
        gpus=res.gpus or defaults.gpus,
    )
    return replace(
        spec,
        algorithm=version.ref,
        image=version.image_id or version.image,
        command=version.command,
        code_hash=version.code_hash,
        hyperparameters={**version.hyperparameters, **spec.hyperparameters},
        resources=resources,
        git_commit=spec.git_commit or version.git_commit,
    )
