"""Files streamed from the service onto this node: the per-node caches of datasets and of
algorithms' code directories, and the checkpoint of an attempt.

A cache holds one read-only directory per dataset version (or code directory), named by its
content hash, shared by every job on the node. Its lock file arbitrates: an exclusive flock while a
version is downloaded, a shared one while a job uses it, so that eviction (which needs the
exclusive lock, without waiting) never removes a version in use."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from trainyard.runtime.safe_files import create_below
from trainyard.runtime.wire import FileChunk
from trainyard.runtime.writer import BackgroundWriter, reuse_freed_buffers

_HEX = re.compile(r"^[0-9a-f]{16,128}$")
PARTIAL = ".partial"
CODE_FOLDER = "code"  # the cache's folder of code directories
LOCK = ".lock"


class StagingError(Exception):
    """Files that could not be staged; the message names the file or the reason."""


def safe_relative(path: str) -> PurePosixPath:
    """A chunk's path, refused when it is absolute, climbs with '..', or is not plain."""
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or "\0" in path:
        raise StagingError(f"refused the file path {path!r}: not a plain relative path")
    if any(part in ("", ".", "..") for part in parts):
        raise StagingError(f"refused the file path {path!r}: it leaves its directory")
    return PurePosixPath(*parts)


@dataclass
class Received:
    files: int = 0
    bytes: int = 0


def receive_files(chunks: Iterator[FileChunk], target: Path, *, read_only: bool) -> Received:
    """Write the streamed files under `target` (which must exist), checking each file's
    order, size and sha256 as it arrives. Read-only: files 0444, directories 0555."""
    done = Received()
    seen: set[PurePosixPath] = set()
    current: _Incoming | None = None
    root = target.resolve()
    reuse_freed_buffers()
    writer = BackgroundWriter()
    try:
        for chunk in chunks:
            relative = safe_relative(chunk.path)
            if current is None or relative != current.relative:
                if current is not None:
                    done.bytes += current.finish()
                    done.files += 1
                if relative in seen:
                    raise StagingError(f"{chunk.path} came twice in the stream")
                seen.add(relative)
                current = _Incoming(root, relative, chunk, read_only, writer)
            current.write(chunk)
        if current is not None:
            done.bytes += current.finish()
            done.files += 1
            current = None
    finally:
        if current is not None:
            current.abandon()
        writer.close()
    if read_only:
        for directory, _, _ in os.walk(root, topdown=False):
            os.chmod(directory, 0o555)
    return done


class _Incoming:
    """One file being received."""

    def __init__(self, root: Path, relative: PurePosixPath, first: FileChunk,
                 read_only: bool, writer: BackgroundWriter) -> None:
        self.relative = relative
        self.path = root.joinpath(*relative.parts)
        try:
            self.fd = create_below(root, relative.parts)
        except FileExistsError:
            raise StagingError(f"{first.path} is there already") from None
        except OSError:  # a folder on its way that is a file or a link
            raise StagingError(f"refused the file path {first.path!r}: it leaves its "
                               "directory") from None
        self.size, self.sha256 = first.size, first.sha256.lower()
        self.read_only = read_only
        self.written = 0
        self.digest = hashlib.sha256()
        self.writer = writer

    def write(self, chunk: FileChunk) -> None:
        if chunk.offset != self.written:
            raise StagingError(f"{self.relative}: a chunk at offset {chunk.offset} came when "
                               f"{self.written} bytes had arrived")
        if (chunk.size, chunk.sha256.lower()) != (self.size, self.sha256):
            raise StagingError(f"{self.relative}: its chunks disagree on its size or sha256")
        offset = self.written
        self.written += len(chunk.data)
        if self.written > self.size:
            raise StagingError(f"{self.relative} is longer than its size, {self.size} bytes")
        self.writer.write(self.fd, offset, chunk.data, self.digest)

    def finish(self) -> int:
        try:
            self.writer.flush()
        finally:
            self._close()
        if self.written != self.size:
            raise StagingError(f"{self.relative} ended after {self.written} of its "
                               f"{self.size} bytes")
        if self.digest.hexdigest() != self.sha256:
            raise StagingError(f"{self.relative} does not match its sha256 (got "
                               f"{self.digest.hexdigest()}, expected {self.sha256})")
        if self.read_only:
            os.chmod(self.path, 0o444)
        return self.written

    def abandon(self) -> None:
        with contextlib.suppress(OSError):
            self.writer.flush()
        self._close()

    def _close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def remove_tree(path: Path) -> None:
    """Delete a directory even where it was made read-only."""
    if not path.exists() and not path.is_symlink():
        return
    if path.is_dir() and not path.is_symlink():
        for directory, _, _ in os.walk(path):
            with contextlib.suppress(OSError):
                os.chmod(directory, stat.S_IRWXU)
        shutil.rmtree(path)
    else:
        path.unlink()


