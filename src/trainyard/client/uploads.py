"""A local directory as the chunks of an upload: each regular file's pieces in order from
offset 0, each naming the file's path (relative, '/'-separated), size and sha256, an empty
file as one chunk without data. Links and special files are refused, never followed, as the
server refuses them; the server checks every size and hash again."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

CHUNK = 1024 * 1024  # under gRPC's 4 MiB message limit with room to spare


class UploadError(Exception):
    """The directory cannot be sent as it is; the message says which entry and why."""


@dataclass(frozen=True)
class Chunk:
    path: str
    size: int
    sha256: str
    offset: int
    data: bytes


@dataclass(frozen=True)
class Tree:
    root: Path
    files: tuple[tuple[str, str, int], ...]  # (relative path, sha256, size), sorted

    def chunks(self) -> Iterator[Chunk]:
        """Every file's chunks; a file that changed since it was hashed is refused."""
        for rel, sha, size in self.files:
            with _open(self.root / rel, rel) as fh:
                offset = 0
                digest = hashlib.sha256()
                while True:
                    data = fh.read(CHUNK)
                    digest.update(data)
                    if data or not offset:
                        yield Chunk(rel, size, sha, offset, data)
                    offset += len(data)
                    if not data or offset >= size:
                        break
                if offset != size or digest.hexdigest() != sha:
                    raise UploadError(f"{rel} changed while it was being sent")


def scan(root: Path) -> Tree:
    """Every regular file under root, hashed; a link or a special file is refused."""
    if root.is_symlink() or not root.is_dir():
        raise UploadError(f"{root} is not a directory")
    files: list[tuple[str, str, int]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        for name in sorted([*dirnames, *filenames]):
            path = here / name
            rel = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise UploadError(f"{rel} is a link or a special file; only regular files "
                                  "and directories are sent")
            files.append((rel, *_digest(path, rel)))
    if not files:
        raise UploadError(f"{root} holds no files")
    return Tree(root, tuple(sorted(files)))


def _open(path: Path, rel: str) -> BinaryIO:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise UploadError(f"{rel} cannot be read: {exc.strerror}") from None
    return os.fdopen(fd, "rb")


def _digest(path: Path, rel: str) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with _open(path, rel) as fh:
        while data := fh.read(CHUNK):
            h.update(data)
            size += len(data)
    return h.hexdigest(), size
