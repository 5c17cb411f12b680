"""The workloads and the process clean-up, against a real system of the smallest kind: each
job a /bin/sh process of this test, at most `slots` at a time."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from peers import limits, procs
from peers import workloads as wl


class ShellSystem:
    """Runs each submitted command under /bin/sh, `slots` at a time, in submit order."""

    name = "shell"

    def __init__(self, slots: int) -> None:
        self._free = threading.Semaphore(slots)
        self._done: set[str] = set()
        self._lock = threading.Lock()
        self._count = 0

    def submit(self, key: str, command: str) -> str:
        with self._lock:
            self._count += 1
            job_id = f"job-{self._count}"
        threading.Thread(target=self._run, args=(job_id, command), daemon=True).start()
        return job_id

    def _run(self, job_id: str, command: str) -> None:
        with self._free:
            subprocess.run(["/bin/sh", "-c", command], check=False, timeout=30)
        with self._lock:
            self._done.add(job_id)

    def unfinished(self, ids: Sequence[str]) -> bool:
        with self._lock:
            return not set(ids) <= self._done

    def cancel(self, ids: Sequence[str]) -> None:
        """Nothing to stop: every command here ends by itself."""


def test_stamps_are_the_commands_own(tmp_path: Path) -> None:
    stamps = wl.Stamps(tmp_path)
    before = time.time_ns()
    subprocess.run(["/bin/sh", "-c", wl.timed_command(stamps, "a b", "true")], check=True)
    start, end = stamps.read("a b", "start"), stamps.read("a b", "end")
    assert start is not None and end is not None
    assert before <= start <= end <= time.time_ns()
    assert stamps.read("missing", "start") is None


def test_trivial_and_start_latency(tmp_path: Path) -> None:
    system, stamps = ShellSystem(slots=2), wl.Stamps(tmp_path)
    out = wl.trivial(system, stamps, jobs=12, cap_s=30)
    assert (out.submitted, out.finished, out.capped, out.errors) == (12, 12, False, [])
    assert len(out.burst_start_ms) == 12 and min(out.burst_start_ms) > 0
    assert out.submit_per_s > 0 and out.e2e_jobs_per_s > 0
    start = wl.start_latency(system, stamps, samples=3, cap_s=30)
    assert start.failures == 0 and len(start.samples_ms) == 3


def test_training_gaps_and_utilisation(tmp_path: Path) -> None:
    system, stamps = ShellSystem(slots=2), wl.Stamps(tmp_path)
    out = wl.training(system, stamps, jobs=6, slots=2, body=lambda _key: "sleep 0.1",
                      cap_s=30)
    assert out.finished == 6 and not out.capped
    assert len(out.gaps_ms) == 4  # every end but the last two is followed by a start
    assert all(-5 < g < 1000 for g in out.gaps_ms)  # never more than two at once
    assert 0 <= out.cpu_utilisation <= 1
    assert all(0.1 <= r < 5 for r in out.run_s)


def test_burst_starts_once_the_long_jobs_end(tmp_path: Path) -> None:
    system, stamps = ShellSystem(slots=2), wl.Stamps(tmp_path)
    out = wl.burst(system, stamps, jobs=4, long_jobs=2, long_s=0.4, cap_s=30)
    assert len(out.wait_ms) == 4 and not out.capped
    assert out.first_start_after_free_ms >= 0  # it had to wait for a slot


def test_stop_all_ends_children_and_what_they_detached(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    # The child starts a grandchild in a session of its own, which a group signal misses.
    child = procs.spawn(["/bin/sh", "-c", f"setsid sleep 60 & echo $! > {pid_file}; "
                                          "exec sleep 60"], tmp_path / "log")
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    grandchild = int(pid_file.read_text())
    # Its environment cannot be read while it is between fork and exec, so look again.
    while grandchild not in procs.marked_pids():
        assert time.monotonic() < deadline, "the grandchild never showed the marker"
        time.sleep(0.01)
    procs.stop_all()
    assert child.poll() is not None
    deadline = time.monotonic() + 5
    while _alive(grandchild):
        assert time.monotonic() < deadline, "the detached grandchild was left running"
        time.sleep(0.01)
    assert procs.marked_pids() == []


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z" and os.path.exists(f"/proc/{pid}")


def test_trainer_runs_go_slots_at_a_time(tmp_path: Path) -> None:
    stamps = wl.Stamps(tmp_path)
    keys: list[str] = []

    def body(key: str) -> str:
        keys.append(key)
        return "sleep 0.3"

    runs = limits.trainer_runs(stamps, body, 4, 2, "t")
    assert len(runs) == 4 and all(0.25 < run < 5 for run in runs)
    assert len(set(keys)) == 4  # each run its own key (its own model and metrics paths)
    spans = sorted((stamps.read(k, "start") or 0, stamps.read(k, "end") or 0) for k in keys)
    # Two at a time: each pair overlaps, and the second pair starts once the first ends.
    assert spans[1][0] < spans[0][1] and spans[3][0] < spans[2][1]
    assert spans[2][0] >= min(spans[0][1], spans[1][1])
