"""The building blocks of the policy file's tables: strict tables whose unknown keys are
errors, numbers with their bounds, durations, and optional values that may not be null."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticKnownError
from pydantic_core.core_schema import ErrorType

from trainyard.quantities import duration_seconds
from trainyard.services.policy_file.problems import problem


def not_null(error: ErrorType) -> BeforeValidator:
    """Left out, an optional value is None; written as null (YAML's `~`, or nothing at all),
    it is a value of the wrong type."""
    def refuse(value: object) -> object:
        if value is None:
            raise PydanticKnownError(error)
        return value
    return BeforeValidator(refuse)


def seconds(positive: bool) -> BeforeValidator:
    """A duration string ("90s", "1h30m") as seconds; a number is already seconds, and is
    checked as a number."""
    def parse(value: object) -> object:
        if not isinstance(value, str):
            return value
        seconds = duration_seconds(value, bare_number=False)
        if seconds is None:
            raise problem("not_a_duration")
        if positive and seconds == 0:
            raise problem("zero_duration")
        return seconds
    return BeforeValidator(parse)


def one_of(choices: tuple[str, ...]) -> BeforeValidator:
    """A string that must be one of `choices`, spelled exactly."""
    def check(value: object) -> object:
        if isinstance(value, str) and value not in choices:
            raise problem("not_one_of", choices=", ".join(f'"{c}"' for c in choices))
        return value
    return BeforeValidator(check)


PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveNumber = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeNumber = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    # The keys as the documentation lists them, for "unknown key" messages; fields are
    # declared in the order they are checked.
    KEYS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def documented_keys(cls) -> tuple[str, ...]:
        return cls.KEYS or tuple(cls.model_fields)
