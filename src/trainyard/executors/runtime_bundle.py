"""The job runtime as one file a launch ships with the job: a zip application of the
`trainyard.runtime` package (standard library only), runnable as `python3 FILE run -- CMD`
on a node that has no Trainyard installed, and importable by the job's own code when the
file is on its PYTHONPATH. Built once per process from the installed package's files, the
same bytes for the same sources, so a node's copy is named by its content."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

# The zip's entry point: the package's own `python3 -m trainyard.runtime`.
_MAIN = b'import runpy\nrunpy.run_module("trainyard.runtime", run_name="__main__")\n'
# A package marker, so `trainyard.runtime` imports from the zip and nothing else of ours does.
_PACKAGE = b'"""Only the job runtime, shipped with a job."""\n'
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed times: the same sources give the same bytes


@dataclass(frozen=True)
class RuntimeBundle:
    data: bytes

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def name(self) -> str:
        """The file name a node keeps it under, unique to its content."""
        return f"trainyard-runtime-{self.digest[:12]}.pyz"


def runtime_sources() -> tuple[tuple[str, str], ...]:
    """The modules of the installed `trainyard.runtime` package (found, not imported), as
    (file name, text), by name: what the bundle and the base image carry."""
    spec = importlib.util.find_spec("trainyard.runtime")
    assert spec is not None and spec.submodule_search_locations
    package = Path(next(iter(spec.submodule_search_locations)))
    return tuple((path.name, path.read_text()) for path in sorted(package.glob("*.py")))


@functools.cache
def runtime_bundle() -> RuntimeBundle:
    return build_bundle(runtime_sources())


def build_bundle(sources: tuple[tuple[str, str], ...]) -> RuntimeBundle:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        _add(archive, "__main__.py", _MAIN)
        _add(archive, "trainyard/__init__.py", _PACKAGE)
        for name, text in sources:
            _add(archive, f"trainyard/runtime/{name}", text.encode())
    return RuntimeBundle(buffer.getvalue())


def _add(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    archive.writestr(info, data)
