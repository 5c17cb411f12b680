"""`trainyard images ...`: build and list images straight in the local Docker engine, like
the docker CLI. Through trainyard.services.images, imported inside each command."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from trainyard.cli.common import OutputOpt
from trainyard.cli.output import Output, console, errors, print_json, render_images

images_app = typer.Typer(help="Build and list container images in the local Docker engine "
                         "(no registry needed).", no_args_is_help=True)


@contextlib.contextmanager
def _image_errors() -> Iterator[None]:
    import docker.errors
    import requests.exceptions

    from trainyard.services.images import ImageError

    try:
        yield
    except ImageError as exc:
        errors.print(f"[red]error[/]: {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    except (docker.errors.DockerException, requests.exceptions.RequestException,
            OSError) as exc:
        errors.print(f"[red]error[/]: the Docker engine failed: {escape(str(exc))}",
                     highlight=False)
        raise typer.Exit(1) from None


def _say(line: str) -> None:
    errors.print(escape(line), highlight=False)


@images_app.command("build-base")
def images_build_base(
    mirror: Annotated[str, typer.Option(help="Debian mirror debootstrap reads.")] =
        "http://deb.debian.org/debian",
    suite: Annotated[str, typer.Option(help="Debian release.")] = "bookworm",
    cache_dir: Annotated[Path | None, typer.Option(
        envvar="TRAINYARD_IMAGE_CACHE",
        help="Where root file systems are cached [default: ~/.cache/trainyard/images].")] = None,
    output: OutputOpt = Output.text,
) -> None:
    """Build the base image (Debian with python3, numpy, scikit-learn and trainyard.runtime)
    with debootstrap, tagged trainyard/base:latest. Cached by its inputs."""
    from trainyard.services.images import BaseInputs, build_base, engine

    with _image_errors():
        built = build_base(engine(), BaseInputs(suite=suite, mirror=mirror),
                           cache_dir or Path.home() / ".cache" / "trainyard" / "images",
                           say=_say)
    if output is Output.json:
        print_json({"tag": built.tag, "image_id": built.image_id, "cached": built.cached})
    else:
        note = " (cached)" if built.cached else ""
        console.print(f"{built.tag} {built.image_id[7:19]}{note}", highlight=False)


@images_app.command("build")
def images_build(
    context: Annotated[Path, typer.Argument(help="Directory holding a Dockerfile.")],
    tag: Annotated[str, typer.Option(help="Image name, e.g. trainyard/demo-trainer.")],
    output: OutputOpt = Output.text,
) -> None:
    """Build a trainer image from DIR/Dockerfile, offline (FROM a local image)."""
    from trainyard.domain.errors import InvalidArgument
    from trainyard.domain.spec import JobSpec, validate_spec
    from trainyard.services.images import build_image, engine

    try:
        validate_spec(JobSpec(name="image", image=tag))
    except InvalidArgument as exc:
        raise typer.BadParameter(exc.problem, param_hint="--tag") from None
    if not context.is_dir():
        raise typer.BadParameter(f"{context} is not a directory", param_hint="DIR")
    with _image_errors():
        built = build_image(engine(), context, tag,
                            say=_say if output is Output.text else lambda line: None)
    if output is Output.json:
        print_json({"tag": built.tag, "image_id": built.image_id})
    else:
        console.print(f"{built.tag} {built.image_id[7:19]}", highlight=False)


@images_app.command("list")
def images_list(output: OutputOpt = Output.text) -> None:
    """List the images in the local Docker engine."""
    from dataclasses import asdict

    from trainyard.services.images import engine, list_images

    with _image_errors():
        images = list_images(engine())
    if output is Output.json:
        print_json([asdict(i) for i in images])
    else:
        render_images(images)
