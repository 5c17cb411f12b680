"""What one attempt of a remote job may ask of the service, given the grant its job token
proved (auth/job_grants.py): no use case takes a job id, so a token of one job can act on
nothing of another. The attempt's files on this host stay the one interface: pushed lines
land in its metrics file and log, an uploaded model in its model directory, a checkpoint
in the job's checkpoint directory, where the tracker and the other use cases find them as
they do for a local job."""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from trainyard.auth.job_grants import JobGrant, JobGrants
from trainyard.domain.errors import FailedPrecondition, PermissionDenied
from trainyard.domain.notice import NOTICE_FILE, stop_due
from trainyard.domain.states import JobState
from trainyard.metadata.file_chunks import (
    FileChunk,
    ReceivedTree,
    chunks_of,
    receive_tree,
    remove_tree,
    replace_dir,
    tree_entries,
)
from trainyard.metadata.hashing import read_manifest
from trainyard.metadata.pushed_streams import EXIT, HEARTBEAT, PushedStreams, SequenceGap
from trainyard.metadata.workspace import AttemptPaths, Workspace
from trainyard.runtime.notice import GivenNotice, read_notice
from trainyard.store.datasets import DatasetStore
from trainyard.store.preemption_notes import PreemptionNotes
from trainyard.store.records import DatasetRecord

__all__ = ["AttemptInfo", "FileChunk", "JobRuntimeService", "PushResult", "SequenceGap",
           "StoredFiles"]

log = logging.getLogger(__name__)

HASH_PREFIX = "sha256:"
HEARTBEAT_INTERVAL_S = 5.0
LOCK_STRIPES = 64


@dataclass(frozen=True)
class AttemptInfo:
    job_id: str
    attempt: int
    dataset_hash: str  # "sha256:<hex>"; empty: the job reads no dataset
    dataset_bytes: int
    dataset_files: int
    has_checkpoint: bool
    heartbeat_interval_s: float
    code_hash: str = ""  # "sha256:<hex>" of its algorithm's code directory; empty: none
    code_bytes: int = 0
    code_files: int = 0


@dataclass(frozen=True)
class StoredFiles:
    files: int
    bytes: int


@dataclass(frozen=True)
class PushResult:
    next_seq: int
    stop_requested: bool  # cancelled or preempted: the attempt should stop
    notice: GivenNotice | None = None  # it is about to be preempted: its notice


