"""A cap on the processes of each local job, as the Docker executor caps a container's: a
pids cgroup of the job's own, which its wrapper joins before the command starts. A job that
forks without end then meets a failing fork instead of taking the host's process table.

Used where the service may make such cgroups: the cgroup v1 pids hierarchy, or a cgroup v2
one whose own cgroup delegates the pids controller. Elsewhere jobs run uncapped (as before),
and the service says so once at start. A per-user RLIMIT_NPROC would not do: it counts every
process of the user, and root ignores it."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_PIDS_LIMIT = 4096  # the Docker executor's pids_limit too
CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "trainyard"  # below the service's own cgroup: one child per job handle


class PidsLimit:
    def __init__(self, limit: int = DEFAULT_PIDS_LIMIT, root: Path = CGROUP_ROOT,
                 self_cgroup: Path = Path("/proc/self/cgroup")) -> None:
        self.limit = limit
        self.base = _find_base(root, self_cgroup) if limit > 0 else None
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
