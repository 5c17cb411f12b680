"""`trainyard models ...` (versions, aliases, download, lineage) and the lineage and
deletion of dataset versions (`trainyard datasets lineage|delete`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from trainyard.cli.common import ARGUMENTS, OutputOpt, ServerOpt, client_for
from trainyard.cli.output import Output, console, print_json
from trainyard.cli.runs import code_text, short

models_app = typer.Typer(help="Models: versions of each successful run's files, aliases, "
                         "download and lineage.", no_args_is_help=True)

RefArg = Annotated[str, typer.Argument(help="NAME (its latest version), NAME:VERSION or "
                                            "NAME@ALIAS.")]


def dataset_ref(text: str) -> tuple[str, str]:
    name, sep, version = text.partition(":")
    if not sep or not name or not version:
        raise typer.BadParameter("expected NAME:VERSION", param_hint="NAME:VERSION")
    return name, version


def aliases_text(aliases: list[str]) -> str:
    return " ".join(f"@{a}" for a in aliases)


@models_app.command("list")
def models_list(server: ServerOpt = None, output: OutputOpt = Output.text) -> None:
    """Every model: how many versions, the latest, and its aliases."""
    with client_for(server, ARGUMENTS) as client:
        found = client.list_models()
    if output is Output.json:
        print_json({"models": found})
        return
    table = Table("MODEL", "VERSIONS", "LATEST", "ALIASES", "UPDATED")
    for m in found:
        aliases = " ".join(f"@{a}={v}" for a, v in sorted(m["aliases"].items()))
        table.add_row(escape(m["name"]), str(m["versions"]), str(m["latest_version"]),
                      escape(aliases), (m["updated_at"] or "")[:19])
    console.print(table)


@models_app.command("show")
def models_show(
    name: Annotated[str, typer.Argument(help="The model's name.")],
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """A model's versions, each with its run, content hash and aliases, and the history of
    its aliases."""
    with client_for(server, ARGUMENTS) as client:
        found = client.get_model(name)
    if output is Output.json:
        print_json(found)
        return
    table = Table("VERSION", "RUN", "CONTENT", "FILES", "BYTES", "DATASET", "CREATED", "ALIASES",
                  title=f"model {escape(found['name'])}")
    for v in found["versions"]:
        ds = v["dataset"]
        table.add_row(str(v["version"]), escape(v["run_id"]), v["content_hash"][:12],
                      str(v["file_count"]), str(v["size_bytes"]),
                      escape(f"{ds['name']}:{ds['version'][:12]}" if ds else "-"),
                      (v["created_at"] or "")[:19], escape(aliases_text(v["aliases"])))
    console.print(table)
    for change in found["alias_history"]:
        before = f"from {change['from_version']} " if change["from_version"] else "(new) "
        console.print(f"[dim]{change['time']}[/] @{escape(change['alias'])} {before}to "
                      f"{change['to_version']} by {escape(change['actor'])}", highlight=False)


@models_app.command("alias")
def models_alias(
    name: Annotated[str, typer.Argument(help="The model's name.")],
    version: Annotated[int, typer.Argument(min=1, help="The version the alias names.")],
    alias: Annotated[str, typer.Argument(help="The alias, e.g. production.")],
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Point an alias at a version (atomic; every move is kept in the model's history)."""
    with client_for(server, ARGUMENTS) as client:
        found = client.set_model_alias(name, alias, version)
    if output is Output.json:
        print_json(found)
        return
    before = f" (was {found['previous_version']})" if found["previous_version"] else " (new)"
    console.print(f"{escape(found['name'])}@{escape(found['alias'])} -> version "
                  f"{found['version']}{before}", highlight=False)


