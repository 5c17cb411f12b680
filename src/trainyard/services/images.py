"""Container images without a registry: a base image made by debootstrap, trainer images
built on top of it, and a listing of what the local engine holds."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors

from trainyard.executors.runtime_bundle import runtime_sources

BASE_REPOSITORY = "trainyard/base"
BASE_IMAGE = f"{BASE_REPOSITORY}:latest"  # what trainer Dockerfiles start FROM
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_PACKAGES = ("python3", "python3-numpy", "python3-sklearn")
INPUTS_LABEL = "org.trainyard.base-inputs"
ENV_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ImageError(Exception):
    """Building or listing images failed; the message is for the user."""


@dataclass(frozen=True)
class BaseInputs:
    """Everything the base image is made from: equal inputs give an equal image."""

    suite: str = "bookworm"
    mirror: str = DEFAULT_MIRROR
    packages: tuple[str, ...] = DEFAULT_PACKAGES
    # (file name, text) of each module of trainyard.runtime, sorted by name
    runtime_files: tuple[tuple[str, str], ...] = field(default_factory=lambda: runtime_sources())

    def digest(self) -> str:
        files = {name: hashlib.sha256(text.encode()).hexdigest()
                 for name, text in self.runtime_files}
        blob = json.dumps({"suite": self.suite, "mirror": self.mirror,
                           "packages": sorted(self.packages), "runtime": files},
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    @property
    def tag(self) -> str:
        return f"{BASE_REPOSITORY}:{self.digest()[:16]}"


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    image_id: str
    cached: bool  # True when nothing had to be built


@dataclass(frozen=True)
class ImageInfo:
    tags: tuple[str, ...]
    image_id: str
    size_bytes: int
    created: str


def engine() -> docker.DockerClient:
    """The local Docker engine, or an ImageError that says how to start one."""
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except docker.errors.DockerException as exc:
        raise ImageError(f"cannot reach the Docker engine ({exc}); start it with "
                         "'dockerd --bridge=none --iptables=false --ip-masq=false &'") from exc
    return client


def build_base(client: docker.DockerClient, inputs: BaseInputs, cache_dir: Path,
               say: Callable[[str], None] = lambda line: None) -> BuiltImage:
    """The base image for these inputs: the engine's copy if it has one, else imported from
    the cached root file system, else made by debootstrap first."""
    tag = inputs.tag
    existing = _image(client, tag)
    if existing is not None:
        _tag_latest(existing)
        return BuiltImage(tag, existing.id, cached=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tarball = cache_dir / f"base-{inputs.digest()[:16]}.tar"
    if not tarball.exists():
        _debootstrap_tarball(inputs, tarball, say)
    say(f"importing {tarball} as {tag}")
    repository, version = tag.split(":")
    changes = [f"ENV PATH={ENV_PATH}", "ENV LANG=C.UTF-8", "ENV PYTHONDONTWRITEBYTECODE=1",
               'CMD ["/bin/sh"]', f"LABEL {INPUTS_LABEL}={inputs.digest()}"]
    try:
        client.api.import_image_from_file(str(tarball), repository=repository, tag=version,
                                          changes=changes)
    except docker.errors.APIError as exc:
        raise ImageError(f"importing the base image failed: {exc.explanation or exc}") from exc
    image = _image(client, tag)
    if image is None:
        raise ImageError(f"the engine did not keep the imported image {tag}")
    _tag_latest(image)
    return BuiltImage(tag, image.id, cached=False)


def _debootstrap_tarball(inputs: BaseInputs, tarball: Path,
                         say: Callable[[str], None]) -> None:
    if shutil.which("debootstrap") is None:
        raise ImageError("debootstrap is not installed: apt-get install -y debootstrap")
    with tempfile.TemporaryDirectory(dir=tarball.parent, prefix="rootfs-") as tmp:
        root = Path(tmp) / "root"
        say(f"debootstrap {inputs.suite} with {', '.join(inputs.packages)} (a few minutes)")
        cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(inputs.packages)}",
               inputs.suite, str(root), inputs.mirror]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
            raise ImageError(f"debootstrap failed with code {done.returncode}:\n{tail}")
        _slim(root)
        _install_runtime(root, inputs.runtime_files)
        partial = tarball.with_suffix(".partial")
        done = subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(partial),
                               "."], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ImageError(f"packing the root file system failed: {done.stderr.strip()}")
        os.replace(partial, tarball)  # a crash mid-way leaves no half tarball in the cache


def _slim(root: Path) -> None:
    """Drop what only the build needed: downloaded packages and package lists."""
    for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
        directory = root / sub
        for entry in directory.glob("*"):
            if entry.is_file() and not entry.is_symlink():
                entry.unlink()


def _install_runtime(root: Path, files: tuple[tuple[str, str], ...]) -> None:
    """Make `import trainyard.runtime` work for the image's own python3."""
    sites = [d for d in (root / "usr/lib").glob("python3.*")
             if d.is_dir() and d.name[len("python3."):].isdigit()]
    if not sites:
        raise ImageError("the base image has no python3 under /usr/lib")
    for site in sites:
        package = root / "usr/local/lib" / site.name / "dist-packages" / "trainyard"
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text('"""Trainyard\'s helper for training code."""\n')
        modules = package / "runtime"
        modules.mkdir(exist_ok=True)
        for name, text in files:
            (modules / name).write_text(text)


def build_image(client: docker.DockerClient, context: Path, tag: str,
                say: Callable[[str], None] = lambda line: None) -> BuiltImage:
    """Build context/Dockerfile as tag, with no network and no pull: FROM must be local."""
    if not (context / "Dockerfile").is_file():
        raise ImageError(f"{context} holds no Dockerfile")
    try:
        for line in _build_stream(client, context, tag):
            say(line)
    except docker.errors.BuildError as exc:
        raise ImageError(f"building {tag} failed: {exc.msg}") from exc
    except docker.errors.APIError as exc:
        raise ImageError(f"building {tag} failed: {exc.explanation or exc}") from exc
    image = _image(client, tag)
    if image is None:
        raise ImageError(f"the engine did not keep the built image {tag}")
    return BuiltImage(tag, image.id, cached=False)


def _build_stream(client: docker.DockerClient, context: Path, tag: str) -> Iterator[str]:
    stream = client.api.build(path=str(context), tag=tag, rm=True, forcerm=True, pull=False,
                              network_mode="none", decode=True)
    for chunk in stream:
        if "error" in chunk:
            raise docker.errors.BuildError(chunk["error"].strip(), [])
        text = chunk.get("stream", "").rstrip()
        if text:
            yield text


def list_images(client: docker.DockerClient) -> list[ImageInfo]:
    infos = []
    for image in client.images.list():
        attrs = image.attrs
        infos.append(ImageInfo(tags=tuple(image.tags), image_id=image.id,
                               size_bytes=int(attrs.get("Size", 0)),
                               created=str(attrs.get("Created", ""))))
    return sorted(infos, key=lambda i: (i.tags or ("~",))[0])


def _image(client: docker.DockerClient, ref: str) -> docker.models.images.Image | None:
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def _tag_latest(image: docker.models.images.Image) -> None:
    if BASE_IMAGE not in image.tags:
        image.tag(BASE_REPOSITORY, "latest")
