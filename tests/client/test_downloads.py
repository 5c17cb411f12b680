"""The client's side of a model download, fed streams as a server could send them: every
path, size and hash is checked, and a refused stream leaves nothing behind."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from trainyard.client.downloads import DownloadError, Receiver, check_relative, manifest_of
from trainyard.metadata import hashing

FILES = {"a.txt": b"alpha\n", "sub/b.bin": b"\x00\x01" * 1000, "empty": b""}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def model_of(files: dict[str, bytes]) -> dict[str, object]:
    entries = [(p, sha(d), len(d)) for p, d in files.items()]
    return {"content_hash": sha(manifest_of(entries).encode()), "file_count": len(files),
            "size_bytes": sum(len(d) for d in files.values())}


def send(dest: Path, files: dict[str, bytes], model: dict[str, object] | None = None,
         chunk: int = 700) -> list[dict[str, object]]:
    receiver = Receiver(dest)
    try:
        receiver.start(model or model_of(files))
        for path, data in files.items():
            for offset in range(0, max(len(data), 1), chunk):
                receiver.chunk(path, len(data), sha(data), offset, data[offset:offset + chunk])
        return receiver.finish()
    except BaseException:
        receiver.abort()
        raise


def test_the_manifest_is_the_servers(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    for path, data in FILES.items():
        (src / path).write_bytes(data)
    digest, _ = hashing.store_tree(src, tmp_path / "objects", "path")
    assert model_of(FILES)["content_hash"] == digest.digest


def test_a_sound_stream_is_put_in_place(tmp_path: Path) -> None:
    files = send(tmp_path / "model", FILES)
    assert sorted(f["path"] for f in files) == sorted(FILES)
    for path, data in FILES.items():
        assert (tmp_path / "model" / path).read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no staging left


@pytest.mark.parametrize("path", ["../x", "/etc/x", "a/../../x", "a//b", "./a", "a/.", "",
                                  "a\\b", "x\x00", "a/" * 3000])
def test_paths_leaving_the_directory_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(DownloadError):
        check_relative(path)
    files = {path: b"evil"}
    with pytest.raises(DownloadError):
        send(tmp_path / "model", files)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("change", ["byte", "size", "hash", "missing", "extra", "twice",
                                    "file-as-dir"])
def test_anything_but_the_versions_bytes_is_refused(tmp_path: Path, change: str) -> None:
    files = dict(FILES)
    model = model_of(files)
    if change == "byte":
        files["a.txt"] = b"alphA\n"  # the server's declared hash is of the new bytes ...
    elif change == "missing":
        del files["empty"]
    elif change == "extra":
        files["more"] = b"x"
        model["size_bytes"] = int(model["size_bytes"]) + 1  # type: ignore[call-overload]
    receiver = Receiver(tmp_path / "model")
    with pytest.raises(DownloadError):
        try:
            receiver.start(model)
            for path, data in files.items():
                declared = sha(data) if change != "hash" else sha(b"other")
                size = len(data) + (1 if change == "size" and path == "a.txt" else 0)
                receiver.chunk(path, size, declared, 0, data)
                if change == "twice" and path == "sub/b.bin":
                    receiver.chunk("a.txt", 6, sha(b"alpha\n"), 0, b"alpha\n")
                if change == "file-as-dir" and path == "a.txt":
                    receiver.chunk("a.txt/inner", 1, sha(b"x"), 0, b"x")
            receiver.finish()  # ... but the version's content hash is not
        finally:
            receiver.abort()
    assert list(tmp_path.iterdir()) == []


def test_the_destination_must_be_new_or_empty_and_no_link(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep")
    (tmp_path / "file").write_text("keep")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for dest in ("full", "file", "link", "nowhere/model"):
        with pytest.raises(DownloadError):
            Receiver(tmp_path / dest)
    (tmp_path / "empty").mkdir()
    send(tmp_path / "empty", FILES)
    assert (tmp_path / "empty" / "a.txt").read_bytes() == FILES["a.txt"]
