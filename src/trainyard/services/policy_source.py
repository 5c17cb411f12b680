"""The policy a server runs: the declared file, reloadable without a restart, or (without a
file) FIFO with one open queue. The scheduler reads it afresh on every pass."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection
from pathlib import Path

from trainyard.domain import policy as cfg
from trainyard.scheduler import Decisions, FifoPolicy, Snapshot
from trainyard.scheduler.queues import QueuePolicy
from trainyard.services.policy_file import PolicyError, load_policy

log = logging.getLogger(__name__)


class PolicySource:
    def __init__(self, path: Path | None, executors: Collection[str]) -> None:
        self.path = path
        self.executors = frozenset(executors)
        self._lock = threading.Lock()
        self._current: cfg.Policy | None = None
        self.loaded_at = time.time()
        if path is not None:
            self._current = self._read()

    @property
    def current(self) -> cfg.Policy | None:
        return self._current

    def reload(self) -> cfg.Policy | None:
        """Read the file again; on any problem keep the policy in force and raise."""
        if self.path is None:
            return None
        fresh = self._read()
        with self._lock:
            self._current = fresh
            self.loaded_at = time.time()
        log.info("policy reloaded from %s: %d queues, %d pools, %d teams", self.path,
                 len(fresh.queues), len(fresh.pools), len(fresh.teams))
        return fresh

    def _read(self) -> cfg.Policy:
        assert self.path is not None
        policy = load_policy(self.path)
        missing = sorted({p.executor for p in policy.pools.values()} - self.executors)
        if missing:
            raise PolicyError([f"{self.path}: pools use the {', '.join(missing)} executor, "
                               "which this server does not run (start it with --docker)"])
        return policy


class ActivePolicy:
    """A scheduler.Policy that decides by whatever the source holds at each pass: without a
    policy file, FIFO under the server's own limit on running jobs."""

    def __init__(self, source: PolicySource, max_running: int) -> None:
        self.source = source
        self._fifo = FifoPolicy(max_running)
        self._queues: QueuePolicy | None = None  # built once per policy: it indexes quotas

    @property
    def orders_by_service(self) -> bool:
        current = self.source.current
        return current is not None and current.service_levels

    def schedule(self, snapshot: Snapshot) -> Decisions:
        current = self.source.current
        if current is None:
            return self._fifo.schedule(snapshot)
        if self._queues is None or self._queues.policy is not current:
            self._queues = QueuePolicy(current)
        return self._queues.schedule(snapshot)
