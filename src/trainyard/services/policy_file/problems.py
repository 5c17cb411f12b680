"""What is wrong with a policy file, in the words its messages use: every sentence a problem
can be reported with, for pydantic's own error types and for the rules the schema adds, and
how each names the file, the line and the key path."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

KeyPath = tuple[str | int, ...]  # keys, and indexes into lists
KEY = "[key]"  # how pydantic marks a problem with a key rather than its value

_NAME_RULE = "use letters, digits, '.', '_' and '-', starting with a letter or digit"

# One sentence for each kind of problem. Fields: `shown` (the value, as `show` writes it),
# `input` (the value itself), `table` (what the format calls a mapping), `keys` (the keys a
# table takes), `items` (what a list holds), and the error's context.
PYDANTIC_SENTENCES: dict[str, str] = {  # for pydantic's own error types
    "model_type": "must be a {table}, got {shown}",
    "dict_type": "must be a {table}, got {shown}",
    "extra_forbidden": "unknown key (expected one of: {keys})",
    "invalid_key": "unknown key (expected one of: {keys})",
    "missing": "is required",
    "bool_type": "must be true or false, got {shown}",
    "int_type": "must be an integer, got {shown}",
    "float_type": "must be a number, got {shown}",
    "finite_number": "must be a finite number, got {shown}",
    "greater_than": "must be greater than {gt:g}, got {input!r}",
    "greater_than_equal": "must be at least {ge:g}, got {input!r}",
    "less_than_equal": "must be at most {le:.15g}, got {input!r}",
    "list_type": "must be a list of {items}, got {shown}",
    "string_type": "must be a string, got {shown}",
}
SCHEMA_SENTENCES: dict[str, str] = {  # for the rules the schema adds (`problem` raises them)
    "not_a_name": "{shown} is not a valid name: " + _NAME_RULE,
    "listed_twice": "{shown} is listed twice",
    "undeclared": "no {kind} named {shown} is declared ({kind}s: {declared})",
    "none_declared": "at least one {kind} must be declared",
    "no_pool_named": "must name at least one pool",
    "not_a_kind": "must be one of {kinds}, got {shown}",
    "not_a_device_id": "{shown} is not a valid device id",
    "gpus_twice": "give gpus or gpu_ids, not both",
    "not_a_duration": 'must be a duration like "90s", "10m", "1h30m" or "2d", or a number of '
                      "seconds, got {shown}",
    "zero_duration": "must be longer than 0, got {shown}",
    "time_limit_over_max": "must not be longer than the queue's max_time_limit, got {shown} "
                           "seconds",
    "slurm_only": 'only a pool of executor "slurm" takes this key',
    "kubernetes_only": 'only a pool of executor "kubernetes" takes this key',
    "exists_no_value": 'must be empty with operator "Exists", got {shown}',
    "equal_needs_key": 'is required with operator "Equal"',
    "seconds_no_execute": 'is taken only with effect "NoExecute"',
    "not_a_dns_name": "must be a DNS name (labels of lowercase letters, digits and '-', "
                      "joined by '.'), got {shown}",
    "not_an_address": 'must be HOST:PORT, like "trainyard.example.org:50051", got {shown}',
    "not_one_of": "must be one of {choices}, got {shown}",
    "not_a_dns_label": "must be a DNS label (lowercase letters, digits and '-', at most 63), "
                       "got {shown}",
    "not_a_resource": "must be one of {kinds}, got {shown}",
    "no_resource": "must name at least one resource kind",
    "not_a_label": "is not a valid label key and value: {shown}",
    "trainjob_runtime": "is required when the pool creates TrainJobs: the (Cluster)"
                        "TrainingRuntime they run against",
    "kueue_queue": 'is required with admission = "kueue": the LocalQueue its jobs go to',
    "not_a_namespace_template": 'must hold "{{team}}" and make a DNS label, like '
                                '"trainyard-{{team}}", got {shown}',
    "in_cluster_and_kubeconfig": "in-cluster credentials take no kubeconfig or context",
    "kueue_capacity": 'Kueue admits this pool\'s jobs (admission = "kueue"): its capacity '
                      "is its ClusterQueue's; declare none here",
    "kueue_quota": 'Kueue admits the jobs of pool {pool} (admission = "kueue"): quotas there '
                   "are its ClusterQueue's",
    "slurm_required": 'is required for a pool of executor "slurm"',
    "not_a_staging": 'must be "pull" or "shared", got {shown}',
    "no_max_jobs": "is required",
    "no_budget_limit": "must give gpu_hours, cpu_hours or both",
    "over_pool": "{amount} is more than the {limit} of pool {pool}",
    "over_pool_together": "the teams' quotas add up to {total} {unit} ({parts}), more than "
                          "the pool's {limit}",
}
_LIST_ITEMS = {"gpu_ids": "device ids"}  # what a list holds, by its key; otherwise names


class PolicyError(Exception):
    """A policy file that cannot be used; `problems` lists everything wrong with it."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Problem:
    path: KeyPath
    message: str
    line: int | None = None  # where it is written, when not where `path` is


