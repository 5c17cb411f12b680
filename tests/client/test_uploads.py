"""A local directory as an upload's chunks: every file in order from offset 0 with its size
and sha256, an empty file as one chunk, links and special files refused, a file changed
while it is sent refused."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from trainyard.client.uploads import CHUNK, UploadError, scan


def test_every_file_is_sent_in_order_with_its_size_and_hash(tmp_path: Path) -> None:
    big = os.urandom(CHUNK * 2 + 5)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "big.bin").write_bytes(big)
    (tmp_path / "empty").write_bytes(b"")
    tree = scan(tmp_path)
    assert [rel for rel, _, _ in tree.files] == ["empty", "sub/big.bin"]
    chunks = list(tree.chunks())
    assert [(c.path, c.offset, len(c.data)) for c in chunks] == [
        ("empty", 0, 0), ("sub/big.bin", 0, CHUNK), ("sub/big.bin", CHUNK, CHUNK),
        ("sub/big.bin", 2 * CHUNK, 5)]
    assert {c.sha256 for c in chunks[1:]} == {hashlib.sha256(big).hexdigest()}
    assert {c.size for c in chunks[1:]} == {len(big)}
    assert b"".join(c.data for c in chunks[1:]) == big


def test_links_special_files_and_empty_trees_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UploadError, match="holds no files"):
        scan(tmp_path)
    with pytest.raises(UploadError, match="not a directory"):
        scan(tmp_path / "missing")
    (tmp_path / "ok.py").write_text("1\n")
    os.symlink(tmp_path / "ok.py", tmp_path / "link.py")
    with pytest.raises(UploadError, match="link.py is a link"):
        scan(tmp_path)
    os.unlink(tmp_path / "link.py")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UploadError, match="fifo is a link or a special file"):
        scan(tmp_path)


def test_a_file_changed_after_it_was_hashed_is_refused(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("print(1)\n")
    tree = scan(tmp_path)
    (tmp_path / "train.py").write_text("print(2)\n")
    with pytest.raises(UploadError, match="changed while it was being sent"):
        list(tree.chunks())
