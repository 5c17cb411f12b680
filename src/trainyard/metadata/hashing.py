"""Content addressing of directory trees: one manifest hash names the whole tree."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from trainyard.domain.errors import InvalidArgument

CHUNK = 1 << 20


@dataclass(frozen=True)
class TreeDigest:
    digest: str  # sha256 of the manifest
    files: tuple[tuple[str, str, int], ...]  # (relative path, sha256, size), sorted

    @property
    def size_bytes(self) -> int:
        return sum(size for _, _, size in self.files)

    @property
    def file_count(self) -> int:
        return len(self.files)

    def manifest(self) -> str:
        return "".join(f"{sha}  {size}  {rel}\n" for rel, sha, size in self.files)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def digest_tree(root: Path, field: str) -> TreeDigest:
    """Hash every regular file under root. Links and special files are refused, not followed,
    so a tree can never smuggle in content from outside itself."""
    entries: list[tuple[str, str, int]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in [*dirnames, *filenames]:
            full = Path(dirpath) / name
            mode = full.lstat().st_mode
            rel = full.relative_to(root).as_posix()
            if stat.S_ISLNK(mode):
                raise InvalidArgument(field, f"{rel!r} is a symbolic link; only regular files "
                                      "and directories are stored")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise InvalidArgument(field, f"{rel!r} is not a regular file")
        for name in sorted(filenames):
            full = Path(dirpath) / name
            entries.append((full.relative_to(root).as_posix(), file_sha256(full),
                            full.stat().st_size))
    files = tuple(sorted(entries))
    manifest = TreeDigest("", files).manifest()
    return TreeDigest(hashlib.sha256(manifest.encode()).hexdigest(), files)


def store_tree(src: Path, digest: TreeDigest, objects_dir: Path) -> Path:
    """Copy src into objects_dir/<digest> once, read-only; later calls reuse the copy."""
    target = objects_dir / digest.digest
    if target.exists():
        return target
    objects_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=objects_dir))
    try:
        for rel, _, _ in digest.files:
            dest = staging / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / rel, dest)
        (staging / ".manifest").write_text(digest.manifest())
        _make_read_only(staging)
        try:
            os.rename(staging, target)
        except OSError:
            if not target.exists():
                raise
    finally:
        if staging.exists():
            _make_writable(staging)
            shutil.rmtree(staging)
    return target


def _make_read_only(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames:
            os.chmod(Path(dirpath) / name, 0o444)
        for name in dirnames:
            os.chmod(Path(dirpath) / name, 0o555)
    os.chmod(root, 0o555)


def _make_writable(root: Path) -> None:
    os.chmod(root, 0o755)
    for dirpath, dirnames, _ in os.walk(root):
        for name in dirnames:
            os.chmod(Path(dirpath) / name, 0o755)