def problem(kind: str, /, **context: object) -> PydanticCustomError:
    """One of the schema's own problems (a key of SCHEMA_SENTENCES), for a validator to raise."""
    assert kind in SCHEMA_SENTENCES, kind
    return PydanticCustomError(kind, kind, context)


def problem_at(loc: KeyPath, kind: str, value: object, /, **context: object) -> InitErrorDetails:
    """One of the schema's own problems with `value`, at `loc` inside what a validator checks."""
    return InitErrorDetails(type=problem(kind, **context), loc=loc, input=value)


def raise_all(found: Sequence[InitErrorDetails | ErrorDetails]) -> None:
    """Raise every problem at once: those a validator found, and those pydantic found below
    it (as `problems_of` lists them)."""
    if found:
        raise ValidationError.from_exception_data("policy", [_again(each) for each in found])


def problems_of(exc: ValidationError) -> list[ErrorDetails]:
    return exc.errors(include_url=False)


def _again(error: InitErrorDetails | ErrorDetails) -> InitErrorDetails:
    kind, context = error["type"], dict(error.get("ctx") or {})
    if isinstance(kind, str) and kind in SCHEMA_SENTENCES:
        return InitErrorDetails(type=problem(kind, **context), loc=error["loc"],
                                input=error["input"])
    return InitErrorDetails(type=kind, loc=error["loc"], input=error["input"], ctx=context)


def show(value: object, table_word: str = "table") -> str:
    if isinstance(value, str):
        shown = json.dumps(value, ensure_ascii=False)
        return shown if len(shown) <= 60 else shown[:56] + '..."'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return f"a {table_word}"
    return f"a {type(value).__name__}"


def describe(error: ErrorDetails, table_word: str,
             keys_at: Callable[[KeyPath], Iterable[str]]) -> Problem:
    """A pydantic error as the problem it reports: its key path, and the sentence of its kind."""
    loc = tuple(part for part in error["loc"] if part != KEY)
    kind, context = error["type"], dict(error.get("ctx") or {})
    if kind == "invalid_key":  # a key that is not a string, named as the parser read it
        loc = (*loc[:-1], str(error["input"]))
    template = PYDANTIC_SENTENCES.get(kind) or SCHEMA_SENTENCES.get(kind)
    if template is None:  # not one the schema produces; pydantic's own words then
        return Problem(loc, error["msg"])
    fields: dict[str, Any] = {
        **context, "input": error["input"], "shown": show(error["input"], table_word),
        "table": table_word, "items": _LIST_ITEMS.get(str(loc[-1]) if loc else "", "names")}
    if kind in ("extra_forbidden", "invalid_key"):
        fields["keys"] = ", ".join(keys_at(loc[:-1]))
    return Problem(loc, template.format(**fields))


def dotted(path: KeyPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text


def line_of(lines: Mapping[KeyPath, int], path: KeyPath) -> int | None:
    """Where a key path is written; a missing key or a list item has no line of its own,
    so its nearest written parent's."""
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def report(found: Iterable[Problem], source: str, lines: Mapping[KeyPath, int],
           in_file_order: bool = True) -> list[str]:
    """Each problem as "FILE, line N: a.b.c: sentence"; in file order, which is easier to
    work through than the order of checking."""
    placed = []
    for each in found:
        line = each.line or line_of(lines, each.path)
        where = f"{source}, line {line}" if line else source
        text = f"{where}: {dotted(each.path)}: {each.message}" if each.path else \
            f"{where}: {each.message}"
        placed.append((line or 0, text))
    if in_file_order:
        placed.sort(key=lambda item: item[0])
    return [text for _, text in placed]
