"""Runs, model references and the names users give them. Pure: strings in, values or
InvalidArgument out.

A run is one attempt of one job, named `<job id>-<attempt>`; a bare job id names its latest
attempt. A run's algorithm is the registered algorithm its job is pinned to; without one, its
`algorithm` label, or else its job's name without the last `-suffix` (`digits-lr-0.1` is
`digits-lr`, `lr-3` of a sweep is `lr`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import NAME_RE

ALGORITHM_LABEL = "algorithm"
JOB_ID_RE = re.compile(r"^[0-9a-z]{1,32}\Z")
RUN_ID_RE = re.compile(r"^([0-9a-z]{1,32})(?:-([1-9][0-9]{0,8}))?\Z")
METRIC_KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,127}\Z")
HEX_RE = re.compile(r"^[0-9a-f]{1,64}\Z")
MAX_COMPARED = 50


def run_id(job_id: str, attempt: int) -> str:
    return f"{job_id}-{attempt}"


def parse_run_id(text: str, field: str = "run_id") -> tuple[str, int | None]:
    """(job id, attempt); attempt None for a bare job id (its latest attempt)."""
    match = RUN_ID_RE.match(text)
    if match is None:
        raise InvalidArgument(field, f"{text[:80]!r} is not a run id (JOB_ID-ATTEMPT, e.g. "
                              "18c2f3a9b01d4e5f6-1, or a job id for its latest attempt)")
    attempt = match.group(2)
    return match.group(1), int(attempt) if attempt else None


def algorithm_of(name: str, labels: dict[str, str], registered: str = "") -> str:
    """A run's algorithm: the registered one its job is pinned to, else its label, else its
    name less the last -suffix."""
    if registered:
        return registered
    if labels.get(ALGORITHM_LABEL):
        return labels[ALGORITHM_LABEL]
    head, sep, _ = name.rpartition("-")
    return head if sep and head else name


class Op(StrEnum):
    GE = ">="
    LE = "<="
    GT = ">"
    LT = "<"
    EQ = "=="
    NE = "!="


_THRESHOLD_RE = re.compile(r"^\s*([^<>=!\s]+)\s*(>=|<=|==|!=|>|<|=)\s*(\S+)\s*\Z")


@dataclass(frozen=True)
class MetricThreshold:
    """Keeps runs whose final value of `key` compares so with `value`."""

    key: str
    op: Op
    value: float

    def holds(self, actual: float) -> bool:
        return {Op.GE: actual >= self.value, Op.LE: actual <= self.value,
                Op.GT: actual > self.value, Op.LT: actual < self.value,
                Op.EQ: actual == self.value, Op.NE: actual != self.value}[self.op]

    def __str__(self) -> str:
        return f"{self.key}{self.op}{self.value:g}"


def check_metric_key(key: str, field: str) -> None:
    if not METRIC_KEY_RE.match(key):
        raise InvalidArgument(field, f"{key[:80]!r} is not a metric name")


def threshold(key: str, op: str, value: float, field: str = "metrics") -> MetricThreshold:
    check_metric_key(key, field)
    try:
        parsed = Op("==" if op == "=" else op)
    except ValueError:
        raise InvalidArgument(field, f"{op[:8]!r} is not one of >=, <=, >, <, ==, !=") from None
    if not math.isfinite(value):
        raise InvalidArgument(field, f"{key}: the threshold must be a finite number")
    return MetricThreshold(key, parsed, value)


def parse_threshold(text: str, field: str = "--metric") -> MetricThreshold:
    """'accuracy>=0.9', 'loss<0.2', 'epoch==3'."""
    match = _THRESHOLD_RE.match(text)
    if match is None:
        raise InvalidArgument(field, f"{text[:80]!r} is not METRIC OP NUMBER, e.g. "
                              "'accuracy>=0.9' (OP: >=, <=, >, <, ==, !=)")
    key, op, number = match.groups()
    try:
        value = float(number)
    except ValueError:
        raise InvalidArgument(field, f"{number[:40]!r} is not a number") from None
    return threshold(key, op, value, field)


@dataclass(frozen=True)
class ModelRef:
    """NAME (its latest version), NAME:VERSION or NAME@ALIAS."""

    name: str
    version: int = 0  # 0: by alias, or the latest
    alias: str = ""

    def __str__(self) -> str:
        if self.alias:
            return f"{self.name}@{self.alias}"
        return f"{self.name}:{self.version}" if self.version else self.name


def check_model_name(name: str, field: str = "model", what: str = "model") -> None:
    """A model's (or an algorithm's: `what`) name, as dataset names are checked."""
    if not NAME_RE.match(name):
        raise InvalidArgument(field, f"{name[:130]!r} is not a valid {what} name (a letter or "
                              "digit, then letters, digits, '.', '_' or '-'; at most 128)")


def check_alias(alias: str, field: str = "alias") -> None:
    if not NAME_RE.match(alias) or alias.isdigit():
        raise InvalidArgument(field, f"{alias[:130]!r} is not a valid alias (a name like "
                              "'production': letters, digits, '.', '_' or '-', not a number)")


def model_ref(name: str, version: int = 0, alias: str = "", field: str = "model",
              what: str = "model") -> ModelRef:
    """A reference to a version of a model, or of whatever else is named, numbered and
    aliased the same way (`what`: an algorithm)."""
    check_model_name(name, f"{field}.name", what)
    if version < 0:
        raise InvalidArgument(f"{field}.version", "must not be negative")
    if alias:
        check_alias(alias, f"{field}.alias")
        if version:
            raise InvalidArgument(field, "give a version or an alias, not both")
    return ModelRef(name, version, alias)


def parse_model_ref(text: str, field: str = "model", what: str = "model") -> ModelRef:
    """NAME, NAME:VERSION or NAME@ALIAS, as the CLI takes it."""
    name, at, alias = text.partition("@")
    if at:
        if not alias:
            raise InvalidArgument(field, "name the alias after '@' (NAME@ALIAS)")
        return model_ref(name, 0, alias, field, what)
    name, colon, version = text.partition(":")
    if colon:
        if not version.isdigit() or not 0 < int(version) < 2**31:
            raise InvalidArgument(field, f"{version[:20]!r} is not a version number")
        return model_ref(name, int(version), "", field, what)
    return model_ref(name, 0, "", field, what)


def check_hex_prefix(value: str, field: str) -> None:
    if not HEX_RE.match(value):
        raise InvalidArgument(field, f"{value[:80]!r} is not a hexadecimal hash or prefix")
