"""`trainyard datasets ...`: register and list immutable dataset versions (lineage and
delete live beside the models, in cli/models.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trainyard.cli.common import ARGUMENTS, OutputOpt, ServerOpt, client_for
from trainyard.cli.models import datasets_delete, datasets_lineage
from trainyard.cli.output import Output, console, print_json, render_datasets

datasets_app = typer.Typer(help="Register and list immutable dataset versions.",
                           no_args_is_help=True)


def datasets_register(
    name: str,
    path: Annotated[Path, typer.Argument(help="Directory to store as a new version.")],
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Store a directory as an immutable, content-addressed version; print its hash."""
    with client_for(server, ARGUMENTS) as client:
        ds = client.register_dataset(name, str(path))
    if output is Output.json:
        print_json({"name": ds.name, "version": ds.version, "size_bytes": ds.size_bytes,
                    "file_count": ds.file_count, "created": ds.created})
    else:
        console.print(ds.version)


def datasets_list(
    name: Annotated[str, typer.Argument(help="Only this dataset.")] = "",
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """List registered dataset versions with their size, files, creation time and the runs
    that used them."""
    with client_for(server, ARGUMENTS) as client:
        found = client.list_datasets(name)
    if output is Output.json:
        print_json({"datasets": [d.__dict__ for d in found]})
    else:
        render_datasets(found)


datasets_app.command("register")(datasets_register)
datasets_app.command("list")(datasets_list)
datasets_app.command("lineage")(datasets_lineage)
datasets_app.command("delete")(datasets_delete)
