"""Content addressing of directory trees: one manifest hash names the whole tree.

A tree is hashed while it is copied into the store, so the name always matches the bytes
stored, even if the source changes meanwhile (a job may still be writing its model
directory). Links and special files are refused, never followed, so a tree cannot smuggle
in content from outside itself.
"""

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
MANIFEST = ".manifest"


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


def manifest_of(files: tuple[tuple[str, str, int], ...]) -> str:
    return "".join(f"{sha}  {size}  {rel}\n" for rel, sha, size in files)


def store_tree(src: Path, objects_dir: Path, field: str) -> tuple[TreeDigest, Path | None]:
    """Copy src into objects_dir/<digest>, read-only, unless that object exists already.

    Returns the digest and the stored directory, or None for a tree without files.
    Raises InvalidArgument(field, ...) for a link, a special file or an unreadable entry.
    """
    if src.is_symlink() or not src.is_dir():
        raise InvalidArgument(field, f"{str(src)!r} is not a directory")
    if _is_empty(src):  # the usual model directory of a job that saved none: no staging
        return _digest(()), None
    objects_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=objects_dir))
    try:
        files = tuple(sorted(_copy_tree(src, staging, field)))
        digest = _digest(files)
        if not files:
            return digest, None
        target = objects_dir / digest.digest
        if not target.exists():
            (staging / MANIFEST).write_text(manifest_of(files))
            _make_read_only(staging)
            try:
                os.rename(staging, target)
            except OSError:
                if not target.exists():
                    raise
        return digest, target
    finally:
        if staging.exists():
            _make_writable(staging)
            shutil.rmtree(staging)


def _digest(files: tuple[tuple[str, str, int], ...]) -> TreeDigest:
    return TreeDigest(hashlib.sha256(manifest_of(files).encode()).hexdigest(), files)


def _is_empty(src: Path) -> bool:
    try:
        with os.scandir(src) as entries:
            return next(entries, None) is None
    except OSError:
        return False  # the walk says what is wrong, with the field's name


def _copy_tree(src: Path, dest: Path, field: str) -> list[tuple[str, str, int]]:
    def refuse(error: OSError) -> None:
        raise InvalidArgument(field, f"cannot read {error.filename}: {error.strerror}")

    entries: list[tuple[str, str, int]] = []
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False, onerror=refuse):
        here = Path(dirpath)
        rel_dir = here.relative_to(src)
        for name in dirnames:
            if (here / name).is_symlink():
                raise InvalidArgument(field, f"{(rel_dir / name).as_posix()!r} is a symbolic "
                                      "link; only regular files and directories are stored")
            (dest / rel_dir / name).mkdir()
        for name in filenames:
            rel = (rel_dir / name).as_posix()
            sha, size = _copy_file(here / name, dest / rel, rel, field)
            entries.append((rel, sha, size))
    return entries


def _copy_file(src: Path, dest: Path, rel: str, field: str) -> tuple[str, int]:
    """Copy one regular file, hashing what is copied. O_NOFOLLOW: a link swapped in after
    the directory was listed is refused too."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise InvalidArgument(field, f"{rel!r} is a symbolic link or cannot be read "
                              f"({exc.strerror})") from None
    h = hashlib.sha256()
    size = 0
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidArgument(field, f"{rel!r} is not a regular file")
        with dest.open("wb") as out:
            while chunk := fh.read(CHUNK):
                h.update(chunk)
                out.write(chunk)
                size += len(chunk)
    return h.hexdigest(), size


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


def remove_stored(objects_dir: Path, digest: str) -> bool:
    """Remove the stored object of this digest (read-only as it is); False if none. It is
    renamed aside first, so it disappears at once and whole, then deleted."""
    target = objects_dir / digest
    if target.is_symlink() or not target.is_dir():
        return False
    doomed = Path(tempfile.mkdtemp(prefix=".deleting-", dir=objects_dir))
    os.rename(target, doomed / digest)
    _make_writable(doomed)
    shutil.rmtree(doomed)
    return True


def read_manifest(stored: Path) -> tuple[tuple[str, str, int], ...]:
    """The (relative path, sha256, size) of each file of a stored object, from the manifest
    written when it was stored. Paths that could leave the object are refused."""
    entries = []
    for line in (stored / MANIFEST).read_text().splitlines():
        sha, _, rest = line.partition("  ")
        size, _, rel = rest.partition("  ")
        if not size.isdigit() or not is_safe_relative(rel):
            raise ValueError(f"{stored / MANIFEST}: malformed line {line[:120]!r}")
        entries.append((rel, sha, int(size)))
    return tuple(entries)


def is_safe_relative(rel: str) -> bool:
    """A relative path inside a tree: no absolute path, no '..', '.' or empty part, no NUL
    or backslash."""
    if not rel or len(rel) > 4096 or "\x00" in rel or "\\" in rel or rel.startswith("/"):
        return False
    return all(part not in ("", ".", "..") for part in rel.split("/"))


def open_stored_file(stored: Path, rel: str) -> int:
    """A read-only descriptor of one file of a stored object, following no link on the way."""
    if not is_safe_relative(rel):
        raise ValueError(f"{rel!r} is not a path inside the object")
    fd = os.open(stored, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        parts = rel.split("/")
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        file_fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        os.close(file_fd)
        raise ValueError(f"{rel!r} is not a regular file")
    return file_fd
