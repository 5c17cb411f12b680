"""Client side of DownloadModel: files streamed into a private directory beside the
destination, every file's sha256 and the whole version's content hash checked, and only
then renamed into place. A mismatch, a path that would leave the destination, or any other
failure leaves nothing behind.

No server module is imported: the client speaks only the protocol. The manifest is the one
trainyard.metadata.hashing.manifest_of writes: one line per file, sorted by path,
"<sha256>  <size>  <path>".
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainyard.runtime.safe_files import create_below

MAX_PATH = 4096


class DownloadError(Exception):
    """The download was refused; nothing was written to the destination."""


def manifest_of(files: Iterable[tuple[str, str, int]]) -> str:
    return "".join(f"{sha}  {size}  {rel}\n" for rel, sha, size in sorted(files))


def check_relative(path: str) -> list[str]:
    """The parts of a relative path that stays inside its root; DownloadError otherwise."""
    if not path or len(path) > MAX_PATH:
        raise DownloadError(f"the server sent an empty or over-long file path ({len(path)} "
                            "characters)")
    if "\x00" in path or "\\" in path:
        raise DownloadError(f"the server sent a file path with a NUL or backslash: {path!r}")
    if path.startswith("/"):
        raise DownloadError(f"the server sent an absolute file path: {path!r}")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise DownloadError(f"the server sent a file path that leaves the model's directory "
                            f"or is not plain: {path!r}")
    return parts


def check_destination(dest: Path) -> None:
    """The destination must be new, or an empty directory; never a link."""
    if "\x00" in str(dest):
        raise DownloadError("the destination must not contain NUL")
    if dest.is_symlink():
        raise DownloadError(f"{dest} is a symbolic link; give a new directory")
    if dest.exists():
        if not dest.is_dir():
            raise DownloadError(f"{dest} exists and is not a directory")
        if any(dest.iterdir()):
            raise DownloadError(f"{dest} is not empty; give a new or empty directory")
    parent = dest.parent
    if not parent.is_dir():
        raise DownloadError(f"{parent} is not a directory")


@dataclass
class _Open:
    path: str
    size: int
    sha256: str
    fd: int
    written: int = 0
    digest: Any = field(default_factory=hashlib.sha256)


class Receiver:
    """Takes the stream's chunks in order; `finish` checks and renames into place."""

    def __init__(self, dest: Path) -> None:
        check_destination(dest)
        self.dest = dest
        self.staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.download-",
                                             dir=dest.parent))
        self.model: dict[str, Any] | None = None
        self.files: dict[str, tuple[str, int]] = {}  # done: path -> (sha256, size)
        self._current: _Open | None = None
        self._total = 0

    def start(self, model: dict[str, Any]) -> None:
        self.model = model

    def chunk(self, path: str, size: int, sha256: str, offset: int, data: bytes) -> None:
        if self.model is None:
            raise DownloadError("the server sent files before naming the model version")
        current = self._current
        if current is None or current.path != path:
            self._close_current()
            current = self._open(path, size, sha256)
        if offset != current.written:
            raise DownloadError(f"{path}: chunk at offset {offset}, expected {current.written}")
        if current.written + len(data) > current.size:
            raise DownloadError(f"{path}: more bytes than its size of {current.size}")
        self._total += len(data)
        if self._total > int(self.model.get("size_bytes", 0)):
            raise DownloadError("the server sent more bytes than the version holds")
        _write_all(current.fd, data)
        current.digest.update(data)
        current.written += len(data)

    def _open(self, path: str, size: int, sha256: str) -> _Open:
        parts = check_relative(path)
        if path in self.files:
            raise DownloadError(f"the server sent {path!r} twice")
        if size < 0 or len(sha256) != 64:
            raise DownloadError(f"{path}: bad size or hash in the stream")
        try:
            out = create_below(self.staging, parts)
        except NotADirectoryError:
            raise DownloadError(f"{path}: a part of it is a file or a link") from None
        except OSError as exc:
            raise DownloadError(f"{path}: cannot be written ({exc.strerror})") from None
        self._current = _Open(path, size, sha256, out)
        return self._current

    def _close_current(self) -> None:
        current, self._current = self._current, None
        if current is None:
            return
        os.close(current.fd)
        if current.written != current.size:
            raise DownloadError(f"{current.path}: got {current.written} bytes of "
                                f"{current.size}")
        actual = current.digest.hexdigest()
        if actual != current.sha256:
            raise DownloadError(f"content check failed: {current.path} has sha256 {actual}, "
                                f"the version says {current.sha256}")
        self.files[current.path] = (actual, current.written)

    def finish(self) -> list[dict[str, Any]]:
        """Check the whole version against its content hash, then put it in place."""
        self._close_current()
        if self.model is None:
            raise DownloadError("the server sent nothing")
        entries = [(p, sha, size) for p, (sha, size) in self.files.items()]
        digest = hashlib.sha256(manifest_of(entries).encode()).hexdigest()
        expected = self.model.get("content_hash", "")
        if digest != expected:
            raise DownloadError(f"content check failed: the files received hash to {digest}, "
                                f"the version's content hash is {expected}")
        if len(entries) != int(self.model.get("file_count", -1)):
            raise DownloadError("the server sent a different number of files than the "
                                "version holds")
        check_destination(self.dest)  # still new or empty: nothing came between
        os.chmod(self.staging, 0o755)
        os.rename(self.staging, self.dest)
        return [{"path": p, "sha256": sha, "size_bytes": size} for p, sha, size in
                sorted(entries)]

    def abort(self) -> None:
        if self._current is not None:
            os.close(self._current.fd)
            self._current = None
        if self.staging.exists():
            for root, dirs, _ in os.walk(self.staging):
                for d in dirs:
                    path = Path(root) / d
                    if not path.is_symlink() and stat.S_ISDIR(path.lstat().st_mode):
                        os.chmod(path, 0o755)
            shutil.rmtree(self.staging, ignore_errors=True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
