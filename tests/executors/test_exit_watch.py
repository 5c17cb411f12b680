"""The exit watch: real processes, each reported once from one thread when it ends."""

import os
import subprocess
import threading
from pathlib import Path

import pytest

from trainyard.executors.exit_watch import ExitWatch, exit_watch


def started(seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", str(seconds)])


def test_each_process_is_reported_once_as_it_ends_from_one_thread() -> None:
    watch = ExitWatch()
    ended: list[tuple[str, int, str]] = []
    done = threading.Event()

    def reporter(name: str, proc: subprocess.Popen[bytes]) -> None:
        # The callback collects the child's status: it has ended, so this does not wait.
        ended.append((name, proc.wait(timeout=0), threading.current_thread().name))
        if len(ended) == 2:
            done.set()

    slow, quick = started(0.4), started(0.05)
    assert watch.watch(slow.pid, lambda: reporter("slow", slow))
    assert watch.watch(quick.pid, lambda: reporter("quick", quick))
    assert done.wait(10)
    assert ended == [("quick", 0, "exit-watch"), ("slow", 0, "exit-watch")]


def test_a_process_that_ended_before_it_was_watched_is_reported_at_once() -> None:
    proc = subprocess.Popen(["sh", "-c", "exit 3"])
    while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        pass  # until it is a zombie: ended, its status not yet collected
    codes: list[int] = []
    done = threading.Event()
    assert exit_watch().watch(proc.pid, lambda: (codes.append(proc.wait(timeout=0)), done.set()))
    assert done.wait(10) and codes == [3]


def test_a_failing_callback_does_not_end_the_watching() -> None:
    watch = ExitWatch()
    first, second = started(0.01), started(0.2)
    reported = threading.Event()

    def fails() -> None:
        first.wait()
        raise RuntimeError("a listener's bug")

    assert watch.watch(first.pid, fails)
    assert watch.watch(second.pid, lambda: (second.wait(), reported.set()))
    assert reported.wait(10)


def test_no_process_by_that_pid_is_refused() -> None:
    beyond = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1  # no process has it
    assert not ExitWatch().watch(beyond, lambda: None)


def test_a_watch_that_gets_no_thread_leaves_the_waiting_to_its_caller(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    proc, watch = started(0), ExitWatch()
    before = len(os.listdir("/proc/self/fd"))
    assert not watch.watch(proc.pid, lambda: None)
    assert len(os.listdir("/proc/self/fd")) == before  # its pidfd closed again
    monkeypatch.undo()
    proc.wait()
