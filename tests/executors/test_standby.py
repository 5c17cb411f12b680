import os
import resource
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from trainyard.executors import standby as standby_module
from trainyard.executors.base import Observation, Phase
from trainyard.executors.local import LocalExecutor
from trainyard.executors.pids_limit import PidsLimit
from trainyard.executors.standby import Standbys, exportable, job_script

sys.path.insert(0, str(Path(__file__).parent))
from test_local import handed_over, request, until, wait_for  # noqa: E402


def ready_executor(tmp_path: Path, count: int = 1) -> LocalExecutor:
    ex = LocalExecutor(tmp_path / "state", standbys=count)
    if ex._pids.base is None:
        pytest.skip("no pids cgroup this user may create here: no standbys")
    until(lambda: ex._standbys.ready() == count)
    return ex


def caps_of(ex: LocalExecutor) -> set[str]:
    """The caps of the executor's waiting standbys, as they are in the pids hierarchy."""
    assert ex._pids.base is not None
    names = {standby.group for standby in ex._standbys._waiting}
    return {name for name in names if (ex._pids.base / name).exists()}


def test_a_script_gives_the_job_exactly_its_environment_directory_and_log(
        tmp_path: Path) -> None:
    env = {"PLAIN": "x", "QUOTED": "it's \"$HOME\" `id`\nand a second line", "EMPTY": ""}
    log = tmp_path / "log"
    log.write_text("before\n")
    script = tmp_path / "script"
    script.write_text(job_script(tmp_path, log, env, 'exec /usr/bin/env -0 "$@"', []))
    subprocess.run(["/bin/sh", "-c", '. "$1"', "sh", str(script)], env={}, cwd="/",
                   check=False, timeout=10)
    head, _, body = log.read_bytes().partition(b"\n")
    assert head == b"before"  # appended to, not replaced
    seen = dict(item.split("=", 1) for item in body.decode().split("\0") if item)
    assert seen == {**env, "PWD": str(tmp_path)}  # and the PWD a direct start has too


def test_names_the_shell_keeps_or_cannot_export_are_not_given_by_a_script() -> None:
    assert exportable({"LR": "0.1", "_A1": "x"})
    # The last ones bash keeps read-only, or sets itself, where it is /bin/sh.
    for name in ("my-var", "1X", "IFS", "PWD", "PS1", "ENV", "A B", "", "UID", "EUID",
                 "SHELLOPTS", "BASH_ENV", "BASHOPTS", "_", "RANDOM"):
        assert not exportable({name: "x"}), name


def test_a_job_whose_environment_a_script_cannot_give_is_launched_directly(
        tmp_path: Path) -> None:
    ex = ready_executor(tmp_path)
    req = replace(request(tmp_path, ex, 'echo "ran with $LR"'), env={"my-var": "x"})
    handed = handed_over(ex)
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    assert req.files.log.read_text() == "ran with 0.5\n"
    assert handed == []
    assert ex._standbys.ready() == 1  # still waiting for the next job
    ex.close()


def test_a_standby_that_died_is_passed_over_and_the_job_starts_directly(
        tmp_path: Path) -> None:
    ex = ready_executor(tmp_path)
    (standby,) = ex._standbys._waiting
    standby.proc.send_signal(signal.SIGKILL)
    standby.proc.wait()
    assert ex._standbys.ready() == 0  # it joined its cap, then died waiting
    req = request(tmp_path, ex, "echo ran")
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    assert req.files.log.read_text() == "ran\n"
    assert ex._pids.base is not None and not (ex._pids.base / standby.group).exists()
    ex.release(req.handle)
    ex.close()


def test_a_standby_lost_between_the_rename_and_its_script_leaves_the_cap_to_a_direct_start(
        tmp_path: Path) -> None:
    ex = ready_executor(tmp_path)
    standbys = ex._standbys
    (standby,) = standbys._waiting
    original = standbys.hand_over

    def die_first(standby_: object, handle: str, script: bytes) -> bool:
        standby.proc.send_signal(signal.SIGKILL)
        standby.proc.wait()
        return original(standby, handle, script)

    standbys.hand_over = die_first  # type: ignore[method-assign]
    req = request(tmp_path, ex, "echo ran")
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    assert req.files.log.read_text() == "ran\n"
    ex.release(req.handle)
    assert ex._pids.base is not None
    until(lambda: not (ex._pids.base / req.handle).exists())  # the renamed cap, reused
    ex.close()


