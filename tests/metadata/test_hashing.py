import os
from pathlib import Path

import pytest

from trainyard.domain.errors import InvalidArgument
from trainyard.metadata.hashing import store_tree


def make_tree(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def digest(tmp_path: Path, root: Path) -> str:
    return store_tree(root, tmp_path / "objects", "path")[0].digest


def test_same_content_same_digest_whatever_the_location(tmp_path: Path) -> None:
    a = make_tree(tmp_path / "a", {"x.txt": b"1", "sub/y.bin": b"22"})
    b = make_tree(tmp_path / "b", {"sub/y.bin": b"22", "x.txt": b"1"})
    c = make_tree(tmp_path / "c", {"x.txt": b"1", "sub/y.bin": b"23"})
    assert digest(tmp_path, a) == digest(tmp_path, b) != digest(tmp_path, c)
    tree, _ = store_tree(a, tmp_path / "objects", "path")
    assert tree.file_count == 2 and tree.size_bytes == 3


def test_renaming_a_file_changes_the_digest(tmp_path: Path) -> None:
    a = make_tree(tmp_path / "a", {"x.txt": b"1"})
    b = make_tree(tmp_path / "b", {"z.txt": b"1"})
    assert digest(tmp_path, a) != digest(tmp_path, b)


@pytest.mark.parametrize("where", ["file", "dir", "root"])
def test_symlinks_are_refused_and_nothing_is_stored(tmp_path: Path, where: str) -> None:
    root = make_tree(tmp_path / "a", {"x.txt": b"1"})
    if where == "file":
        os.symlink("/etc/passwd", root / "leak")
    elif where == "dir":
        os.symlink("/etc", root / "leak")
    else:
        root = tmp_path / "link"
        os.symlink(tmp_path / "a", root)
    with pytest.raises(InvalidArgument) as info:
        store_tree(root, tmp_path / "objects", "model")
    assert info.value.field == "model"
    objects = tmp_path / "objects"
    assert not objects.exists() or list(objects.iterdir()) == []  # staging cleaned up too


def test_special_files_are_refused(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "a", {"x.txt": b"1"})
    os.mkfifo(root / "pipe")
    with pytest.raises(InvalidArgument, match="not a regular file"):
        store_tree(root, tmp_path / "objects", "path")


def test_stored_trees_are_read_only_and_deduplicated(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src", {"x.txt": b"1", "d/y": b"2"})
    tree, first = store_tree(src, tmp_path / "objects", "path")
    _, again = store_tree(src, tmp_path / "objects", "path")
    assert first == again == tmp_path / "objects" / tree.digest
    assert (first / "d" / "y").read_bytes() == b"2"
    assert (first / "x.txt").stat().st_mode & 0o777 == 0o444
    assert first.stat().st_mode & 0o777 == 0o555
    assert [p.name for p in (tmp_path / "objects").iterdir()] == [tree.digest]


def test_an_empty_tree_stores_nothing(tmp_path: Path) -> None:
    src = make_tree(tmp_path / "src", {})
    (src / "empty-dir").mkdir()
    tree, stored = store_tree(src, tmp_path / "objects", "path")
    assert stored is None and tree.file_count == 0
    assert list((tmp_path / "objects").iterdir()) == []


def test_a_directory_without_entries_is_the_empty_tree_without_a_copy(tmp_path: Path) -> None:
    nested = make_tree(tmp_path / "nested", {})
    (nested / "empty-dir").mkdir()
    bare = make_tree(tmp_path / "bare", {})
    objects = tmp_path / "objects"
    tree, stored = store_tree(bare, objects, "path")
    assert stored is None and tree.file_count == 0
    assert not objects.exists()  # not even a staging directory was made
    assert tree == store_tree(nested, objects, "path")[0]


def test_a_missing_or_unreadable_directory_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="path"):
        store_tree(tmp_path / "absent", tmp_path / "objects", "path")