class JobRuntimeService:
    def __init__(self, grants: JobGrants, datasets: DatasetStore, workspace: Workspace,
                 streams: PushedStreams,
                 heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S,
                 on_exit: Callable[[], None] = lambda: None,
                 notes: PreemptionNotes | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.on_exit = on_exit
        # Each checkpoint a remote attempt uploads is noted as its last (the work a
        # preemption loses counts from it), as the tracker notes a local one's.
        self.notes = notes
        self.clock = clock
        self.grants = grants
        self.datasets = datasets
        self.workspace = workspace
        self.streams = streams
        self.heartbeat_interval_s = heartbeat_interval_s
        # One upload at a time replaces a job's checkpoint or an attempt's model.
        self._locks = tuple(threading.Lock() for _ in range(LOCK_STRIPES))

    def authenticate(self, credential: str) -> JobGrant:
        """The grant of a presented job token, or Unauthenticated."""
        return self.grants.verify(credential)

    def attempt(self, grant: JobGrant, node: str, rank: int) -> AttemptInfo:
        log.info("job %s: rank %d on %s started its runtime", grant.name, rank,
                 node[:64] or "an unnamed node")
        self.streams.heartbeat(grant.job_id, grant.attempt)
        record = self._dataset(grant)
        code = self._code(grant)
        return AttemptInfo(
            job_id=grant.job_id, attempt=grant.attempt,
            dataset_hash=HASH_PREFIX + record.version if record else "",
            dataset_bytes=record.size_bytes if record else 0,
            dataset_files=record.file_count if record else 0,
            has_checkpoint=self._has_checkpoint(grant),
            heartbeat_interval_s=self.heartbeat_interval_s,
            code_hash=HASH_PREFIX + grant.job.spec.code_hash if code else "",
            code_bytes=sum(size for _, _, size in code[1]) if code else 0,
            code_files=len(code[1]) if code else 0)

    def pull_dataset(self, grant: JobGrant, content_hash: str) -> Iterator[FileChunk]:
        """The files of the job's own dataset version; any other is refused."""
        record = self._dataset(grant)
        wanted = content_hash.removeprefix(HASH_PREFIX)
        if record is None or wanted != record.version:
            own = f"its own, {HASH_PREFIX}{record.version}" if record else "none: it reads no " \
                "dataset"
            raise PermissionDenied(f"job {grant.name} may pull only its dataset version "
                                   f"({own}), not {content_hash[:80]!r}")
        stored = Path(record.path)
        try:
            files = read_manifest(stored)
        except (OSError, ValueError) as exc:
            raise FailedPrecondition(f"the files of dataset {record.name}:"
                                     f"{record.version[:12]} cannot be read on the server: "
                                     f"{exc}") from None
        return chunks_of(stored, files)

    def pull_code(self, grant: JobGrant, content_hash: str) -> Iterator[FileChunk]:
        """The files of the job's own algorithm code directory; any other is refused."""
        own = grant.job.spec.code_hash
        if not own or content_hash.removeprefix(HASH_PREFIX) != own:
            mine = f"its own, {HASH_PREFIX}{own}" if own else "none: it runs no code directory"
            raise PermissionDenied(f"job {grant.name} may pull only its code directory "
                                   f"({mine}), not {content_hash[:80]!r}")
        code = self._code(grant)
        assert code is not None
        return chunks_of(*code)

    def pull_checkpoint(self, grant: JobGrant) -> Iterator[FileChunk]:
        """The job's checkpoint as its last upload (or a local attempt) left it; none: no
        chunk."""
        checkpoint = self._paths(grant).checkpoint_dir
        with self._lock(checkpoint):
            if not checkpoint.is_dir():
                return iter(())
            files = tree_entries(checkpoint, f"the checkpoint of job {grant.job_id}")
        return chunks_of(checkpoint, files)

    def push_checkpoint(self, grant: JobGrant, chunks: Iterable[FileChunk]) -> StoredFiles:
        """Replace the job's checkpoint with the files streamed, once all arrived whole;
        any failed check leaves the one before in place. Noted as the attempt's last."""
        stored = self._replace(grant, self._paths(grant).checkpoint_dir, chunks, "checkpoint")
        if self.notes is not None:
            self.notes.uploaded(grant.job_id, grant.attempt, self.clock())
        return stored

    def push_model(self, grant: JobGrant, chunks: Iterable[FileChunk]) -> StoredFiles:
        """The attempt's model files, into its model directory, checked the same way; a
        success of the job then makes them a model version as for a local job."""
        return self._replace(grant, self._paths(grant).model_dir, chunks, "model")

    def push(self, grant: JobGrant, stream: str, rank: int, first_seq: int,
             lines: Sequence[bytes], exit_code: int = 0) -> PushResult:
        """An ordered batch of metric records or log lines, a heartbeat, or a rank's end;
        kept exactly once (metadata/pushed_streams.py). Raises SequenceGap for a batch past
        next_seq."""
        if stream == HEARTBEAT:
            self.streams.heartbeat(grant.job_id, grant.attempt)
            next_seq = 0
        elif stream == EXIT:
            self.streams.exited(grant.job_id, grant.attempt, rank, exit_code)
            self.on_exit()  # the tracker looks now, not at the engine's next word
            next_seq = 0
        else:
            next_seq = self.streams.append(grant.job_id, grant.attempt, stream, rank,
                                           first_seq, lines)
        return PushResult(next_seq, *self._stop_or_notice(grant))

    def _stop_or_notice(self, grant: JobGrant) -> tuple[bool, GivenNotice | None]:
        """Whether the attempt should stop, and the notice of its preemption when it was
        given one: the tracker wrote it in the attempt's working directory on this host
        (tracker/notice.py) and stops it through its engine once it is due, which is
        when the agent hears the stop here too."""
        job = grant.job
        if job.cancel_requested or not job.preempt_requested:
            return job.cancel_requested, None
        if job.state is not JobState.RUNNING:
            return True, None  # stopped before it ran, as every stop
        if job.notice_at is None:
            return False, None  # the tracker gives it notice on its next pass
        notice = read_notice(self._paths(grant).workdir / NOTICE_FILE)
        if notice is None:
            return True, None  # its notice could not be written: stopped at once, as before
        return stop_due(notice_at=job.notice_at, checkpoint_at=job.checkpoint_at,
                        grace_s=notice.grace_s, now=self.clock()), notice

    def last_heartbeat(self, job_id: str, attempt: int) -> float | None:
        """When the attempt last showed a sign of life (a heartbeat, a push, its start)."""
        return self.streams.last_heartbeat(job_id, attempt)

    def _replace(self, grant: JobGrant, target: Path, chunks: Iterable[FileChunk],
                 what: str) -> StoredFiles:
        received: ReceivedTree = receive_tree(chunks, target, what)
        try:
            with self._lock(target):
                # A stale attempt's upload (its node failed, the job moved on) must not
                # replace what a newer attempt keeps there.
                self.grants.still_current(grant)
                replace_dir(received.directory, target)
        except BaseException:
            remove_tree(received.directory)
            raise
        return StoredFiles(received.files, received.bytes)

    def _dataset(self, grant: JobGrant) -> DatasetRecord | None:
        ref = grant.job.spec.dataset
        if ref is None:
            return None
        record = self.datasets.get(ref.name, ref.version)
        if record is None:
            raise FailedPrecondition(f"dataset {ref.name}:{ref.version[:12]} of job "
                                     f"{grant.job_id} is no longer registered")
        return record

    def _code(self, grant: JobGrant) -> tuple[Path, tuple[tuple[str, str, int], ...]] | None:
        """Where the job's code directory is stored and its files, from its manifest."""
        code_hash = grant.job.spec.code_hash
        if not code_hash:
            return None
        stored = self.workspace.code_of(code_hash)
        try:
            return stored, read_manifest(stored)
        except (OSError, ValueError) as exc:
            raise FailedPrecondition(f"the code directory {code_hash[:12]} of job "
                                     f"{grant.job_id} cannot be read on the server: "
                                     f"{exc}") from None

    def _has_checkpoint(self, grant: JobGrant) -> bool:
        checkpoint = self._paths(grant).checkpoint_dir
        return checkpoint.is_dir() and any(checkpoint.iterdir())

    def _paths(self, grant: JobGrant) -> AttemptPaths:
        return self.workspace.attempt(grant.job_id, grant.attempt)

    def _lock(self, path: Path) -> threading.Lock:
        return self._locks[zlib.crc32(str(path).encode()) % LOCK_STRIPES]