def test_a_standby_whose_service_is_gone_before_the_hand_over_runs_nothing(
        tmp_path: Path) -> None:
    """What a crash between a launch's writes leaves: the handle's directory, a cap renamed
    to it, and a standby that reads the end of its input."""
    ex = ready_executor(tmp_path)
    handle = request(tmp_path, ex, "true").handle
    ex._dir(handle).mkdir(parents=True)
    standby = ex._standbys.take()
    assert standby is not None and ex._pids.take_over(standby.group, handle)
    assert standby.proc.stdin is not None
    standby.proc.stdin.close()  # as the service's end of the pipe closes when it dies
    assert standby.proc.wait(timeout=10) == 0
    assert ex.poll(handle) == Observation(Phase.STARTING)  # LOST once STARTING_TIMEOUT passed
    assert ex._pids.remove(handle)  # its cap is empty
    ex.close()


def test_a_script_cut_short_by_its_service_s_end_runs_none_of_itself(tmp_path: Path) -> None:
    ex = ready_executor(tmp_path)
    req = request(tmp_path, ex, "touch ran")
    standby = ex._standbys.take()
    assert standby is not None and standby.proc.stdin is not None
    script = job_script(req.files.workdir, req.files.log, {}, "touch ran", []).encode()
    assert script.index(b"touch ran") < len(script) - 4  # cut after the command, before "}"
    standby.proc.stdin.write(script[:-3])
    standby.proc.stdin.close()
    standby.proc.wait(timeout=10)  # ended by the shell's syntax error
    assert not (req.files.workdir / "ran").exists()
    assert not req.files.log.exists()  # not even its first lines: the log's redirection
    ex._standbys.discard(standby)
    ex.close()


def test_each_launch_takes_a_standby_and_new_ones_are_made(tmp_path: Path) -> None:
    ex = ready_executor(tmp_path, count=2)
    before = caps_of(ex)
    assert len(before) == 2
    handed = handed_over(ex)
    for attempt in (1, 2):
        req = request(tmp_path, ex, "true", attempt=attempt)
        ex.launch(req)
        assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
        assert handed[-1] == req.handle
        ex.release(req.handle)
    until(lambda: ex._standbys.ready() == 2)
    after = caps_of(ex)
    assert len(after) == 2 and after.isdisjoint(before)  # those two became the jobs' caps
    ex.close()
    assert ex._pids.base is not None
    assert not any((ex._pids.base / name).exists() for name in after)  # close removes them


def test_the_next_standby_is_made_once_the_job_that_took_one_runs_its_command(
        tmp_path: Path) -> None:
    # Not beside the wrapper's start-up: its fork and shell would compete with it for the CPU.
    ex = ready_executor(tmp_path)
    req = request(tmp_path, ex, "sleep 30")
    started_at_refill: list[bool] = []
    refill = ex._standbys.refill

    def watched() -> None:
        started_at_refill.append(ex._start_file(req.handle).exists())
        refill()

    ex._standbys.refill = watched  # type: ignore[method-assign]
    ex.launch(req)
    until(lambda: ex._standbys.ready() == 1)
    assert started_at_refill == [True]
    ex.cancel(req.handle, grace_seconds=30)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 143
    ex.release(req.handle)
    ex.close()


def test_a_standby_runs_its_jobs_wrapper_in_its_own_shell_and_is_told_by_its_cap(
        tmp_path: Path) -> None:
    ex = ready_executor(tmp_path)
    (standby,) = ex._standbys._waiting
    req = request(tmp_path, ex, "sleep 30")
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.RUNNING}).phase is Phase.RUNNING
    pid = ex._read_pid(req.handle)
    assert pid == standby.proc.pid  # no process of its own: the standby is the wrapper
    # Its command line is the standby's (no shell was exec'd), naming no handle...
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    assert str(ex._exit_file(req.handle)).encode() not in cmdline
    # ...so it is the job's by its cap: another handle's, or a process outside the cap, is not.
    assert ex._is_ours(req.handle, pid)
    assert not ex._is_ours(ex.handle_for("someone-else", 1), pid)
    assert not ex._is_ours(req.handle, os.getpid())
    # A service started again tells it the same way, even one that finds no caps to use...
    again = LocalExecutor(tmp_path / "state", standbys=0, pids_limit=0)
    assert again._pids.base is None
    assert again.adopt(req.handle) == Observation(Phase.RUNNING)
    # ...and its KILL takes the wrapper and the shells it forked along with the command.
    again._kill_group(req.handle, pid)
    assert standby.proc.wait(timeout=10) == -signal.SIGKILL
    assert not ex._is_ours(req.handle, pid)
    ex.release(req.handle)
    again.close()
    ex.close()