@models_app.command("download")
def models_download(
    model: RefArg,
    dest: Annotated[Path, typer.Argument(help="A new (or empty) directory to put the files "
                                              "in.")],
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Download a version's files. Every file's sha256 and the version's content hash are
    checked before the files are put in place; on a mismatch nothing is left in DIR."""
    with client_for(server, ARGUMENTS) as client:
        found = client.download_model(model, dest)
    if output is Output.json:
        print_json(found)
        return
    m = found["model"]
    console.print(f"{escape(m['model_name'])}:{m['version']} ({len(found['files'])} files, "
                  f"{m['size_bytes']} bytes, content sha256:{m['content_hash'][:12]}, "
                  f"verified) -> {escape(found['path'])}", highlight=False)


def algorithm_text(ref: dict[str, Any], version: dict[str, Any] | None, code_hash: str) -> str:
    """NAME:VERSION and what it is: its image id or its code directory's hash; "(deleted)"
    for a version no longer registered."""
    handle = f"{ref['name']}:{ref['version']}"
    if version is None:
        return f"{handle} (no longer registered)"
    what = [f"code {code_hash[:12]}"] if code_hash else []
    if version.get("image_id"):
        what.append(f"image {version['image_id'][:19]}")
    return f"{handle} ({', '.join(what)})" if what else handle


def render_lineage(found: dict[str, Any]) -> None:
    m = found["model"]
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("model", f"{escape(m['model_name'])}:{m['version']} "
                           f"{escape(aliases_text(m['aliases']))} sha256:{m['content_hash']}")
    run = found["run"]
    state = f" ({run['state']})" if run else " (not a run you may see)"
    table.add_row("run", f"{escape(found['run_id'])}{state}, owner {escape(found['owner'])}")
    ds = found["dataset"]
    table.add_row("dataset", escape(f"{ds['name']}:{ds['version']} ({ds['file_count']} files, "
                                    f"{ds['size_bytes']} bytes)") if ds else "-")
    code = found["code"]
    if code.get("algorithm"):
        table.add_row("algorithm", escape(algorithm_text(code["algorithm"], found.get(
            "algorithm"), code.get("code_hash", ""))))
    table.add_row("code", escape(code_text(code)))
    if code["image_id"]:
        table.add_row("image id", escape(code["image_id"]))
    if found["hyperparameters"]:
        table.add_row("params", escape(" ".join(f"{k}={v}" for k, v in
                                                sorted(found["hyperparameters"].items()))))
    if run:
        table.add_row("metrics", escape(" ".join(f"{k}={v['value']:.4g}" for k, v in
                                                 sorted(run["metrics"].items()))))
        if run["reproduced_from"]:
            table.add_row("reproduces", escape(run["reproduced_from"]))
    console.print(table)


@models_app.command("lineage")
def models_lineage(model: RefArg, server: ServerOpt = None,
                   output: OutputOpt = Output.text) -> None:
    """From a model version to the run that made it, its dataset version and its code."""
    with client_for(server, ARGUMENTS) as client:
        found = client.model_lineage(model)
    if output is Output.json:
        print_json(found)
    else:
        render_lineage(found)


# --- datasets: registered in main.py on `trainyard datasets` ----------------------------------

def datasets_lineage(
    dataset: Annotated[str, typer.Argument(metavar="NAME:VERSION",
                                           help="A dataset version.")],
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """From a dataset version to every model trained on it, and the runs that used it."""
    name, version = dataset_ref(dataset)
    with client_for(server, ARGUMENTS) as client:
        found = client.dataset_lineage(name, version)
    if output is Output.json:
        print_json(found)
        return
    ds = found["dataset"]
    console.print(f"dataset {escape(ds['name'])}:{ds['version']} ({ds['file_count']} files, "
                  f"{ds['size_bytes']} bytes), used by {ds['run_count']} run(s)"
                  f"{': ' + escape(', '.join(ds['run_ids'])) if ds['run_ids'] else ''}",
                  highlight=False)
    table = Table("MODEL", "VERSION", "RUN", "CONTENT", "ALIASES", "CREATED",
                  title="models trained on it")
    for m in found["models"]:
        table.add_row(escape(m["model_name"]), str(m["version"]), escape(m["run_id"]),
                      short(m["content_hash"]), escape(aliases_text(m["aliases"])),
                      (m["created_at"] or "")[:19])
    console.print(table)


def datasets_delete(
    dataset: Annotated[str, typer.Argument(metavar="NAME:VERSION",
                                           help="A dataset version.")],
    server: ServerOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Delete a dataset version and its files (admins). Refused, with the runs, while runs
    use it."""
    name, version = dataset_ref(dataset)
    with client_for(server, ARGUMENTS) as client:
        found = client.delete_dataset(name, version)
    if output is Output.json:
        print_json({"name": found["name"], "version": found["version"], "deleted": True})
    else:
        console.print(f"deleted {escape(found['name'])}:{found['version']}", highlight=False)
