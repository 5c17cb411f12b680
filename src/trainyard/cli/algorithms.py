"""`trainyard algorithms ...`: register a version (an image of the server's engine, or a code
directory uploaded with the command that runs it), list, show with each version's runs and
models, alias, delete."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from trainyard.cli.common import ARGUMENTS, OutputOpt, ServerOpt, client_for, pairs, size
from trainyard.cli.models import aliases_text
from trainyard.cli.output import Output, console, print_json, styled_state
from trainyard.cli.runs import short
from trainyard.client import Resources

algorithms_app = typer.Typer(help="Algorithms: registered, versioned training code that jobs "
                             "name by handle (--algorithm NAME[:VERSION|@ALIAS]).",
                             no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(help="The algorithm's name.")]
# The request fields the register command takes under other names.
REGISTER_PARAMS = {**ARGUMENTS, "code": "--code", "resources.cpus": "--cpus",
                   "resources.gpus": "--gpus", "chunk": "--code"}


def algorithm_version(text: str) -> tuple[str, int]:
    name, sep, version = text.partition(":")
    if not sep or not name or not version.isdigit() or int(version) < 1:
        raise typer.BadParameter(f"{text[:80]!r} is not NAME:VERSION (a version from 1)",
                                 param_hint="NAME:VERSION")
    return name, int(version)


def program_text(v: dict[str, Any]) -> str:
    command = v["command"] if len(v["command"]) <= 40 else v["command"][:37] + "..."
    return command or "(the image's own)"


@algorithms_app.command("register")
def algorithms_register(
    name: NameArg,
    image: Annotated[str, typer.Option(
        help="An image of the server's container engine (pinned by its id now); with "
             "--code, the image the code runs in on container backends.")] = "",
    code: Annotated[Path | None, typer.Option(
        help="A local code directory to upload; it becomes the job's working directory, "
             "read-only, at $CODE_PATH.", file_okay=False)] = None,
    command: Annotated[str, typer.Option(
        help="The command that runs it (required with --code, run in the directory; with "
             "--image alone it replaces the image's command).")] = "",
    param: Annotated[list[str] | None, typer.Option(
        "--param", "--hyperparameter", "-p",
        help="A default hyperparameter KEY=VALUE (repeatable); a job's own win.")] = None,
    cpus: Annotated[float, typer.Option(help="Default CPU cores [default: none].")] = 0.0,
    memory: Annotated[str, typer.Option(
        help='Default memory: "512M", "4G", "4Gi", or a number of MiB [default: none].')
    ] = "",
    gpus: Annotated[int, typer.Option(help="Default GPUs [default: none].")] = 0,
    description: Annotated[str, typer.Option(help="What it is, for people.")] = "",
    git_commit: Annotated[str, typer.Option(help="The code's git commit.")] = "",
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Register the next version of an algorithm, from --image or from --code DIR (with an
    optional --image it runs in). The same as the latest version in every field: nothing
    new is made, and that version is printed."""
    if not image and code is None:
        raise typer.BadParameter("give --image IMAGE, or --code DIR (with an optional "
                                 "--image it runs in)", param_hint="--image / --code")
    resources = Resources(cpus=cpus, memory_mb=size(memory, "--memory") if memory else 0,
                          gpus=gpus)
    with client_for(server, REGISTER_PARAMS) as client:
        found = client.register_algorithm(
            name, image=image, code_dir=code, command=command,
            hyperparameters=pairs(param or [], "--param"), resources=resources,
            description=description, git_commit=git_commit)
    if output is Output.json:
        print_json(found)
        return
    handle = f"{escape(found['name'])}:{found['version']}"
    what = (f"code {found['code_hash'][:12]} ({found['code_file_count']} files, "
            f"{found['code_size_bytes']} bytes)" if found["source"] == "code" else
            f"image {escape(found['image'])}")
    if found["image_id"]:
        what += f", image id {short(found['image_id'])}"
    if found["created"]:
        console.print(f"registered {handle}: {what}", highlight=False)
    else:
        console.print(f"{handle} is the latest version and the same in every field; nothing "
                      f"new registered: {what}", highlight=False)


