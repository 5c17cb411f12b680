"""How far each pushed stream of an attempt is committed: the byte offset in its host file
and each rank's next sequence number, moved together in one statement."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import bindparam, insert, select, update

from trainyard.store.db import Database
from trainyard.store.schema import runtime_streams

_KEY = (runtime_streams.c.job_id == bindparam("b_job"),
        runtime_streams.c.attempt == bindparam("b_attempt"),
        runtime_streams.c.stream == bindparam("b_stream"))
_SELECT = select(runtime_streams.c.committed_offset, runtime_streams.c.seqs).where(*_KEY)
_INSERT = insert(runtime_streams)
_UPDATE = update(runtime_streams).where(*_KEY).values(
    committed_offset=bindparam("b_offset"), seqs=bindparam("b_seqs"))


@dataclass(frozen=True)
class StreamPosition:
    committed_offset: int = 0
    next_seqs: dict[int, int] = field(default_factory=dict)  # rank -> next seq
    stored: bool = False  # whether a row holds it yet

    def next_seq(self, rank: int) -> int:
        return self.next_seqs.get(rank, 0)


class RuntimeStreamStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def position(self, job_id: str, attempt: int, stream: str) -> StreamPosition:
        with self.db.read() as conn:
            row = conn.execute(_SELECT, {"b_job": job_id, "b_attempt": attempt,
                                         "b_stream": stream}).first()
        if row is None:
            return StreamPosition()
        seqs = {int(rank): int(seq) for rank, seq in dict(row.seqs).items()}
        return StreamPosition(int(row.committed_offset), seqs, stored=True)

    def commit(self, job_id: str, attempt: int, stream: str, before: StreamPosition,
               after: StreamPosition) -> None:
        """Record `after` where `before` was read. The caller holds the stream's lock, so
        nobody moved the row in between."""
        seqs = {str(rank): seq for rank, seq in sorted(after.next_seqs.items())}
        with self.db.write() as conn:
            if before.stored:
                conn.execute(_UPDATE, {"b_job": job_id, "b_attempt": attempt,
                                       "b_stream": stream, "b_offset": after.committed_offset,
                                       "b_seqs": seqs})
            else:
                conn.execute(_INSERT, {"job_id": job_id, "attempt": attempt, "stream": stream,
                                       "committed_offset": after.committed_offset,
                                       "seqs": seqs})
