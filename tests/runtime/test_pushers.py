"""The numbering of pushed lines: acknowledged lines dropped, a repeat skipped by the
service, a gap resolved by asking where it stands."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainyard.runtime.pushers import FileTail, LineSplitter, Outbox, push_pending
from trainyard.runtime.wire import PushReply, PushRequest


class Gap(Exception):
    pass


class Keeper:
    """The service's side of one (stream, rank), as runtime.proto describes it."""

    def __init__(self, next_seq: int = 0) -> None:
        self.kept: list[bytes] = []
        self.next_seq = next_seq
        self.requests: list[PushRequest] = []
        self.lose_reply_once = False

    def __call__(self, request: PushRequest) -> PushReply:
        self.requests.append(request)
        if request.first_seq > self.next_seq:
            raise Gap()
        fresh = request.lines[self.next_seq - request.first_seq:]
        self.kept += fresh
        self.next_seq += len(fresh)
        if self.lose_reply_once:
            self.lose_reply_once = False
            raise ConnectionError("reply lost")
        return PushReply(next_seq=self.next_seq)


def lines(n: int, start: int = 0) -> list[bytes]:
    return [f"line {i}".encode() for i in range(start, start + n)]


def test_batches_are_the_oldest_lines_and_acknowledged_ones_are_dropped() -> None:
    outbox = Outbox("log", 1)
    outbox.add(lines(1200))
    keeper = Keeper()
    push_pending(outbox, keeper, lambda exc: isinstance(exc, Gap))
    assert keeper.kept == lines(1200) and len(outbox) == 0
    assert [(r.first_seq, len(r.lines), r.rank) for r in keeper.requests] == \
        [(0, 500, 1), (500, 500, 1), (1000, 200, 1)]
    outbox.add(lines(1, 1200))
    assert outbox.batch().first_seq == 1200


def test_a_batch_repeated_after_a_lost_reply_is_kept_once() -> None:
    outbox = Outbox("metrics", 0)
    outbox.add(lines(3))
    keeper = Keeper()
    keeper.lose_reply_once = True
    with pytest.raises(ConnectionError):
        push_pending(outbox, keeper, lambda exc: isinstance(exc, Gap))
    assert len(outbox) == 3  # not acknowledged: sent again
    outbox.add(lines(2, 3))
    push_pending(outbox, keeper, lambda exc: isinstance(exc, Gap))
    assert keeper.kept == lines(5)
    assert [r.first_seq for r in keeper.requests] == [0, 0]


def test_a_reply_ahead_of_the_batch_drops_everything_it_covers() -> None:
    outbox = Outbox("log", 0)
    outbox.add(lines(4))
    outbox.acknowledged(2)
    assert (outbox.first_seq, list(outbox.lines)) == (2, lines(2, 2))
    outbox.acknowledged(10)  # the service holds more than we sent
    assert (outbox.first_seq, len(outbox)) == (10, 0)
    outbox.add([b"x"])
    assert outbox.batch() == PushRequest("log", 0, 10, [b"x"])


def test_a_gap_is_resolved_by_resending_from_the_services_next_seq() -> None:
    # The service lost lines 3..4 (they were acknowledged and dropped here): it refuses a
    # batch from 5, is asked where it stands, and the held lines go on from there.
    outbox = Outbox("log", 0)
    outbox.add(lines(7))
    outbox.acknowledged(5)
    keeper = Keeper(next_seq=3)
    keeper.kept = lines(3)
    push_pending(outbox, keeper, lambda exc: isinstance(exc, Gap))
    assert keeper.kept == lines(3) + lines(2, 5)
    assert [(r.first_seq, len(r.lines)) for r in keeper.requests] == [(5, 2), (0, 0), (3, 2)]
    assert outbox.lost == 2 and outbox.first_seq == 5


def test_a_service_that_keeps_refusing_is_not_asked_forever() -> None:
    outbox = Outbox("log", 0)
    outbox.add(lines(1))

    def refuse(request: PushRequest) -> PushReply:
        if request.lines:
            raise Gap()
        return PushReply(next_seq=0)

    with pytest.raises(Gap):
        push_pending(outbox, refuse, lambda exc: isinstance(exc, Gap))


def test_a_batch_stays_under_its_byte_limit_but_holds_at_least_one_line() -> None:
    outbox = Outbox("log", 0)
    outbox.add([b"a" * 600, b"b" * 600, b"c"])
    assert outbox.batch(max_bytes=1000).lines == [b"a" * 600]
    outbox.add([b"d" * 5000])
    assert len(outbox.batch(max_bytes=10).lines) == 1


def test_lines_are_cut_at_newlines_and_long_runs_in_pieces() -> None:
    splitter = LineSplitter(longest=4)
    assert splitter.feed(b"ab\ncd") == [b"ab"]
    assert splitter.feed(b"efghijk") == [b"cdef", b"ghij"]  # no newline yet: cut
    assert splitter.feed(b"\nl") == [b"k"]
    assert splitter.end() == [b"l"] and splitter.end() == []


def test_the_metrics_tail_reads_complete_lines_once(tmp_path: Path) -> None:
    tail = FileTail(tmp_path / "m.jsonl")
    assert tail.read() == []
    with open(tail.path, "ab") as file:
        file.write(b'{"a":1}\n\n{"b":')
        file.flush()
        assert tail.read() == [b'{"a":1}']
        file.write(b'2}\n')
    assert tail.read() == [b'{"b":2}'] and tail.read() == []