@algorithms_app.command("list")
def algorithms_list(server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """Every algorithm: how many versions, the latest, its aliases."""
    with client_for(server, ARGUMENTS) as client:
        found = client.list_algorithms()
    if output is Output.json:
        print_json({"algorithms": found})
        return
    table = Table("ALGORITHM", "VERSIONS", "LATEST", "ALIASES", "UPDATED", "DESCRIPTION")
    for a in found:
        aliases = " ".join(f"@{k}={v}" for k, v in sorted(a["aliases"].items()))
        table.add_row(escape(a["name"]), str(a["versions"]), str(a["latest_version"]),
                      escape(aliases), (a["updated_at"] or "")[:19],
                      escape(a["description"][:60]))
    console.print(table)


@algorithms_app.command("show")
def algorithms_show(name: NameArg, server: ServerOpt = None,
                    output: OutputOpt = Output.text) -> None:
    """An algorithm's versions (source, image id, code hash, command, aliases), each
    version's runs with the model version each made, and the history of its aliases."""
    with client_for(server, ARGUMENTS) as client:
        found = client.get_algorithm(name)
    if output is Output.json:
        print_json(found)
        return
    table = Table("VERSION", "SOURCE", "IMAGE ID", "CODE", "COMMAND", "JOBS", "ALIASES",
                  "CREATED", title=f"algorithm {escape(found['name'])}")
    for v in found["versions"]:
        table.add_row(str(v["version"]), v["source"],
                      short(v["image_id"]) if v["image_id"] else "-",
                      v["code_hash"][:12] or "-", escape(program_text(v)), str(v["job_count"]),
                      escape(aliases_text(v["aliases"])), (v["created_at"] or "")[:19])
    console.print(table)
    for v in found["versions"]:
        if not v["runs"]:
            continue
        runs = Table("RUN", "STATE", "OWNER", "MODEL", "ENDED",
                     title=f"runs of {escape(found['name'])}:{v['version']}")
        for r in v["runs"]:
            model = r["model"]
            runs.add_row(escape(r["run_id"]), styled_state(r["state"] or ""), escape(r["owner"]),
                         escape(f"{model['model_name']}:{model['version']}") if model else "-",
                         (r["ended_at"] or "")[:19])
        console.print(runs)
    for change in found["alias_history"]:
        before = f"from {change['from_version']} " if change["from_version"] else "(new) "
        console.print(f"[dim]{change['time']}[/] @{escape(change['alias'])} {before}to "
                      f"{change['to_version']} by {escape(change['actor'])}", highlight=False)


@algorithms_app.command("alias")
def algorithms_alias(
    name: NameArg,
    version: Annotated[int, typer.Argument(min=1, help="The version the alias names.")],
    alias: Annotated[str, typer.Argument(help="The alias, e.g. production.")],
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Point an alias at a version (atomic; every move is kept in the algorithm's history).
    Jobs already submitted keep the version they were pinned to."""
    with client_for(server, ARGUMENTS) as client:
        found = client.set_algorithm_alias(name, alias, version)
    if output is Output.json:
        print_json(found)
        return
    before = f" (was {found['previous_version']})" if found["previous_version"] else " (new)"
    console.print(f"{escape(found['name'])}@{escape(found['alias'])} -> version "
                  f"{found['version']}{before}", highlight=False)


@algorithms_app.command("delete")
def algorithms_delete(
    algorithm: Annotated[str, typer.Argument(metavar="NAME:VERSION",
                                             help="An algorithm version.")],
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Delete a version (and its code directory, unless another version shares it).
    Refused, naming them, while jobs are pinned to it."""
    name, version = algorithm_version(algorithm)
    with client_for(server, ARGUMENTS) as client:
        found = client.delete_algorithm(name, version)
    if output is Output.json:
        print_json({"name": found["name"], "version": found["version"], "deleted": True})
    else:
        console.print(f"deleted {escape(found['name'])}:{found['version']}", highlight=False)
