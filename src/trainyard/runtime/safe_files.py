"""Creating a new file below a directory for bytes that arrive over the network: each folder
on the way is made when missing and opened without following a link, and the file itself
must not exist yet, so that no name sent can write outside the directory. Standard library
only: the service, the SDK and the job runtime write what they receive through it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def create_below(root: str | Path, parts: Sequence[str], mode: int = 0o644) -> int:
    """A write-only descriptor of the new file root/parts[0]/.../parts[-1] (the parts
    checked to be plain names by the caller). OSError where a part is a file or a link
    (NotADirectoryError, or ELOOP) or the file exists (FileExistsError)."""
    fd = os.open(root, _DIRECTORY)
    try:
        for part in parts[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            inner = os.open(part, _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode,
                       dir_fd=fd)
    finally:
        os.close(fd)
