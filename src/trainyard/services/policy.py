"""The policy in force as one view: the declared file (reloadable without a restart) or,
without one, FIFO's open queues; merged with the store's queue rules and teams.

Submit and admission read this same view, so one rule answers both: a queue takes a job
from `user` when `queue.access.admits(user, policy.teams_of(user))`.
- Under a policy file its queues' users and teams are the rules; the store's (`admin queues
  set`) do not apply, and setting them is refused.
- Without a file the store's rules are the queues' users and teams, and any other queue
  name is open.
- A team's members are the file's and the store's together. Under a file, a team only the
  store knows plays no part: no queue of the file names it and it holds no quota.
- Every queue takes jobs from the store's admins and from the single-user identity, at
  submit and at admission alike.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from trainyard.auth.policy import LOCAL_USER
from trainyard.domain.access import QueueAccess
from trainyard.domain.policy import Policy, Queue, Team, default_policy
from trainyard.domain.pools import PoolCapacity
from trainyard.services.policy_file import PolicyError, load_policy_document
from trainyard.store.access import AccessStore

log = logging.getLogger(__name__)

# The store's rules and teams are read again after this many seconds, and at once after a
# change made through this server.
STORE_TTL = 5.0


@dataclass(frozen=True)
class PolicyView:
    policy: Policy  # merged: what submit, admission and the queues overview read
    from_file: bool  # declared in a file (the queue policy decides), or FIFO's
    source: str  # the policy file, or "" for the built-in one
    loaded_at: float


def merged_policy(declared: Policy | None, rules: Mapping[str, QueueAccess],
                  teams: Mapping[str, frozenset[str]], pools: Mapping[str, PoolCapacity],
                  max_running: int, admins: frozenset[str] = frozenset()) -> Policy:
    """The one view of the policy in force and the store's queue rules, teams and admins
    (the single-user identity always among them). A policy the merge would leave as it is
    is returned itself, so an unchanged view keeps the same object."""
    admins = admins | {LOCAL_USER}
    if declared is not None:
        grown = {name: members for name, members in teams.items()
                 if name in declared.teams and not members <= declared.teams[name].members}
        if not grown and declared.admins == admins:
            return declared
        merged = dict(declared.teams)
        for name, members in grown.items():
            merged[name] = replace(merged[name], members=merged[name].members | members)
        return replace(declared, teams=merged, admins=admins)
    base = default_policy(pools, max_running)
    queues = dict(base.queues)
    for name, access in rules.items():
        queue = queues.get(name) or Queue(name, pools=tuple(pools))
        queues[name] = replace(queue, users=access.users, teams=access.teams)
    return replace(base, queues=queues, admins=admins,
                   teams={name: Team(name, members) for name, members in teams.items()})


@dataclass(frozen=True)
class _Read:
    declared: Policy | None
    rules: dict[str, QueueAccess]
    teams: dict[str, frozenset[str]]
    admins: frozenset[str]
    view: PolicyView
    read_at: float


class PolicyService:
    """The policy source of a server. `effective()` is cheap: the store is read at most
    every STORE_TTL seconds, and an unchanged read keeps the very same Policy object (the
    queue policy indexes it once)."""

    def __init__(self, path: Path | None, executors: Collection[str], store: AccessStore,
                 pools: Mapping[str, PoolCapacity], max_running: int,
                 clock: Callable[[], float] = time.monotonic,
                 complete: Callable[[Policy], Policy] | None = None,
                 read: Policy | None = None) -> None:
        """`read`: the file as the caller has just read it, so it is not read twice."""
        self.path = path
        self.executors = frozenset(executors)
        self.store = store
        self.pools = pools  # without a file: the pools of FIFO's queues
        self.max_running = max_running
        self.clock = clock
        # What the file leaves to the pools' engines to say (a Slurm pool's capacity).
        self.complete = complete or (lambda policy: policy)
        self._file: Policy | None = None  # the file as read, before `complete`
        self._text = ("", "")  # the file's text as read, and its format
        self._lock = threading.Lock()
        self._declared: Policy | None = None
        self._read: _Read | None = None
        self._generation = 0  # counts changes made here, so a read in flight is not kept
        self.loaded_at = time.time()
        if path is not None:
            if read is not None:
                self._file = self._checked(path, read)
                self._text = _text_of(path)
            else:
                self._file, self._text = self._load(path)
            self._declared = self.complete(self._file)

    @property
    def declared(self) -> Policy | None:
        """The policy file as read; None without one."""
        return self._declared

    @property
    def file_text(self) -> tuple[str, str]:
        """The policy file's text as last read, and its format ("toml" or "yaml"); empty
        without a file."""
        return self._text

    def reload(self) -> Policy | None:
        """Read the file again; on any problem keep the policy in force and raise."""
        if self.path is None:
            return None
        read, text = self._load(self.path)
        with self._lock:  # so that a recomplete() meanwhile cannot be undone
            fresh = self.complete(read)
            self._file, self._declared, self._text = read, fresh, text
            self.loaded_at = time.time()
        log.info("policy reloaded from %s: %d queues, %d pools, %d teams", self.path,
                 len(fresh.queues), len(fresh.pools), len(fresh.teams))
        return fresh

    def recomplete(self) -> None:
        """What `complete` fills in changed (a pool's engine declares other capacity): the
        file as last read, completed again, is the policy from the next pass on."""
        with self._lock:
            if self._file is None:
                return
            self._declared = self.complete(self._file)
        log.info("pool capacity read again from the engines")

    def changed(self) -> None:
        """The store's queue rules or teams changed: the next look reads them again."""
        with self._lock:
            self._generation += 1
            if self._read is not None:  # kept: an equal read keeps the same view
                self._read = replace(self._read, read_at=-math.inf)

    def effective(self) -> PolicyView:
        """The one view submit, admission and the queues overview read."""
        now = self.clock()
        with self._lock:
            last, declared, generation = self._read, self._declared, self._generation
        if last is not None and last.declared is declared and now - last.read_at < STORE_TTL:
            return last.view
        try:
            rules, teams = self.store.queue_acls(), self.store.team_members()
            admins = self.store.admins()
        except Exception:
            if last is None:
                raise
            # The store is away for a moment: the rules last read stay in force.
            log.warning("could not read the queue rules and teams; keeping the last ones",
                        exc_info=True)
            return last.view
        if last is not None and last.declared is declared and last.rules == rules and \
                last.teams == teams and last.admins == admins:
            view = last.view
        else:
            view = PolicyView(merged_policy(declared, rules, teams, self.pools,
                                            self.max_running, admins),
                              declared is not None, str(self.path or ""), self.loaded_at)
        with self._lock:
            # A change or a reload since the read began: the next look reads again.
            if self._generation == generation and self._declared is declared:
                self._read = _Read(declared, rules, teams, admins, view, now)
        return view

    def for_scheduler(self) -> Policy | None:
        """What the queue policy decides by: the merged view under a policy file; None
        without one (FIFO, which admits by submit order alone)."""
        view = self.effective()
        return view.policy if view.from_file else None

    def _load(self, path: Path) -> tuple[Policy, tuple[str, str]]:
        document = load_policy_document(path)
        return self._checked(path, document.policy), (document.text, document.format)

    def _checked(self, path: Path, policy: Policy) -> Policy:
        missing = sorted({p.executor for p in policy.pools.values()} - self.executors)
        if missing:
            raise PolicyError([f"{path}: pools use the {', '.join(missing)} executor, "
                               "which this server does not run (start it with --docker)"])
        return policy


def _text_of(path: Path) -> tuple[str, str]:
    """A policy file's text and format, as read once more beside the policy read before."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return "", ""
    return text, "toml" if path.suffix.lower() == ".toml" else "yaml"
