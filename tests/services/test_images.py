"""Images without a registry: the base image's cache key, builds, listing, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.dockerenv import TRAINER_IMAGE, Engine, engine
from trainyard.services.images import BASE_IMAGE, BaseInputs, ImageError, build_base, build_image

__all__ = ["engine"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args],
                          env={**os.environ, "COLUMNS": "200"}, capture_output=True, text=True,
                          timeout=120)


def test_the_base_image_is_named_by_every_input() -> None:
    inputs = BaseInputs()
    assert inputs.tag == f"trainyard/base:{inputs.digest()[:16]}"
    changed = [replace(inputs, suite="trixie"), replace(inputs, mirror="http://m/debian"),
               replace(inputs, packages=(*inputs.packages, "python3-scipy")),
               replace(inputs, runtime_files=((inputs.runtime_files[0][0],
                                              inputs.runtime_files[0][1] + "\n# changed\n"),
                                             *inputs.runtime_files[1:]))]
    assert len({inputs.digest(), *(c.digest() for c in changed)}) == 5
    # The order packages are listed in does not make another image.
    assert replace(inputs, packages=tuple(reversed(inputs.packages))).digest() == \
        inputs.digest()


def test_a_second_base_build_is_a_cache_hit(engine: Engine, tmp_path: Path) -> None:
    started = time.monotonic()
    built = build_base(engine.client, BaseInputs(), tmp_path / "cache")
    assert built.cached and time.monotonic() - started < 10
    assert engine.client.images.get(BASE_IMAGE).id == built.image_id
    # The CLI says the same, as JSON for scripts.
    done = cli("images", "build-base", "--cache-dir", str(tmp_path / "cache"), "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"tag": built.tag, "image_id": built.image_id,
                                       "cached": True}


def test_the_base_image_carries_the_training_environment(engine: Engine) -> None:
    out = engine.client.containers.run(
        BASE_IMAGE, ["python3", "-c", "import numpy, sklearn, trainyard.runtime; print('ok')"],
        remove=True, network_mode="none")
    assert out.strip() == b"ok"


def test_trainer_images_build_offline_and_are_listed(engine: Engine, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN echo built > /built\n")
    done = cli("images", "build", str(tmp_path), "--tag", "trainyard/cli-test:1", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tag"] == "trainyard/cli-test:1"
    listed = cli("images", "list", "-o", "json")
    tags = {t for image in json.loads(listed.stdout) for t in image["tags"]}
    assert {"trainyard/cli-test:1", BASE_IMAGE, TRAINER_IMAGE} <= tags
    engine.client.images.remove("trainyard/cli-test:1")


def test_build_failures_are_sentences(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(ImageError, match="holds no Dockerfile"):
        build_image(engine.client, tmp_path, "trainyard/x:1")
    (tmp_path / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN exit 3\n")
    with pytest.raises(ImageError, match="building trainyard/x:1 failed"):
        build_image(engine.client, tmp_path, "trainyard/x:1")
    # Without a registry, a base that is not local cannot be pulled: said plainly.
    (tmp_path / "Dockerfile").write_text("FROM trainyard/not-here:1\n")
    done = cli("images", "build", str(tmp_path), "--tag", "trainyard/x:1")
    assert done.returncode == 1 and "building trainyard/x:1 failed" in done.stderr
    assert "Traceback" not in done.stderr
    bad_tag = cli("images", "build", str(tmp_path), "--tag", "Not A Tag")
    assert bad_tag.returncode == 2 and "--tag" in bad_tag.stderr
