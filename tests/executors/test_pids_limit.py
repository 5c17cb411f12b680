"""Finding where a job's process cap may live, on cgroup v1 and v2 trees laid out in a
temporary directory, and reading how often the cap refused a fork."""

import os
import subprocess
from pathlib import Path

from trainyard.executors.pids_limit import PidsLimit


def _own(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "self-cgroup"
    path.write_text(text)
    return path


def test_v1_a_cgroup_per_job_below_the_services_own(tmp_path: Path) -> None:
    (tmp_path / "pids" / "svc").mkdir(parents=True)
    limit = PidsLimit(64, root=tmp_path, self_cgroup=_own(tmp_path, "9:cpu:/x\n8:pids:/svc\n"))
    assert limit.base == tmp_path / "pids" / "svc" / "trainyard"
    procs = limit.prepare("trainyard-j-1")
    group = tmp_path / "pids" / "svc" / "trainyard" / "trainyard-j-1"
    assert procs == str(group / "cgroup.procs")
    assert (group / "pids.max").read_text() == "64\n"
    assert limit.refused_forks("trainyard-j-1") == 0  # no events file yet
    (group / "pids.events").write_text("max 7\n")
    assert limit.refused_forks("trainyard-j-1") == 7
    (group / "pids.max").unlink()
    (group / "pids.events").unlink()
    (group / "busy").write_text("")
    assert not limit.remove("trainyard-j-1")  # not empty: kept, and said so
    (group / "busy").unlink()
    assert limit.remove("trainyard-j-1")
    assert not group.exists()


def test_v2_only_where_the_services_cgroup_delegates_pids(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu pids\n")
    (tmp_path / "svc").mkdir()
    own = _own(tmp_path, "0::/svc\n")
    (tmp_path / "svc" / "cgroup.subtree_control").write_text("cpu\n")
    assert PidsLimit(64, root=tmp_path, self_cgroup=own).base is None
    (tmp_path / "svc" / "cgroup.subtree_control").write_text("cpu pids\n")
    limit = PidsLimit(64, root=tmp_path, self_cgroup=own)
    assert limit.base == tmp_path / "svc" / "trainyard"
    assert (limit.base / "cgroup.subtree_control").read_text() == "+pids\n"


def test_no_cap_where_no_cgroup_may_be_made_or_none_is_asked(tmp_path: Path) -> None:
    none = PidsLimit(64, root=tmp_path / "missing", self_cgroup=_own(tmp_path, "8:pids:/\n"))
    assert none.base is None
    assert none.prepare("trainyard-j-1") == ""
    assert none.refused_forks("trainyard-j-1") == 0
    assert none.remove("trainyard-j-1")
    (tmp_path / "pids").mkdir()
    assert PidsLimit(0, root=tmp_path, self_cgroup=_own(tmp_path, "8:pids:/\n")).base is None


def test_standby_caps_of_a_service_that_is_gone_are_swept_and_others_kept(
        tmp_path: Path) -> None:
    (tmp_path / "pids" / "svc").mkdir(parents=True)
    limit = PidsLimit(64, root=tmp_path, self_cgroup=_own(tmp_path, "8:pids:/svc\n"))
    assert limit.base is not None
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid no process has now (nor, in this instant, anew)
    names = [f"standby-{gone.pid}-1", f"standby-{os.getpid()}-1", "trainyard-j-1"]
    for name in names:
        (limit.base / name).mkdir()
    assert limit.renames  # a directory tree renames; the first look sweeps
    assert sorted(e.name for e in limit.base.iterdir()) == sorted(names[1:])


def test_a_cap_made_ahead_becomes_the_jobs_with_its_limit(tmp_path: Path) -> None:
    (tmp_path / "pids" / "svc").mkdir(parents=True)
    limit = PidsLimit(64, root=tmp_path, self_cgroup=_own(tmp_path, "8:pids:/svc\n"))
    assert limit.base is not None
    procs = limit.standby_group("standby-1-1")
    assert procs == str(limit.base / "standby-1-1" / "cgroup.procs")
    assert limit.take_over("standby-1-1", "trainyard-j-1")
    assert (limit.base / "trainyard-j-1" / "pids.max").read_text() == "64\n"
    assert not limit.take_over("standby-1-1", "trainyard-j-2")  # taken already


def test_a_standby_cap_left_by_an_earlier_service_of_the_same_pid_is_replaced(
        tmp_path: Path) -> None:
    (tmp_path / "pids" / "svc").mkdir(parents=True)
    limit = PidsLimit(64, root=tmp_path, self_cgroup=_own(tmp_path, "8:pids:/svc\n"))
    assert limit.base is not None
    (limit.base / "standby-1-1").mkdir()  # empty: its standby ended with its service
    assert limit.standby_group("standby-1-1") == str(limit.base / "standby-1-1" /
                                                      "cgroup.procs")
    assert (limit.base / "standby-1-1" / "pids.max").read_text() == "64\n"
