"""Pushed lines are kept exactly once in the attempt's host files: repeats skipped, gaps
refused, a tail a crash left uncommitted cut off before the resend."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainyard.domain.errors import InvalidArgument
from trainyard.domain.log_cap import cut_note
from trainyard.domain.spec import JobSpec
from trainyard.metadata.pushed_streams import PushedStreams, SequenceGap
from trainyard.metadata.workspace import Workspace
from trainyard.store.db import Database
from trainyard.store.jobs import JobStore
from trainyard.store.runtime_streams import RuntimeStreamStore


def _lines(first: int, last: int) -> list[bytes]:
    return [f'{{"step": {i}, "loss": {i / 10}}}'.encode() for i in range(first, last)]


@pytest.fixture
def pushed(db: Database, tmp_path: Path) -> tuple[PushedStreams, str, Path]:
    job_id, _ = JobStore(db).create(JobSpec(name="j", command="true"))
    workspace = Workspace(tmp_path)
    paths = workspace.attempt(job_id, 1)
    paths.create()
    return PushedStreams(RuntimeStreamStore(db), workspace, clock=lambda: 42.0), job_id, \
        paths.metrics_path


def test_repeats_and_overlaps_are_kept_once_and_a_gap_is_refused(
        pushed: tuple[PushedStreams, str, Path]) -> None:
    streams, job_id, metrics = pushed
    assert streams.append(job_id, 1, "metrics", 0, 0, _lines(0, 10)) == 10
    assert streams.append(job_id, 1, "metrics", 0, 0, _lines(0, 10)) == 10  # a retry
    assert streams.append(job_id, 1, "metrics", 0, 5, _lines(5, 15)) == 15  # overlaps
    assert streams.append(job_id, 1, "metrics", 0, 15, []) == 15  # asks where it stands
    with pytest.raises(SequenceGap) as gap:
        streams.append(job_id, 1, "metrics", 0, 20, _lines(20, 25))
    assert gap.value.next_seq == 15 and "next_seq 15" in str(gap.value)
    assert metrics.read_bytes() == b"".join(line + b"\n" for line in _lines(0, 15))
    # Each rank counts its own lines, into the same file.
    assert streams.append(job_id, 1, "metrics", 1, 0, [b'{"rank1": 1}']) == 1
    assert metrics.read_bytes().endswith(b'{"rank1": 1}\n')
    assert streams.last_heartbeat(job_id, 1) == 42.0 and streams.last_heartbeat(job_id, 2) is None


def test_an_uncommitted_tail_is_cut_before_the_resend(
        pushed: tuple[PushedStreams, str, Path]) -> None:
    streams, job_id, metrics = pushed
    streams.append(job_id, 1, "metrics", 0, 0, _lines(0, 3))
    kept = metrics.read_bytes()
    with metrics.open("ab") as fh:  # what a crash between the fsync and the commit leaves
        fh.write(b"".join(line + b"\n" for line in _lines(3, 5)))
    assert streams.append(job_id, 1, "metrics", 0, 3, _lines(3, 6)) == 6
    assert metrics.read_bytes() == kept + b"".join(line + b"\n" for line in _lines(3, 6))


def test_what_a_file_held_before_the_first_push_is_kept(
        pushed: tuple[PushedStreams, str, Path]) -> None:
    streams, job_id, _ = pushed
    log = Workspace(pushed[2].parents[3]).attempt(job_id, 1).log_path
    log.write_bytes(b"launched on n1\n")
    streams.append(job_id, 1, "log", 0, 0, [b"hello", b"world"])
    assert log.read_bytes() == b"launched on n1\nhello\nworld\n"


@pytest.mark.parametrize(("stream", "rank", "first", "lines", "field"), [
    ("stdout", 0, 0, [b"x"], "stream"),
    ("log", -1, 0, [b"x"], "rank"),
    ("log", 0, -1, [b"x"], "first_seq"),
    ("log", 0, 0, [b"two\nlines"], "lines"),
])
def test_a_bad_batch_changes_nothing(pushed: tuple[PushedStreams, str, Path], stream: str,
                                     rank: int, first: int, lines: list[bytes],
                                     field: str) -> None:
    streams, job_id, metrics = pushed
    with pytest.raises(InvalidArgument) as refused:
        streams.append(job_id, 1, stream, rank, first, lines)
    assert refused.value.field == field
    assert metrics.read_bytes() == b""


def test_an_attempt_has_ended_once_every_rank_reported_its_exit(
        pushed: tuple[PushedStreams, str, Path]) -> None:
    streams, job_id, _ = pushed
    assert streams.reported_exit(job_id, 1, 2) is None
    streams.exited(job_id, 1, 1, 0)
    assert streams.reported_exit(job_id, 1, 2) is None  # rank 0 has not said
    streams.exited(job_id, 1, 0, 3)
    assert streams.reported_exit(job_id, 1, 2) == 3  # the non-zero one is the attempt's
    assert streams.reported_exit(job_id, 2, 1) is None  # another attempt knows nothing
    with pytest.raises(InvalidArgument, match="exit_code"):
        streams.exited(job_id, 1, 0, 300)
    with pytest.raises(InvalidArgument, match="rank"):
        streams.exited(job_id, 1, -1, 0)


def test_a_pushed_log_past_its_cap_ends_with_the_note(db: Database, tmp_path: Path) -> None:
    job_id, _ = JobStore(db).create(JobSpec(name="j", command="true"))
    workspace = Workspace(tmp_path)
    paths = workspace.attempt(job_id, 1)
    paths.create()
    streams = PushedStreams(RuntimeStreamStore(db), workspace, max_log_bytes=25)
    assert streams.append(job_id, 1, "log", 0, 0, [b"0123456789"] * 2) == 2
    assert streams.append(job_id, 1, "log", 0, 2, [b"abcdefghij"] * 3) == 5
    assert streams.append(job_id, 1, "log", 0, 2, [b"abcdefghij"] * 3) == 5  # a retry
    assert streams.append(job_id, 1, "log", 0, 5, [b"late"]) == 6  # kept as dropped
    assert paths.log_path.read_bytes() == b"0123456789\n0123456789\nabc" + cut_note(25)
    # Metrics have no cap here: the tracker's ingestion counts points (store.metrics).
    assert streams.append(job_id, 1, "metrics", 0, 0, _lines(0, 10)) == 10