def tree_bytes(path: Path) -> int:
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_size
    return total


# --- the dataset cache ----------------------------------------------------------------------


@dataclass
class StagedDataset:
    """A version in the cache, held (shared lock) until release()."""

    path: Path
    lock: IO[bytes]
    pulled: bool  # False: it was in the cache already

    def release(self) -> None:
        self.lock.close()  # closing the file drops its flock


class DatasetCache:
    """`<root>/<folder>/<hex>/` per version, at most `cap_bytes` of them kept when idle:
    `datasets` for dataset versions, `code` (CODE_FOLDER) for code directories."""

    def __init__(self, root: Path, cap_bytes: int, folder: str = "datasets") -> None:
        self.root = root / folder
        self.cap_bytes = cap_bytes
        self.what = "code directory" if folder == CODE_FOLDER else "dataset"

    def stage(self, content_hash: str, pull: Callable[[Path], Received]) -> StagedDataset:
        """The version's directory, downloaded by `pull(into)` unless another job on this
        node has it already; then idle versions are evicted down to the cap."""
        hex_digest = _hex(content_hash, self.what)
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.root / hex_digest
        lock = open(self.root / (hex_digest + LOCK), "ab")  # noqa: SIM115 - held by the result
        try:
            fcntl.flock(lock, fcntl.LOCK_SH)
            pulled = False
            if not final.is_dir():
                fcntl.flock(lock, fcntl.LOCK_EX)  # one download per node; others wait
                if not final.is_dir():
                    self._download(final, pull)
                    pulled = True
                fcntl.flock(lock, fcntl.LOCK_SH)
            os.utime(final)  # its last use, for the eviction order
        except BaseException:
            lock.close()
            raise
        self.evict(keep=hex_digest)
        return StagedDataset(final, lock, pulled)

    def _download(self, final: Path, pull: Callable[[Path], Received]) -> None:
        partial = final.with_name(final.name + PARTIAL)
        remove_tree(partial)  # left by a download that died
        partial.mkdir()
        try:
            pull(partial)
        except BaseException:
            remove_tree(partial)
            raise
        os.chmod(partial, 0o555)
        os.rename(partial, final)

    def evict(self, keep: str) -> list[str]:
        """Remove the least recently used versions no job holds until the cache is within
        its cap; never `keep`. The versions removed, oldest first."""
        versions = [(entry.stat().st_mtime, entry.name, tree_bytes(entry))
                    for entry in self.root.iterdir()
                    if entry.is_dir() and _HEX.match(entry.name)]
        total = sum(size for _, _, size in versions)
        removed: list[str] = []
        for _, name, size in sorted(versions):
            if total <= self.cap_bytes:
                break
            if name != keep and self._remove_if_idle(name):
                total -= size
                removed.append(name)
        return removed

    def _remove_if_idle(self, name: str) -> bool:
        with open(self.root / (name + LOCK), "ab") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # a job uses it
            remove_tree(self.root / name)
            return True


def _hex(content_hash: str, what: str) -> str:
    digest = content_hash.split(":", 1)[-1].lower()
    if not _HEX.match(digest):
        raise StagingError(f"the {what}'s content hash {content_hash!r} is not a hex digest")
    return digest


# --- the checkpoint -------------------------------------------------------------------------


def stage_checkpoint(job_dir: Path, attempt: int, pull: Callable[[Path], Received] | None
                     ) -> Path:
    """`<job_dir>/checkpoint`, as the service holds it for this attempt: pulled once per
    attempt by whichever rank of this node comes first (the others wait and reuse it);
    empty when there is none (`pull` None)."""
    job_dir.mkdir(parents=True, exist_ok=True)
    target = job_dir / "checkpoint"
    marker = job_dir / "checkpoint.attempt"
    with open(job_dir / ("checkpoint" + LOCK), "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir() and _read(marker) == str(attempt):
            return target
        remove_tree(target)
        partial = job_dir / ("checkpoint" + PARTIAL)
        remove_tree(partial)
        partial.mkdir()
        try:
            if pull is not None:
                pull(partial)
        except BaseException:
            remove_tree(partial)
            raise
        os.rename(partial, target)
        marker.write_text(str(attempt))
    return target


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""
