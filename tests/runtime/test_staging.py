"""The per-node dataset cache and the checkpoint's staging, with real files and locks; the
service's stream is a list of chunks made as the service makes them."""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainyard.runtime.staging import (
    CODE_FOLDER,
    DatasetCache,
    Received,
    StagingError,
    receive_files,
    safe_relative,
    stage_checkpoint,
)
from trainyard.runtime.wire import FileChunk


def stream(files: dict[str, bytes], piece: int = 3) -> Iterator[FileChunk]:
    for path, data in files.items():
        sha = hashlib.sha256(data).hexdigest()
        offsets = range(0, len(data), piece) if data else [0]
        for offset in offsets:
            yield FileChunk(path=path, offset=offset, data=data[offset:offset + piece],
                            size=len(data), sha256=sha)


def version(seed: str, size: int = 100) -> tuple[str, dict[str, bytes]]:
    files = {"train.csv": (seed * size).encode()[:size], "sub/labels.txt": b"x", "empty": b""}
    return "sha256:" + hashlib.sha256(seed.encode()).hexdigest(), files


class Service:
    """Counts the pulls, as the real service's stream would be asked."""

    def __init__(self) -> None:
        self.pulls = 0

    def puller(self, files: dict[str, bytes]):  # type: ignore[no-untyped-def]
        def pull(into: Path) -> Received:
            self.pulls += 1
            return receive_files(stream(files), into, read_only=True)
        return pull


def test_two_jobs_share_one_read_only_copy(tmp_path: Path) -> None:
    cache, service = DatasetCache(tmp_path, 10**6), Service()
    digest, files = version("a")
    first = cache.stage(digest, service.puller(files))
    second = cache.stage(digest, service.puller(files))
    assert (first.pulled, second.pulled, service.pulls) == (True, False, 1)
    assert first.path == second.path == tmp_path / "datasets" / digest.split(":")[1]
    assert (first.path / "train.csv").read_bytes() == files["train.csv"]
    assert (first.path / "empty").read_bytes() == b""
    for path in [first.path, *first.path.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o555 if path.is_dir() else 0o444), path
    if os.geteuid() != 0:  # root writes anywhere; the modes are what protects the copy
        with pytest.raises(PermissionError):
            (first.path / "new").write_text("no")
    first.release()
    second.release()



def test_code_directories_have_a_cache_folder_of_their_own(tmp_path: Path) -> None:
    datasets, code, service = DatasetCache(tmp_path, 10**6), \
        DatasetCache(tmp_path, 10**6, CODE_FOLDER), Service()
    digest, files = version("a")
    staged = code.stage(digest, service.puller(files))
    assert staged.path == tmp_path / "code" / digest.split(":")[1]
    assert stat.S_IMODE(staged.path.stat().st_mode) == 0o555
    # The same hash as a dataset is another thing: pulled again, into the datasets' folder.
    other = datasets.stage(digest, service.puller(files))
    assert other.path.parent == tmp_path / "datasets" and service.pulls == 2
    staged.release()
    other.release()
    with pytest.raises(StagingError, match="the code directory's content hash 'sha256:x'"):
        code.stage("sha256:x", service.puller(files))


def test_lru_versions_are_evicted_under_the_cap_but_never_one_in_use(tmp_path: Path) -> None:
    cache, service = DatasetCache(tmp_path, cap_bytes=250), Service()
    staged = {}
    for seed in "abc":  # each 101 bytes: a and b fit, c pushes the total over 250
        digest, files = version(seed)
        staged[seed] = cache.stage(digest, service.puller(files))
        if seed == "a":
            staged[seed].release()  # a is idle, b stays in use
        os.utime(staged[seed].path, (1000 + ord(seed), 1000 + ord(seed)))
    # Staging c evicted a (the oldest idle one) and kept b (in use) and c (just staged).
    names = sorted(p.name for p in (tmp_path / "datasets").iterdir() if "." not in p.name)
    assert names == sorted(s.path.name for s in (staged["b"], staged["c"]))
    assert not staged["a"].path.exists()
    # With b in use and c the newest, a smaller cap still cannot evict them.
    assert DatasetCache(tmp_path, cap_bytes=0).evict(keep=staged["c"].path.name) == []
    staged["b"].release()
    assert DatasetCache(tmp_path, cap_bytes=0).evict(keep=staged["c"].path.name) == \
        [staged["b"].path.name]
    staged["c"].release()
    # a evicted can be staged again: pulled once more.
    digest, files = version("a")
    again = cache.stage(digest, service.puller(files))
    assert again.pulled and service.pulls == 4
    again.release()


