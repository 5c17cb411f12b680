"""A cap on the processes of each local job, as the Docker executor caps a container's: a
pids cgroup of the job's own, which its wrapper joins before the command starts. A job that
forks without end then meets a failing fork instead of taking the host's process table.

Used where the service may make such cgroups: the cgroup v1 pids hierarchy, or a cgroup v2
one whose own cgroup delegates the pids controller. Elsewhere jobs run uncapped (as before),
and the service says so once at start. A per-user RLIMIT_NPROC would not do: it counts every
process of the user, and root ignores it."""

from __future__ import annotations

import contextlib
import logging
import uuid
from pathlib import Path

from trainyard.processes import pid_alive

log = logging.getLogger(__name__)

DEFAULT_PIDS_LIMIT = 4096  # the Docker executor's pids_limit too
CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "trainyard"  # below the service's own cgroup: one child per job handle


class PidsLimit:
    def __init__(self, limit: int = DEFAULT_PIDS_LIMIT, root: Path = CGROUP_ROOT,
                 self_cgroup: Path = Path("/proc/self/cgroup")) -> None:
        self.limit = limit
        self.base = _find_base(root, self_cgroup) if limit > 0 else None
        self._renames: bool | None = None
        if limit > 0 and self.base is None:
            log.warning("local jobs run without a cap on their processes: no pids cgroup "
                        "this service may create under %s", root)

    def prepare(self, handle: str) -> str:
        """The cgroup.procs file the job's wrapper writes its pid to; "" where there is no
        cap to apply."""
        if self.base is None:
            return ""
        group = self.base / handle
        try:
            group.mkdir(exist_ok=True)
            (group / "pids.max").write_text(f"{self.limit}\n")
        except OSError as exc:
            log.warning("%s runs without a cap on its processes: %s", handle, exc)
            return ""
        return str(group / "cgroup.procs")

    # --- the caps of standby wrappers (executors.standby) ----------------------------------

    STANDBY_PREFIX = "standby-"  # then the service's pid and a count: no handle starts so

    @property
    def renames(self) -> bool:
        """Whether a cap made ahead of its job can become the job's: cgroup v1 renames a
        cgroup within its parent, v2 does not. Tried once, with a cgroup of its own."""
        if self._renames is None:
            self._renames = self.base is not None and _can_rename(self.base)
            if self._renames:
                self.sweep_standbys()
        return self._renames

    def standby_group(self, name: str) -> str | None:
        """A cap for a standby wrapper: its cgroup.procs, or None if none can be made."""
        assert self.base is not None
        group = self.base / name
        try:
            try:
                group.mkdir()
            except FileExistsError:  # left by an earlier service of the same pid: empty
                group.rmdir()
                group.mkdir()
        except OSError as exc:
            log.warning("no cap could be made ahead of a job: %s", exc)
            return None
        try:
            (group / "pids.max").write_text(f"{self.limit}\n")
        except OSError as exc:
            log.warning("no cap could be made ahead of a job: %s", exc)
            self.remove_group(name)
            return None
        return str(group / "cgroup.procs")

    def take_over(self, name: str, handle: str) -> bool:
        """Make the standby cap `name` the cap of the job `handle`."""
        assert self.base is not None
        target = self.base / handle
        try:
            try:
                (self.base / name).rename(target)
            except FileExistsError:  # an empty cap the handle was given before: replaced
                target.rmdir()
                (self.base / name).rename(target)
        except OSError as exc:
            log.warning("%s could not take over a cap made ahead of it: %s", handle, exc)
            return False
        return True

    def remove_group(self, name: str) -> None:
        if self.base is not None:
            # OSError: gone already, or its process not yet reaped (swept at a later start).
            with contextlib.suppress(OSError):
                (self.base / name).rmdir()

    def sweep_standbys(self) -> None:
        """Remove the caps of standbys whose service is gone (they end with it)."""
        assert self.base is not None
        for entry in self.base.glob(f"{self.STANDBY_PREFIX}*"):
            pid = entry.name[len(self.STANDBY_PREFIX):].split("-", 1)[0]
            if pid.isdigit() and not pid_alive(int(pid)):
                self.remove_group(entry.name)

    def refused_forks(self, handle: str) -> int:
        """How many of the job's forks its cap refused."""
        if self.base is None:
            return 0
        try:
            events = (self.base / handle / "pids.events").read_text().split()
        except OSError:
            return 0
        counts = dict(zip(events[::2], events[1::2], strict=False))
        return int(counts.get("max", "0"))

    def remove(self, handle: str) -> bool:
        """Drop the job's cgroup once it is empty (the kernel refuses before); whether none
        is left."""
        if self.base is None:
            return True
        try:
            (self.base / handle).rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True


def in_cap_of(pid: int, handle: str) -> bool:
    """Whether process `pid` is in a cap named for `handle`, wherever its hierarchy lies: a
    service started again in another cgroup, or without caps, still tells it."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:  # gone
        return False
    return any(line.rsplit("/", 1)[-1] == handle for line in lines)


def _can_rename(base: Path) -> bool:
    probe = base / f"rename-probe-{uuid.uuid4().hex}"  # no other prober's, whatever its pid
    renamed = probe.with_name(probe.name + "-renamed")
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        probe.rename(renamed)
    except OSError:
        with contextlib.suppress(OSError):
            probe.rmdir()
        return False
    with contextlib.suppress(OSError):
        renamed.rmdir()
    return True


def _find_base(root: Path, self_cgroup: Path) -> Path | None:
    try:
        lines = self_cgroup.read_text().splitlines()
    except OSError:
        return None
    own = {}
    for line in lines:
        if line.count(":") < 2:
            continue
        _, controllers, path = line.split(":", 2)
        own[controllers] = path.lstrip("/")
    candidates = []
    for controllers, path in own.items():
        if "pids" in controllers.split(","):
            candidates.append((root / "pids" / path, False))
    if "" in own and (root / "cgroup.controllers").exists():  # cgroup v2 alone
        candidates.append((root / own[""], True))
    for parent, unified in candidates:
        base = parent / GROUP
        try:
            if unified:
                if "pids" not in (parent / "cgroup.subtree_control").read_text().split():
                    continue
                base.mkdir(exist_ok=True)
                (base / "cgroup.subtree_control").write_text("+pids\n")
            else:
                base.mkdir(exist_ok=True)
        except OSError:
            continue
        return base
    return None
