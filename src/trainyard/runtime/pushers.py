"""Ordered, numbered batches of lines for the service's Push, so that a retried push neither
loses nor doubles a line.

Each (stream, rank) numbers its lines from 0. A line stays in its outbox until a reply's
next_seq passes it; a batch is always the oldest unacknowledged lines, so resending after a
network error repeats lines the service skips."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from trainyard.runtime.wire import PushReply, PushRequest

BATCH_LINES = 500
BATCH_BYTES = 1024 * 1024  # well under gRPC's message limit
FLUSH_EVERY = 0.2  # seconds: output reaches the service well within a second
MAX_GAPS = 3  # refusals in a row after resyncing: the service is not keeping count


class Outbox:
    """The lines of one (stream, rank) not yet acknowledged."""

    def __init__(self, stream: str, rank: int) -> None:
        self.stream = stream
        self.rank = rank
        self.first_seq = 0  # the sequence number of the oldest line held
        self.lines: deque[bytes] = deque()
        self.lost = 0  # lines the service never got and can no longer be sent
        self._lock = threading.Lock()

    def add(self, lines: list[bytes]) -> None:
        with self._lock:
            self.lines.extend(lines)

    def __len__(self) -> int:
        return len(self.lines)

    def batch(self, max_lines: int = BATCH_LINES, max_bytes: int = BATCH_BYTES
              ) -> PushRequest:
        """The oldest unacknowledged lines (at least one when any are held)."""
        with self._lock:
            lines: list[bytes] = []
            size = 0
            for line in self.lines:
                if lines and (len(lines) >= max_lines or size + len(line) > max_bytes):
                    break
                lines.append(line)
                size += len(line)
            return PushRequest(self.stream, self.rank, self.first_seq, lines)

    def acknowledged(self, next_seq: int) -> None:
        """The service holds every line below next_seq: drop those. A next_seq below the
        oldest line held means lines it lost that were dropped here already; the lines
        held are renumbered from its next_seq, so that the stream goes on."""
        with self._lock:
            if next_seq < self.first_seq:
                self.lost += self.first_seq - next_seq
                self.first_seq = next_seq
                return
            drop = min(next_seq - self.first_seq, len(self.lines))
            for _ in range(drop):
                self.lines.popleft()
            self.first_seq = next_seq if not self.lines else self.first_seq + drop


Send = Callable[[PushRequest], PushReply]


def push_pending(outbox: Outbox, send: Send, is_gap: Callable[[Exception], bool]
                 ) -> bool:
    """Send the outbox's lines batch by batch until it is empty. A refused gap (the
    service expects an earlier line) is resolved by asking where it stands: an empty batch
    at 0 is never past its next_seq. Returns whether any reply asked the job to stop."""
    stop = False
    gaps = 0
    while len(outbox):
        request = outbox.batch()
        try:
            reply = send(request)
            gaps = 0
        except Exception as exc:
            gaps += 1
            if not is_gap(exc) or gaps > MAX_GAPS:
                raise
            reply = send(PushRequest(outbox.stream, outbox.rank, 0, []))
        stop |= reply.stop_requested
        outbox.acknowledged(reply.next_seq)
    return stop


class LineSplitter:
    """Bytes as they arrive, cut into lines (a long run without a newline is cut at
    `longest`)."""

    def __init__(self, longest: int) -> None:
        self.longest = longest
        self.rest = b""

    def feed(self, data: bytes) -> list[bytes]:
        *lines, self.rest = (self.rest + data).split(b"\n")
        while len(self.rest) > self.longest:
            lines.append(self.rest[:self.longest])
            self.rest = self.rest[self.longest:]
        return lines

    def end(self) -> list[bytes]:
        rest, self.rest = self.rest, b""
        return [rest] if rest else []


@dataclass
class FileTail:
    """The complete lines appended to a file since the last read (METRICS_PATH)."""

    path: Path
    offset: int = 0

    def read(self) -> list[bytes]:
        try:
            with open(self.path, "rb") as file:
                file.seek(self.offset)
                data = file.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1  # a line still being written waits for its newline
        self.offset += end
        return [line for line in data[:end].split(b"\n") if line.strip()]
