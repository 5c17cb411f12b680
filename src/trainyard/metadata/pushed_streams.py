"""Lines a remote attempt pushes, kept exactly once in its host files: METRICS_PATH's file
for "metrics", the output log for "log". The host files stay the one interface, so the
tracker ingests pushed metrics and `trainyard logs -f` follows a pushed log as they do for
a local job.

Each (attempt, stream) has a row: the file's committed byte offset and each rank's next
sequence number. A push, under its file's lock: skip the lines already kept, refuse a batch
that would leave a gap, cut the file back to the committed offset (a tail written before a
crash and never committed; its sender resends it), append, fsync, then commit offset and
sequence numbers together. A retried push therefore neither loses nor doubles a line. A
log past its cap ends with the note of domain.log_cap; lines pushed after it are counted as
kept (their sender moves on) and dropped.
"""

from __future__ import annotations

import os
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from trainyard.domain.errors import FailedPrecondition, InvalidArgument
from trainyard.domain.log_cap import DEFAULT_MAX_LOG_BYTES, keep
from trainyard.metadata.workspace import AttemptPaths, Workspace
from trainyard.store.runtime_streams import RuntimeStreamStore, StreamPosition

METRICS = "metrics"
LOG = "log"
HEARTBEAT = "heartbeat"
EXIT = "exit"
STREAMS = (METRICS, LOG, HEARTBEAT, EXIT)
MAX_RANK = 65535
MAX_LINE_BYTES = 1 << 20
LOCK_STRIPES = 64  # files share these locks: bounded memory, one writer per file
REMEMBERED_HEARTBEATS = 1 << 16


class SequenceGap(FailedPrecondition):
    """A batch starts past the lines kept so far: the lines between were never received."""

    def __init__(self, stream: str, rank: int, first_seq: int, next_seq: int) -> None:
        super().__init__(f"the {stream} batch of rank {rank} starts at line {first_seq}, but "
                         f"the service has kept lines up to {next_seq}: resend from "
                         f"next_seq {next_seq}")
        self.next_seq = next_seq


class PushedStreams:
    def __init__(self, store: RuntimeStreamStore, workspace: Workspace,
                 clock: Callable[[], float] = time.time,
                 max_log_bytes: int = DEFAULT_MAX_LOG_BYTES) -> None:
        self.store = store
        self.max_log_bytes = max_log_bytes  # a log is cut there (domain.log_cap)
        self.workspace = workspace
        self.clock = clock
        self._locks = tuple(threading.Lock() for _ in range(LOCK_STRIPES))
        self._beats_lock = threading.Lock()
        self._beats: OrderedDict[tuple[str, int], float] = OrderedDict()
        self._exits: OrderedDict[tuple[str, int], dict[int, int]] = OrderedDict()

    def append(self, job_id: str, attempt: int, stream: str, rank: int, first_seq: int,
               lines: Sequence[bytes]) -> int:
        """Keep the lines of this batch not kept yet; return the rank's next seq. Raises
        SequenceGap for a batch that starts past it, InvalidArgument for a bad batch."""
        path = _stream_path(self.workspace.attempt(job_id, attempt), stream)
        _check_batch(rank, first_seq, lines)
        self.heartbeat(job_id, attempt)  # a push is a sign of life too
        with self._locks[zlib.crc32(str(path).encode()) % LOCK_STRIPES]:
            before = self.store.position(job_id, attempt, stream)
            next_seq = before.next_seq(rank)
            if first_seq > next_seq:
                raise SequenceGap(stream, rank, first_seq, next_seq)
            fresh = lines[next_seq - first_seq:]
            if not fresh:
                return next_seq  # all kept already: a repeat, or a question for next_seq
            limit = self.max_log_bytes if stream == LOG else None
            end = _append(path, before, b"".join(line + b"\n" for line in fresh), limit)
            seqs = dict(before.next_seqs)
            seqs[rank] = next_seq + len(fresh)
            self.store.commit(job_id, attempt, stream, before,
                              StreamPosition(end, seqs, stored=True))
            return seqs[rank]

    def heartbeat(self, job_id: str, attempt: int) -> None:
        with self._beats_lock:
            self._beats[(job_id, attempt)] = self.clock()
            self._beats.move_to_end((job_id, attempt))
            while len(self._beats) > REMEMBERED_HEARTBEATS:
                self._beats.popitem(last=False)

    def exited(self, job_id: str, attempt: int, rank: int, exit_code: int) -> None:
        """A rank's command ended and everything it pushes and uploads is in."""
        if not 0 <= rank <= MAX_RANK:
            raise InvalidArgument("rank", f"must be between 0 and {MAX_RANK}")
        if not 0 <= exit_code <= 255:
            raise InvalidArgument("exit_code", "must be between 0 and 255")
        self.heartbeat(job_id, attempt)
        with self._beats_lock:
            self._exits.setdefault((job_id, attempt), {})[rank] = exit_code
            self._exits.move_to_end((job_id, attempt))
            while len(self._exits) > REMEMBERED_HEARTBEATS:
                self._exits.popitem(last=False)

    def reported_exit(self, job_id: str, attempt: int, ranks: int) -> int | None:
        """The attempt's exit code once each of its `ranks` reported its end (the first
        non-zero one, else 0); None until then."""
        with self._beats_lock:
            codes = dict(self._exits.get((job_id, attempt), {}))
        if any(rank not in codes for rank in range(ranks)):
            return None
        return next((codes[r] for r in range(ranks) if codes[r]), 0)

    def last_heartbeat(self, job_id: str, attempt: int) -> float | None:
        """When the attempt last showed a sign of life to this service (a heartbeat or a
        push), or None: not since this service started."""
        with self._beats_lock:
            return self._beats.get((job_id, attempt))


def _stream_path(paths: AttemptPaths, stream: str) -> Path:
    if stream == METRICS:
        return paths.metrics_path
    if stream == LOG:
        return paths.log_path
    raise InvalidArgument("stream", f"must be one of {', '.join(STREAMS)}, not "
                          f"{stream[:40]!r}")


def _check_batch(rank: int, first_seq: int, lines: Sequence[bytes]) -> None:
    if not 0 <= rank <= MAX_RANK:
        raise InvalidArgument("rank", f"must be between 0 and {MAX_RANK}")
    if first_seq < 0:
        raise InvalidArgument("first_seq", "must not be negative")
    for index, line in enumerate(lines):
        if b"\n" in line:
            raise InvalidArgument("lines", f"line {first_seq + index} holds a newline; each "
                                  "line is sent without its own")
        if len(line) > MAX_LINE_BYTES:
            raise InvalidArgument("lines", f"line {first_seq + index} is longer than "
                                  f"{MAX_LINE_BYTES} bytes")


def _append(path: Path, before: StreamPosition, data: bytes, limit: int | None) -> int:
    """Write data after the committed bytes, durably; the file's new end. With a `limit`
    (a log's), what is past it is dropped, and the note of the cut written once."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        size = os.fstat(fd).st_size
        # Without a row yet, what the file holds is not ours (an executor's own lines):
        # keep it. With one, bytes past the committed offset were never acknowledged.
        start = min(size, before.committed_offset) if before.stored else size
        if start < size:
            os.ftruncate(fd, start)
        view = memoryview(data if limit is None else keep(data, start, limit))
        offset = start
        while view:
            written = os.pwrite(fd, view, offset)
            view = view[written:]
            offset += written
        os.fsync(fd)
        return offset
    finally:
        os.close(fd)
