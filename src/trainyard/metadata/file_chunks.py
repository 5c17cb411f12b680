"""Directory trees as streams of chunks, both ways. Sending: each file's chunks in order
from offset 0, each naming the file's path, size and sha256 (an empty file is one chunk
without data). Receiving: into a private directory, every path checked, every file's size
and sha256 verified; only a tree that passed every check is put in place, by one rename,
so a failed upload changes nothing."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainyard.domain.errors import FailedPrecondition, InvalidArgument
from trainyard.metadata.hashing import is_safe_relative, open_stored_file
from trainyard.runtime.safe_files import create_below

CHUNK = 1024 * 1024  # under gRPC's 4 MiB message limit with room to spare
MAX_FILES = 100_000
Entry = tuple[str, str, int]  # (relative path, sha256 hex, size)


@dataclass(frozen=True)
class FileChunk:
    path: str
    size: int
    sha256: str
    offset: int
    data: bytes


def chunks_of(root: Path, files: Iterable[Entry]) -> Iterator[FileChunk]:
    """The chunks of these files of root, opened without following any link."""
    for rel, sha, size in files:
        try:
            fd = open_stored_file(root, rel)
        except (OSError, ValueError) as exc:
            raise FailedPrecondition(f"stored file {rel!r} cannot be read: {exc}") from None
        with os.fdopen(fd, "rb") as fh:
            offset = 0
            while True:
                data = fh.read(CHUNK)
                if not data and offset:
                    break
                yield FileChunk(rel, size, sha, offset, data)
                offset += len(data)
                if not data:
                    break  # an empty file: one empty chunk


def tree_entries(root: Path, what: str) -> tuple[Entry, ...]:
    """Every regular file under root with its sha256 and size, sorted; links and special
    files are refused (FailedPrecondition naming `what`)."""
    entries: list[Entry] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        for name in [*dirnames, *filenames]:
            path = here / name
            rel = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise FailedPrecondition(f"{what} holds {rel!r}, which is not a regular file")
            entries.append((rel, *_digest(path)))
    return tuple(sorted(entries))


def _digest(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        while data := fh.read(1 << 20):
            h.update(data)
            size += len(data)
    return h.hexdigest(), size


@dataclass
class _Open:
    path: str
    size: int
    sha256: str
    fd: int
    written: int = 0
    digest: Any = field(default_factory=hashlib.sha256)


@dataclass(frozen=True)
class ReceivedTree:
    directory: Path  # private, beside the target; the caller puts it in place
    files: int
    bytes: int


def receive_tree(chunks: Iterable[FileChunk], beside: Path, field_name: str) -> ReceivedTree:
    """Write the streamed files into a new private directory beside `beside` (same file
    system, so it can be renamed over it) and check each. Raises InvalidArgument naming
    `field_name`, leaving nothing behind, when any check fails."""
    beside.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{beside.name}.incoming-", dir=beside.parent))
    receiver = _Receiver(staging, field_name)
    try:
        for chunk in chunks:
            receiver.take(chunk)
        receiver.close_current()
    except BaseException:
        receiver.abort()
        remove_tree(staging)
        raise
    return ReceivedTree(staging, len(receiver.done), receiver.total)


class _Receiver:
    def __init__(self, staging: Path, field_name: str) -> None:
        self.staging = staging
        self.field = field_name
        self.done: set[str] = set()
        self.current: _Open | None = None
        self.total = 0

    def refuse(self, problem: str) -> InvalidArgument:
        return InvalidArgument(self.field, problem)

    def take(self, chunk: FileChunk) -> None:
        current = self.current
        if current is None or current.path != chunk.path:
            self.close_current()
            current = self.open(chunk)
        if chunk.size != current.size or chunk.sha256 != current.sha256:
            raise self.refuse(f"{chunk.path!r}: its chunks disagree on its size or sha256")
        if chunk.offset != current.written:
            raise self.refuse(f"{chunk.path!r}: a chunk at offset {chunk.offset}, expected "
                              f"{current.written}")
        if current.written + len(chunk.data) > current.size:
            raise self.refuse(f"{chunk.path!r}: more bytes than its size of {current.size}")
        view = memoryview(chunk.data)
        while view:
            view = view[os.write(current.fd, view):]
        current.digest.update(chunk.data)
        current.written += len(chunk.data)
        self.total += len(chunk.data)

    def open(self, chunk: FileChunk) -> _Open:
        path = chunk.path
        if not is_safe_relative(path):
            raise self.refuse(f"{path[:200]!r} is not a relative path inside the tree (no "
                              "absolute path, no '..', '.' or empty part)")
        if path in self.done:
            raise self.refuse(f"{path!r} was sent twice")
        if len(self.done) >= MAX_FILES:
            raise self.refuse(f"more than {MAX_FILES} files")
        if chunk.size < 0 or len(chunk.sha256) != 64 or \
                any(c not in "0123456789abcdef" for c in chunk.sha256):
            raise self.refuse(f"{path!r}: a negative size or a sha256 that is not 64 "
                              "lowercase hex digits")
        try:
            out = create_below(self.staging, path.split("/"))
        except OSError as exc:
            raise self.refuse(f"{path!r} cannot be written beside the files sent before it "
                              f"({exc.strerror})") from None
        self.current = _Open(path, chunk.size, chunk.sha256, out)
        return self.current

    def close_current(self) -> None:
        current, self.current = self.current, None
        if current is None:
            return
        os.close(current.fd)
        if current.written != current.size:
            raise self.refuse(f"{current.path!r}: {current.written} bytes arrived of its "
                              f"{current.size}")
        actual = current.digest.hexdigest()
        if actual != current.sha256:
            raise self.refuse(f"{current.path!r}: the bytes that arrived have sha256 "
                              f"{actual}, the sender said {current.sha256}")
        self.done.add(current.path)

    def abort(self) -> None:
        if self.current is not None:
            os.close(self.current.fd)
            self.current = None


def replace_dir(incoming: Path, target: Path) -> None:
    """Put `incoming` where `target` is, in one step: readers see the old tree or the new
    one, never a mix or nothing. The old tree is then removed."""
    if not target.exists():
        os.rename(incoming, target)
        return
    if _exchange(incoming, target):
        remove_tree(incoming)  # now the old tree
        return
    # No atomic exchange on this system: move the old tree aside, then the new one in.
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    os.rename(target, aside / target.name)
    os.rename(incoming, target)
    remove_tree(aside)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b),
                       _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
