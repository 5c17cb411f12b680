"""The cap on one attempt's log: its first `limit` bytes are kept, then a last line says where
it was cut, and the job's further output is discarded while the job runs on. One rule for
every writer of a log (the local wrapper's copier, Docker's log copy, a remote attempt's
pushed lines; the local copier, which runs apart from the service, follows it in its own
code): a log longer than its limit holds the note, and nothing is added after it."""

from __future__ import annotations

DEFAULT_MAX_LOG_BYTES = 1 << 30

def describe_size(size: int) -> str:
    """1073741824 as "1 GiB", 1536 as "1.5 KiB", 100 as "100 bytes"."""
    for unit, power in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << power:
            return f"{size / (1 << power):.4g} {unit}"
    return f"{size} bytes"


def cut_note(limit: int) -> bytes:
    return (f"\n[trainyard] log cut at {describe_size(limit)}; the job's further output was "
            "discarded\n").encode()


def keep(data: bytes, written: int, limit: int) -> bytes:
    """What of `data` to append to a log holding `written` bytes: all of it while it fits;
    at the crossing, the part that fits and the note; once cut (longer than the limit, the
    note in), nothing."""
    if written > limit:
        return b""
    room = limit - written
    return data if len(data) <= room else data[:room] + cut_note(limit)


def is_cut(size: int, limit: int) -> bool:
    return size > limit
