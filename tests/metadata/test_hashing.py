import os
from pathlib import Path

import pytest

from trainyard.domain.errors import InvalidArgument
from trainyard.metadata.hashing import digest_tree, store_tree


def make_tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_same_content_same_digest_whatever_the_location(tmp_path: Path) -> None:
    a = make_tree(tmp_path / "a", {"x.txt": b"1", "sub/y.bin": b"22"})
    b = make_tree(tmp_path / "b", {"sub/y.bin": b"22", "x.txt": b"1"})
    c = make_tree(tmp_path / "c", {"x.txt": b"1", "sub/y.bin": b"23"})
    da, db_, dc = digest_tree(a, "path"), digest_tree(b, "path"), digest_tree(c, "path")
    assert da.digest == db_.digest != dc.digest
    assert da.file_count == 2 and da.size_bytes == 3


def test_renaming_a_file_changes_the_digest(tmp_path: Path) -> None:
    a = make_tree(tmp_path / "a", {"x.txt": b"1"})
    b = make_tree(tmp_path / "b", {"z.txt": b"1"})
    assert digest_tree(a, "path").digest != digest_tree(b, "path").digest


def test_symlinks_are_refused(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "a", {"x.txt": b"1"})
    os.symlink("/etc/passwd", root / "leak")
    with pytest.raises(InvalidArgument, match="symbolic link") as info:
        digest_tree(root, "path")
    assert info.value.field == "path"


def test_stored_trees_are_read_only_and_deduplicated(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src", {"x.txt": b"1", "d/y": b"2"})
    digest = digest_tree(src, "path")
    first = store_tree(src, digest, tmp_path / "objects")
    again = store_tree(src, digest, tmp_path / "objects")
    assert first == again == tmp_path / "objects" / digest.digest
    assert (first / "d" / "y").read_bytes() == b"2"
    assert (first / "x.txt").stat().st_mode & 0o777 == 0o444
    assert first.stat().st_mode & 0o777 == 0o555
    assert len(list((tmp_path / "objects").iterdir())) == 1
