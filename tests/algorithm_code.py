"""Code directories for algorithm tests: written, streamed as the upload's chunks, and
registered through the service as a caller would."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from tests.services.conftest import ROOT
from trainyard.auth.policy import Identity
from trainyard.domain.algorithms import AlgorithmVersion
from trainyard.metadata.file_chunks import FileChunk, chunks_of, tree_entries
from trainyard.server.assembly import TrainyardServer
from trainyard.services.algorithms import Registration

TRAIN_PY = 'print("training")\n'


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def code_chunks(root: Path) -> Iterator[FileChunk]:
    return chunks_of(root, tree_entries(root, "code"))


def register_code(server: TrainyardServer, name: str, salt: str = "",
                  identity: Identity = ROOT, **fields: object) -> AlgorithmVersion:
    """A code directory (train.py, and `salt` to make its content new) as the next version of
    `name`, registered by `identity`."""
    with tempfile.TemporaryDirectory() as tmp:
        root = write_tree(Path(tmp), {"train.py": TRAIN_PY + salt})
        request = replace(Registration(name=name, code=True, command="python3 train.py"),
                          **fields)  # type: ignore[arg-type]
        version, _ = server.services.algorithms.register(identity, request, code_chunks(root))
    return version
