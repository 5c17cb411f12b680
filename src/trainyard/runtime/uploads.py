"""A directory as the FileChunk stream the service's PushModel and PushCheckpoint take:
every regular file under it, in 1 MiB chunks, each naming its file's size and sha256."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from trainyard.runtime.wire import FileChunk

CHUNK_BYTES = 1024 * 1024


def files_under(root: Path) -> list[tuple[str, Path]]:
    """('/'-separated relative path, path) of each regular file, in a stable order. Links
    are left out: what they point at may lie outside the directory."""
    found: list[tuple[str, Path]] = []
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(directory, name)
            if path.is_file() and not path.is_symlink():
                found.append((path.relative_to(root).as_posix(), path))
    return found


def fingerprint(root: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when any file under `root` does (path, size, modification time)."""
    marks = []
    for relative, path in files_under(root):
        info = path.stat()
        marks.append((relative, info.st_size, info.st_mtime_ns))
    return tuple(marks)


def chunks(root: Path) -> Iterator[FileChunk]:
    for relative, path in files_under(root):
        size, sha256 = _digest(path)
        with open(path, "rb") as file:
            offset = 0
            while True:
                data = file.read(CHUNK_BYTES)
                if not data and offset:
                    break
                yield FileChunk(path=relative, offset=offset, data=data, size=size,
                                sha256=sha256)
                offset += len(data)
                if not data:
                    break  # an empty file is one chunk with no data


def _digest(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as file:
        while block := file.read(CHUNK_BYTES):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()
