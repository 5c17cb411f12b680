"""The layer contracts (pyproject's [tool.importlinter], run by `make lint`) hold on this
tree, and fail when a forbidden import is added: checked on a copy of the package with one
such import written into it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config",
                           str(ROOT / "pyproject.toml")], cwd=src, env=env,
                          capture_output=True, text=True, timeout=120)


def broken(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line.removesuffix(" BROKEN") for line in result.stdout.splitlines()
            if line.endswith(" BROKEN")]


def test_the_tree_keeps_every_layer_contract() -> None:
    result = lint_imports(ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KEPT" in result.stdout and not broken(result)


@pytest.mark.parametrize(("module", "forbidden", "contract"), [
    ("domain/spec.py", "trainyard.store.records", "domain imports nothing of ours"),
    ("scheduler/backlog.py", "trainyard.tracker", "the scheduler imports only the domain"),
    ("executors/local.py", "trainyard.store.db", "executors never import"),
    ("runtime.py", "trainyard.services.jobs", "the client side never imports"),
])
def test_a_forbidden_import_breaks_its_contract(tmp_path: Path, module: str, forbidden: str,
                                               contract: str) -> None:
    shutil.copytree(ROOT / "src" / "trainyard", tmp_path / "trainyard",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with (tmp_path / "trainyard" / module).open("a") as file:
        file.write(f"\nimport {forbidden}  # noqa\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    # The contract of the layer that took the import breaks (those of layers above it
    # that may not reach the forbidden module through it may break too).
    assert any(name.startswith(contract) for name in broken(result)), result.stdout
