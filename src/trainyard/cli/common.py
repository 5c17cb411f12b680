"""What every client command shares: where the server is, how output is printed, and how
a refused call ends the command."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Annotated

import typer
from rich.markup import escape

from trainyard.cli.output import Output, errors
from trainyard.client import Client, TrainyardError
from trainyard.client.errors import InvalidValue
from trainyard.quantities import DURATION_HINT, SIZE_HINT, duration_seconds, size_mib

ServerOpt = Annotated[str | None, typer.Option(
    "--server", envvar="TRAINYARD_SERVER", help="HOST:PORT of the server, "
    "or several servers over one database separated by commas (a:50051,b:50051): a call "
    "moves to the next one while a server is unavailable [default: 127.0.0.1:50051].")]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="text or json.")]


# The parameters not named after their request field; any other field "page_token" is the
# option "--page-token".
OPTION_FOR_FIELD = {"memory_mb": "--memory", "client_request_id": "--request-id",
                    "hyperparameters": "--param", "labels": "--label", "page_size": "--limit",
                    "expires_in_seconds": "--expires-in", "metrics": "--metric",
                    "states": "--state", "sort_metric": "--sort", "descending": "--desc",
                    "include_series": "--series", "job_id": "JOB_ID", "run_id": "RUN_ID",
                    "run_ids": "RUN_IDS", "version": "VERSION", "users": "--user",
                    "teams": "--team", "parameters.min": "--range",
                    "parameters.max": "--range", "parameters.values": "--grid"}
# Where a command takes its names as arguments (admin, models, datasets).
ARGUMENTS = {"name": "NAME", "user": "USER", "team": "TEAM", "id": "ID", "queue": "QUEUE",
             "model": "NAME", "path": "PATH", "alias": "ALIAS"}


def option_for(field: str, params: Mapping[str, str] | None = None) -> str:
    """The parameter a request field comes from: "resources.memory_mb" is "--memory",
    "labels.x" is "--label", "job_id" is JOB_ID; `params` holds a command's own names
    (field to parameter)."""
    path = field.partition(" ")[0]
    named = {**OPTION_FOR_FIELD, **(params or {})}
    parts = path.split(".")
    for candidate in (path, *parts):  # a map's entry ("labels.k") is its map's option
        if candidate in named:
            return named[candidate]
    return f"--{parts[-1].replace('_', '-')}"


@contextlib.contextmanager
def client_for(server: str | None, params: Mapping[str, str] | None = None
               ) -> Iterator[Client]:
    """A client whose errors end the command with a sentence and exit code 1; a value the
    SDK refuses before sending it is a bad option value, named as such (exit code 2), by
    `params` where the command's parameter is not named after its field."""
    try:
        with Client(server) as client:
            yield client
    except InvalidValue as exc:
        raise typer.BadParameter(exc.problem,
                                 param_hint=option_for(exc.field, params)) from None
    except TrainyardError as exc:
        errors.print(f"[red]error[/] ({exc.code}): {escape(exc.message)}", highlight=False)
        raise typer.Exit(1) from None


def pairs(values: list[str], option: str) -> dict[str, str]:
    """KEY=VALUE options as a mapping; a bad one is refused naming the option."""
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=option)
        out[key] = value
    return out


def duration(text: str, option: str, *, zero: bool = False) -> float:
    """A duration option ("90s", "2h", "1d", or seconds) in seconds, above zero (or zero, where
    `zero` says it means "none"); a bad one is refused naming the option."""
    seconds = duration_seconds(text.strip())
    if seconds is None:
        raise typer.BadParameter(f"{text!r} is not {DURATION_HINT}", param_hint=option)
    if seconds <= 0 and not (zero and seconds == 0):
        raise typer.BadParameter("must be longer than zero", param_hint=option)
    return seconds


def size(text: str, option: str) -> int:
    """A size option ("512M", "4G", "4Gi", or a number of MiB) in MiB; a bad one is refused
    naming the option."""
    mib = size_mib(text)
    if mib is None:
        raise typer.BadParameter(f"{text[:40]!r} is not {SIZE_HINT}", param_hint=option)
    return mib
