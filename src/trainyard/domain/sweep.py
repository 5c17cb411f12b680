"""Sweeps: a grid or random search over hyperparameters, expanded into job specs. Pure and
deterministic: the same request and seed give the same trials."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, replace

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.spec import ENV_NAME_RE, JobSpec

MAX_TRIALS = 10_000


@dataclass(frozen=True)
class Parameter:
    name: str
    values: tuple[str, ...] = ()  # grid values, or random choices
    low: float = 0.0  # random, without values: the range
    high: float = 0.0
    log: bool = False
    integer: bool = False


def expand(template: JobSpec, parameters: list[Parameter], *, search: str, trials: int,
           seed: int) -> list[JobSpec]:
    """One spec per trial, named <template name>-<n>, with the trial's hyperparameters on top
    of the template's."""
    if not parameters:
        raise InvalidArgument("parameters", "a sweep needs at least one parameter")
    names = [p.name for p in parameters]
    if len(set(names)) != len(names):
        raise InvalidArgument("parameters", "each parameter may be given once")
    for p in parameters:
        _check(p, search)
    if search in ("", "grid"):
        combos = list(itertools.islice(itertools.product(*(p.values for p in parameters)),
                                       MAX_TRIALS + 1))
    elif search == "random":
        if not 1 <= trials <= MAX_TRIALS:
            raise InvalidArgument("trials", f"must be between 1 and {MAX_TRIALS}")
        rng = random.Random(seed)
        combos = [tuple(_draw(p, rng) for p in parameters) for _ in range(trials)]
    else:
        raise InvalidArgument("search", f"must be 'grid' or 'random', got {search!r}")
    if len(combos) > MAX_TRIALS:
        raise InvalidArgument("parameters", f"the grid has more than {MAX_TRIALS} points")
    return [replace(template, name=f"{template.name[:120]}-{i + 1}",
                    hyperparameters={**template.hyperparameters,
                                     **dict(zip(names, combo, strict=True))})
            for i, combo in enumerate(combos)]


def _check(p: Parameter, search: str) -> None:
    field = f"parameters.{p.name}"
    if not ENV_NAME_RE.match(p.name):
        raise InvalidArgument(field, "is not a valid environment variable name")
    if search in ("", "grid") and not p.values:
        raise InvalidArgument(field, "a grid parameter needs values")
    if not p.values:
        if not (math.isfinite(p.low) and math.isfinite(p.high) and p.low < p.high):
            raise InvalidArgument(field, "needs values, or a range with min < max")
        if p.log and p.low <= 0:
            raise InvalidArgument(field, "a log range must be positive")


def _draw(p: Parameter, rng: random.Random) -> str:
    if p.values:
        return rng.choice(p.values)
    if p.log:
        value = math.exp(rng.uniform(math.log(p.low), math.log(p.high)))
    else:
        value = rng.uniform(p.low, p.high)
    return str(round(value)) if p.integer else f"{value:.6g}"
