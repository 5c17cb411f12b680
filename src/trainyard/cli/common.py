"""What every client command shares: where the server is, how output is printed, and how
a refused call ends the command."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated

import typer
from rich.markup import escape

from trainyard.cli.output import Output, errors
from trainyard.client import Client, TrainyardError
from trainyard.domain.quantities import DURATION_HINT, duration_seconds

ServerOpt = Annotated[str | None, typer.Option(
    "--server", envvar="TRAINYARD_SERVER", help="HOST:PORT of the server, "
    "or several servers over one database separated by commas (a:50051,b:50051): a call "
    "moves to the next one while a server is unavailable [default: 127.0.0.1:50051].")]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="text or json.")]


@contextlib.contextmanager
def client_for(server: str | None) -> Iterator[Client]:
    """A client whose errors end the command with a sentence and exit code 1."""
    try:
        with Client(server) as client:
            yield client
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


def duration(text: str, option: str) -> float:
    """A duration option ("90s", "2h", "1d", or seconds) in seconds, above zero; a bad one
    is refused naming the option."""
    seconds = duration_seconds(text.strip())
    if seconds is None:
        raise typer.BadParameter(f"{text!r} is not {DURATION_HINT}", param_hint=option)
    if seconds <= 0:
        raise typer.BadParameter("must be longer than zero", param_hint=option)
    return seconds
