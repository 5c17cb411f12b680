"""Trees sent as chunks and received whole: every path, size and sha256 checked, and only a
tree that passed every check put in place, in one step."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from trainyard.domain.errors import FailedPrecondition, InvalidArgument
from trainyard.metadata.file_chunks import (
    CHUNK,
    FileChunk,
    chunks_of,
    receive_tree,
    replace_dir,
    tree_entries,
)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _sample(root: Path) -> dict[str, bytes]:
    files = {"a.txt": b"alpha", "sub/deep/b.bin": bytes(range(256)) * (CHUNK // 100),
             "empty": b""}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def test_a_tree_goes_out_as_chunks_and_comes_back_the_same(tmp_path: Path) -> None:
    src = tmp_path / "src"
    files = _sample(src)
    entries = tree_entries(src, "the source")
    assert [e[0] for e in entries] == sorted(files)
    assert all(sha == hashlib.sha256(files[rel]).hexdigest() for rel, sha, _ in entries)
    chunks = list(chunks_of(src, entries))
    assert len([c for c in chunks if c.path == "sub/deep/b.bin"]) > 1
    assert [c for c in chunks if c.path == "empty"] == [
        FileChunk("empty", 0, hashlib.sha256(b"").hexdigest(), 0, b"")]
    target = tmp_path / "target"
    target.mkdir()
    (target / "old").write_text("old")
    received = receive_tree(chunks, target, "checkpoint")
    assert (received.files, received.bytes) == (3, sum(map(len, files.values())))
    replace_dir(received.directory, target)
    assert _tree(target) == files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src", "target"]  # nothing left


def _chunk(path: str, data: bytes, *, sha: str | None = None, size: int | None = None,
           offset: int = 0) -> FileChunk:
    return FileChunk(path, len(data) if size is None else size,
                     sha or hashlib.sha256(data).hexdigest(), offset, data)


@pytest.mark.parametrize(("chunks", "why"), [
    ([_chunk("a", b"x", sha="0" * 64)], "sha256"),
    ([_chunk("../evil", b"x")], "not a relative path"),
    ([_chunk("/etc/evil", b"x")], "not a relative path"),
    ([_chunk("a/./b", b"x")], "not a relative path"),
    ([_chunk("a", b"xy", size=1)], "more bytes"),
    ([_chunk("a", b"x", size=2)], "1 bytes arrived of its 2"),
    ([_chunk("a", b"x", offset=1, size=2)], "offset 1"),
    ([_chunk("a", b"x"), _chunk("b", b"y"), _chunk("a", b"x")], "sent twice"),
    ([_chunk("a", b"x"), _chunk("a/b", b"y")], "cannot be written"),
    ([_chunk("a", b"x", sha="Z" * 64)], "64 lowercase hex"),
])
def test_a_failed_check_changes_nothing(tmp_path: Path, chunks: list[FileChunk],
                                        why: str) -> None:
    target = tmp_path / "checkpoint"
    target.mkdir()
    (target / "kept").write_text("kept")
    with pytest.raises(InvalidArgument, match=why):
        receive_tree(chunks, target, "checkpoint")
    assert _tree(target) == {"kept": b"kept"}
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint"]
    assert not (tmp_path.parent / "evil").exists()


def test_a_tree_holding_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/etc/passwd")
    with pytest.raises(FailedPrecondition, match="'link', which is not a regular file"):
        tree_entries(tmp_path, "the checkpoint")


def test_replace_puts_a_tree_where_there_was_none(tmp_path: Path) -> None:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (incoming / "f").write_text("f")
    replace_dir(incoming, tmp_path / "new")
    assert _tree(tmp_path / "new") == {"f": b"f"} and not incoming.exists()
