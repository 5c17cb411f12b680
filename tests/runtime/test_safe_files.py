"""A received file is created below its directory and nowhere else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainyard.runtime.safe_files import create_below


def test_folders_are_made_on_the_way_and_the_file_is_new(tmp_path: Path) -> None:
    fd = create_below(tmp_path, ["a", "b", "c.bin"])
    os.write(fd, b"x")
    os.close(fd)
    assert (tmp_path / "a" / "b" / "c.bin").read_bytes() == b"x"
    with pytest.raises(FileExistsError):
        create_below(tmp_path, ["a", "b", "c.bin"])


def test_no_link_or_file_on_the_way_is_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside)
    (root / "plain").write_text("")
    with pytest.raises(OSError):
        create_below(root, ["link", "x"])
    with pytest.raises(NotADirectoryError):
        create_below(root, ["plain", "x"])
    (root / "final").symlink_to(outside / "target")
    with pytest.raises(OSError):
        create_below(root, ["final"])  # a link in the file's own place is not written through
    assert list(outside.iterdir()) == []
