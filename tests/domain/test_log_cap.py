"""One rule for a log's cap: its first bytes are kept, then one note, then nothing."""

from __future__ import annotations

import pytest

from trainyard.domain.log_cap import cut_note, describe_size, is_cut, keep


def test_a_log_keeps_what_fits_then_the_note_then_nothing() -> None:
    assert keep(b"abc", 0, 10) == b"abc"
    assert keep(b"abcdefgh", 5, 10) == b"abcde" + cut_note(10)
    assert keep(b"x", 10, 10) == cut_note(10)  # full to the byte: the next byte cuts it
    cut = 10 + len(cut_note(10))
    assert is_cut(cut, 10) and keep(b"more", cut, 10) == b""
    assert not is_cut(10, 10)


def test_the_note_says_where() -> None:
    assert cut_note(1 << 30) == (b"\n[trainyard] log cut at 1 GiB; the job's further "
                                 b"output was discarded\n")


@pytest.mark.parametrize(("size", "said"), [
    (1 << 30, "1 GiB"), (1536, "1.5 KiB"), (100, "100 bytes"), (5 << 40, "5 TiB"),
    (200 << 20, "200 MiB"),
])
def test_sizes_as_people_say_them(size: int, said: str) -> None:
    assert describe_size(size) == said