def test_a_version_being_staged_makes_the_next_job_wait_not_pull(tmp_path: Path) -> None:
    cache, service = DatasetCache(tmp_path, 10**6), Service()
    digest, files = version("w")
    started, proceed = threading.Event(), threading.Event()

    def slow(into: Path) -> Received:
        started.set()
        proceed.wait(10)
        return service.puller(files)(into)

    results = {}
    first = threading.Thread(target=lambda: results.setdefault(1, cache.stage(digest, slow)))
    first.start()
    started.wait(10)
    second = threading.Thread(target=lambda: results.setdefault(
        2, cache.stage(digest, service.puller(files))))
    second.start()
    second.join(0.3)
    assert second.is_alive()  # waiting on the lock
    proceed.set()
    first.join(10)
    second.join(10)
    assert service.pulls == 1 and not results[2].pulled
    for staged in results.values():
        staged.release()


def test_in_use_versions_hold_a_shared_lock(tmp_path: Path) -> None:
    cache = DatasetCache(tmp_path, 10**6)
    digest, files = version("l")
    staged = cache.stage(digest, Service().puller(files))
    with open(tmp_path / "datasets" / (staged.path.name + ".lock"), "ab") as lock:
        with pytest.raises(BlockingIOError):
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)  # another job may use it too
    staged.release()


def test_a_bad_sha256_fails_naming_the_file_and_leaves_nothing(tmp_path: Path) -> None:
    cache = DatasetCache(tmp_path, 10**6)
    digest, files = version("s")
    chunks = list(stream(files))
    chunks[-2] = FileChunk(path=chunks[-2].path, offset=0, data=b"y",
                           size=1, sha256=chunks[-2].sha256)  # sub/labels.txt, altered

    def pull(into: Path) -> Received:
        return receive_files(iter(chunks), into, read_only=True)

    with pytest.raises(StagingError, match=r"sub/labels.txt does not match its sha256"):
        cache.stage(digest, pull)
    assert sorted(p.name for p in (tmp_path / "datasets").iterdir()) == \
        [digest.split(":")[1] + ".lock"]


@pytest.mark.parametrize(("chunks", "message"), [
    ([FileChunk(path="a", offset=0, data=b"abc", size=2, sha256="0")], "longer than its size"),
    ([FileChunk(path="a", offset=0, data=b"a", size=2, sha256="0")], "ended after 1 of its 2"),
    ([FileChunk(path="a", offset=1, data=b"a", size=2, sha256="0")], "at offset 1"),
    ([*stream({"a": b"1"}), *stream({"b": b"2"}), *stream({"a": b"1"})], "came twice"),
    ([FileChunk(path="a", size=1, sha256="0"), FileChunk(path="a", data=b"1", size=2)],
     "disagree"),
])
def test_a_stream_out_of_order_or_short_is_refused(tmp_path: Path, chunks: list[FileChunk],
                                                    message: str) -> None:
    with pytest.raises(StagingError, match=message):
        receive_files(iter(chunks), tmp_path, read_only=False)


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../x", "a/./b", "", "a\\b",
                                  "a/b/..", "a//b"])
def test_paths_that_leave_the_directory_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(StagingError, match="refused the file path"):
        safe_relative(path)
    target = tmp_path / "target"
    target.mkdir()
    with pytest.raises(StagingError):
        receive_files(stream({path: b"evil"}), target, read_only=False)
    assert not (tmp_path / "x").exists() and list(target.iterdir()) == []


def test_a_path_through_a_link_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    target, outside = tmp_path / "target", tmp_path / "outside"
    target.mkdir()
    outside.mkdir()
    (target / "link").symlink_to(outside)
    with pytest.raises(StagingError, match="leaves its directory"):
        receive_files(stream({"link/x": b"evil"}), target, read_only=False)
    assert list(outside.iterdir()) == []


def test_the_checkpoint_is_pulled_fresh_for_each_attempt_once_per_node(tmp_path: Path) -> None:
    pulls: list[int] = []

    def pull(content: bytes):  # type: ignore[no-untyped-def]
        def receive(into: Path) -> Received:
            pulls.append(1)
            return receive_files(stream({"state.pt": content}), into, read_only=False)
        return receive

    first = stage_checkpoint(tmp_path / "job", 1, pull(b"one"))
    assert (first / "state.pt").read_bytes() == b"one"
    assert stage_checkpoint(tmp_path / "job", 1, pull(b"other")) == first  # rank 1, same node
    assert len(pulls) == 1
    second = stage_checkpoint(tmp_path / "job", 2, pull(b"two"))
    assert (second / "state.pt").read_bytes() == b"two" and len(pulls) == 2
    none = stage_checkpoint(tmp_path / "job", 3, None)  # the service holds none
    assert list(none.iterdir()) == []