def test_a_script_runs_its_shell_text_with_its_arguments_and_exits_with_its_status(
        tmp_path: Path) -> None:
    log = tmp_path / "log"
    script = tmp_path / "script"
    script.write_text(job_script(tmp_path, log, {}, 'echo "$#:$1:$2"; false', ["a b", "$HOME"]))
    done = subprocess.run(["/bin/sh", "-c", '. "$1"; echo never', "sh", str(script)], env={},
                          cwd="/", check=False, timeout=10)
    assert done.returncode == 1  # the text's status; nothing after the script runs
    assert log.read_text() == "2:a b:$HOME\n"


def test_an_executor_dropped_without_close_ends_its_standbys(tmp_path: Path) -> None:
    ex = ready_executor(tmp_path)
    (standby,) = ex._standbys._waiting
    caps = caps_of(ex)
    ex._standbys._end()  # what the finalizer runs once the executor is collected
    assert standby.proc.returncode == 0
    assert ex._pids.base is not None and caps == {standby.group}
    assert not (ex._pids.base / standby.group).exists()


def test_where_a_cap_cannot_be_renamed_no_standby_is_made(tmp_path: Path) -> None:
    pids = PidsLimit(64, root=tmp_path, self_cgroup=tmp_path / "none")
    pids.base = tmp_path / "base"
    pids.base.mkdir()
    pids._renames = False  # as cgroup v2 answers
    standbys = Standbys(pids, 2)
    standbys.refill()
    assert standbys.ready() == 0 and not standbys.usable
    assert list(pids.base.iterdir()) == []


def test_where_no_input_can_be_read_by_name_no_standby_is_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pids = PidsLimit(64, root=tmp_path, self_cgroup=tmp_path / "none")
    pids.base = tmp_path / "base"
    pids.base.mkdir()
    pids._renames = True  # caps could become jobs' here...
    monkeypatch.setattr(standby_module, "STDIN", str(tmp_path / "no-such-device"))
    standbys = Standbys(pids, 2)
    standbys.refill()  # ...but a standby could not read its script
    assert standbys.ready() == 0 and not standbys.usable
    assert list(pids.base.iterdir()) == []


def test_a_job_no_script_can_carry_starts_directly_and_keeps_the_standby_for_the_next(
        tmp_path: Path) -> None:
    ex = ready_executor(tmp_path)
    (standby,) = ex._standbys._waiting
    # Not UTF-8: the script cannot hold it, while a direct start passes it on as bytes.
    req = replace(request(tmp_path, ex, 'echo "ran"'), env={"ODD": "\udc80"})
    handed = handed_over(ex)
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    assert req.files.log.read_text() == "ran\n"
    assert handed == [] and ex._standbys._waiting == [standby]
    assert standby.proc.poll() is None  # still waiting on its pipe, for the next job
    ex.release(req.handle)
    ex.close()


def test_a_standby_whose_pipes_are_past_select_s_reach_still_serves(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("this process may not hold 1,200 files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(1100)]
    try:
        ex = LocalExecutor(tmp_path / "state", standbys=1)
        if ex._pids.base is None:
            pytest.skip("no pids cgroup this user may create here: no standbys")
        until(lambda: len(ex._standbys._waiting) == 1)
        (standby,) = ex._standbys._waiting
        assert standby.proc.stdout is not None and standby.proc.stdout.fileno() >= 1024
    finally:
        for fd in held:
            os.close(fd)
    until(lambda: ex._standbys.ready() == 1)
    req = request(tmp_path, ex, "echo ran")
    handed = handed_over(ex)
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    assert handed == [req.handle]
    ex.release(req.handle)
    ex.close()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
