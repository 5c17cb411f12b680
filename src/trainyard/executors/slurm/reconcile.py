"""One look at the controller for all of this service's jobs: `scontrol show job -o` at most
once per interval, shared by every poll in that interval, refreshed lazily by a poll and by a
background watcher that calls the exit listener when one of them changes state. A thousand
jobs cost one call per interval, not a thousand."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from trainyard.executors.slurm.commands import SlurmCommands, SlurmError
from trainyard.executors.slurm.jobs import SlurmJob, killed_by_signal, ours, parse_jobs

log = logging.getLogger(__name__)

MIN_INTERVAL_S = 0.5
# Node states in which a node has failed the jobs on it.
_FAILED_STATES = "down,drain,fail,no_respond"


@dataclass(frozen=True)
class Snapshot:
    jobs: Mapping[str, SlurmJob]  # this instance's, by name (the handle)
    taken_at: float  # monotonic time the look began (jobs submitted after are not in it)
    done_at: float = float("-inf")  # when it ended: how old what it says is
    away: str | None = None  # why the controller did not answer; `jobs` is the last known
    failed_nodes: frozenset[str] = field(default_factory=frozenset)


class Reconciler:
    def __init__(self, commands: SlurmCommands, comment: str, interval_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.commands = commands
        self.comment = comment
        self.interval_s = max(MIN_INTERVAL_S, interval_s)
        self.clock = clock
        self._lock = threading.Lock()
        self._snapshot = Snapshot({}, float("-inf"))
        self._listener: Callable[[str], None] = lambda handle: None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def set_listener(self, listener: Callable[[str], None]) -> None:
        self._listener = listener

    def snapshot(self, *, fresher_than: float | None = None) -> Snapshot:
        """The last look if it is recent enough (and taken after `fresher_than`), else a new
        one."""
        changed: list[str] = []
        with self._lock:
            snap = self._snapshot
            # From the end of the last look: a controller that hangs each call to its timeout
            # is asked once per interval still, not once per poll waiting on the lock.
            stale = self.clock() - max(snap.taken_at, snap.done_at) >= self.interval_s
            if stale or (fresher_than is not None and snap.taken_at <= fresher_than):
                snap = self._look()
                changed = _changes(self._snapshot, snap)
                self._snapshot = snap
        for handle in changed:
            try:
                self._listener(handle)
            except Exception:
                log.exception("the exit listener failed for %s", handle)
        return snap

    def _look(self) -> Snapshot:
        now = self.clock()
        try:
            text = self.commands.run(["scontrol", "show", "job", "-o"])
        except SlurmError as exc:
            return Snapshot(self._snapshot.jobs, now, self.clock(), away=str(exc),
                            failed_nodes=self._snapshot.failed_nodes)
        jobs = ours(parse_jobs(text), self.comment)
        failed: frozenset[str] = frozenset()
        if any(job.state in ("NODE_FAIL", "BOOT_FAIL") or killed_by_signal(job)
               for job in jobs.values()):
            try:
                out = self.commands.run(["sinfo", "--noheader", "--Node",
                                         f"--states={_FAILED_STATES}", "--format=%N"])
                failed = frozenset(out.split())
            except SlurmError:
                pass  # the message then names every node of the allocation
        return Snapshot(jobs, now, self.clock(), failed_nodes=failed)

    def watch(self) -> None:
        """Start the background watcher (once)."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="slurm-reconcile",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.snapshot()
            except Exception:
                log.exception("reconciling with Slurm failed")

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=self.commands.timeout + 1)


def _changes(before: Snapshot, after: Snapshot) -> list[str]:
    """The handles whose state moved between two looks (a job gone counts as a move)."""
    if after.away is not None:
        return []
    names = set(before.jobs) | set(after.jobs)
    return sorted(name for name in names if _state(before, name) != _state(after, name))


def _state(snap: Snapshot, name: str) -> str:
    job = snap.jobs.get(name)
    return job.state if job is not None else ""
