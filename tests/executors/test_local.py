"""The local-process executor against real processes."""

import functools
import hashlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from trainyard.domain.log_cap import cut_note
from trainyard.domain.spec import Resources
from trainyard.executors import local
from trainyard.executors.base import (
    JobFiles,
    LaunchError,
    LaunchRequest,
    Observation,
    Phase,
    describe_exit,
)
from trainyard.executors.local import LocalExecutor
from trainyard.executors.standby import Standby


def request(tmp_path: Path, ex: LocalExecutor, command: str, attempt: int = 1,
            gpu_ids: tuple[str, ...] = ()) -> LaunchRequest:
    work = tmp_path / f"work-{attempt}"
    work.mkdir(exist_ok=True)
    files = JobFiles(data=tmp_path, model=tmp_path / "model", metrics=tmp_path / "metrics",
                     checkpoint=tmp_path / "ckpt", workdir=work, log=tmp_path / f"log-{attempt}")
    # A job id of the test's own: a handle names a process cap, and caps are shared by
    # every test running at once.
    job_id = "job-" + hashlib.sha1(str(tmp_path).encode()).hexdigest()[:12]
    return LaunchRequest(job_id=job_id, attempt=attempt, handle=ex.handle_for(job_id, attempt),
                         command=command, image="", env={"GREETING": "hi"},
                         hyperparameters={"LR": "0.5"}, resources=Resources(gpus=len(gpu_ids)),
                         gpu_ids=gpu_ids, files=files)


def handed_over(ex: LocalExecutor) -> list[str]:
    """The handles the executor's standbys are given from now on."""
    handles: list[str] = []
    hand_over = ex._standbys.hand_over

    def recorded(standby: Standby, handle: str, script: bytes) -> bool:
        given = hand_over(standby, handle, script)
        if given:
            handles.append(handle)
        return given

    ex._standbys.hand_over = recorded  # type: ignore[method-assign]
    return handles


@pytest.fixture(params=["direct", "standby"])
def ex(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LocalExecutor]:
    """An executor whose next launch starts its wrapper directly, or hands it to a standby
    already inside its cap (executors.standby); with a standby, every job the test launched
    must have been handed to one."""
    state = tmp_path / "state"
    if request.param == "direct":
        executor = LocalExecutor(state, standbys=0)
        yield executor
        executor.close()
        return
    executor = LocalExecutor(state, standbys=1)
    if executor._pids.base is None:
        pytest.skip("no pids cgroup this user may create here: no standbys")
    until(lambda: executor._standbys.ready() == 1)
    handed = handed_over(executor)
    yield executor
    executor.close()
    launched = {d.name for d in state.iterdir() if d.is_dir()}
    assert launched and launched <= set(handed)


def wait_for(ex: LocalExecutor, handle: str, phases: set[Phase],
             timeout: float = 10) -> Observation:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        obs = ex.poll(handle)
        if obs.phase in phases:
            return obs
        time.sleep(0.02)
    raise AssertionError(f"{handle} never reached {phases}; last {obs}")


def until(check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_runs_in_its_workdir_with_its_env_and_records_the_exit(tmp_path: Path,
                                                              ex: LocalExecutor) -> None:
    exited: list[str] = []
    ex.set_exit_listener(exited.append)
    req = request(tmp_path, ex, 'echo "$GREETING from $(pwd)"; echo oops >&2; exit 3')
    ex.launch(req)
    obs = wait_for(ex, req.handle, {Phase.EXITED})
    assert obs.exit_code == 3
    until(lambda: exited == [req.handle])
    assert req.files.log.read_text().splitlines() == [f"hi from {req.files.workdir}", "oops"]


@pytest.mark.parametrize(("gpu_ids", "visible"), [((), ""), (("1", "3"), "1,3")])
def test_the_contract_and_exactly_the_allocated_gpus(tmp_path: Path, ex: LocalExecutor,
                                                       gpu_ids: tuple[str, ...],
                                                       visible: str) -> None:
    req = request(tmp_path, ex, 'echo "$CUDA_VISIBLE_DEVICES|$LR|$MODEL_SAVE_PATH|$JOB_ID"',
                  gpu_ids=gpu_ids)
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    assert req.files.log.read_text().strip() == f"{visible}|0.5|{req.files.model}|{req.job_id}"


def test_the_command_runs_as_sh_c_runs_it(tmp_path: Path) -> None:
    """No positional parameters of the wrapper's reach it; its syntax errors, exit and
    exec are its own."""
    ex = LocalExecutor(tmp_path / "state")
    cases = [('echo "[$#][$1][$2]"; exit 4', 4, "[0][][]"),
             ("exec sh -c 'exit 6'", 6, ""),
             ("if then", 2, "")]
    for attempt, (command, code, out) in enumerate(cases, start=1):
        req = request(tmp_path, ex, command, attempt=attempt)
        ex.launch(req)
        assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == code
        if out:
            assert req.files.log.read_text().strip() == out
        else:
            assert "[" not in req.files.log.read_text()


def test_a_launch_tells_when_its_command_has_begun(tmp_path: Path, ex: LocalExecutor) -> None:
    req = request(tmp_path, ex, "sleep 30")
    ex.launch(req)
    assert ex.wait_command_started(req.handle, 10)
    assert ex._start_file(req.handle).exists()  # the wrapper's last step before the command
    assert not ex.wait_command_started(ex.handle_for("never", 1), 0.05)
    ex.cancel(req.handle, grace_seconds=30)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 143
    ex.release(req.handle)


def test_a_handle_is_launched_only_once_in_a_boot(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "state", standbys=0)
    req = request(tmp_path, ex, "true")
    ex.launch(req)
    with pytest.raises(LaunchError, match="already launched once"):
        ex.launch(req)  # again at once
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    restarted = LocalExecutor(tmp_path / "state", standbys=0)  # a service started again
    with pytest.raises(LaunchError, match="already launched once"):
        restarted.launch(req)  # once it ended, too
    assert ex.poll(req.handle).exit_code == 0  # its files are as they were
    ex.release(req.handle)


def test_a_handle_left_where_the_boot_cannot_be_told_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the kernel's boot id, a leftover directory may be this boot's: never launched
    # over.
    ex = LocalExecutor(tmp_path / "state", standbys=0)
    req = request(tmp_path, ex, "true")
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    ex._boot_file(req.handle).write_text("an-earlier-boot")
    monkeypatch.setattr(local, "_boot_id", lambda: None)
    with pytest.raises(LaunchError, match="already launched once"):
        LocalExecutor(tmp_path / "state", standbys=0).launch(req)
    assert ex.poll(req.handle).exit_code == 0
    ex.release(req.handle)


def test_a_launch_the_host_went_down_under_starts_over_in_the_next_boot(
        tmp_path: Path) -> None:
    # A power cut undid the store's record of the launch (Launcher.launching_synced) and
    # ended its process; its files stayed. The job waits again under the same attempt, and
    # after the host's restart it is launched again from scratch.
    first = LocalExecutor(tmp_path / "state", standbys=0)
    req = request(tmp_path, first, "echo first; echo 1 >> \"$METRICS_PATH\"; "
                                   "touch \"$MODEL_SAVE_PATH/old\"; exit 3")
    req.files.model.mkdir()
    first.launch(req)
    assert wait_for(first, req.handle, {Phase.EXITED}).exit_code == 3
    assert first._boot_file(req.handle).read_text() == local._boot_id()
    first._boot_file(req.handle).write_text("an-earlier-boot")  # the host restarted since
    restarted = LocalExecutor(tmp_path / "state", standbys=0)
    again = replace(req, command='echo again; exit "$(cat code)"')
    (req.files.workdir / "code").write_text("5\n")
    restarted.launch(again)
    assert wait_for(restarted, req.handle, {Phase.EXITED}).exit_code == 5
    assert req.files.log.read_bytes() == b"first\n" + local.RESTARTED_NOTE + b"again\n"
    assert req.files.metrics.read_text() == "" and list(req.files.model.iterdir()) == []
    restarted.release(req.handle)


def test_a_running_job_it_watches_is_polled_without_reading_its_files(
        tmp_path: Path, ex: LocalExecutor) -> None:
    # While its process is watched the job runs: a pass's poll need not read its pid,
    # command line and cap (here, the pid file is gone and the job still runs). Its end
    # is read from its files once its watch has told it.
    gate = tmp_path / "go"
    req = request(tmp_path, ex, f"while [ ! -e {gate} ]; do sleep 0.02; done; exit 4")
    ex.launch(req)
    wait_for(ex, req.handle, {Phase.RUNNING})
    ex._pid_file(req.handle).unlink()
    assert ex.poll(req.handle).phase is Phase.RUNNING
    gate.touch()
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 4


def test_cancel_sends_term_then_kill_to_the_whole_group(tmp_path: Path, ex: LocalExecutor) -> None:
    # The job ignores TERM and starts a grandchild; both must die.
    req = request(tmp_path, ex, "trap '' TERM; sleep 60 & echo $! > child.pid; wait; sleep 60")
    ex.launch(req)
    wait_for(ex, req.handle, {Phase.RUNNING})
    until(lambda: (req.files.workdir / "child.pid").exists() and
          (req.files.workdir / "child.pid").read_text().strip() != "")
    child = int((req.files.workdir / "child.pid").read_text())
    ex.cancel(req.handle, grace_seconds=1.5)
    time.sleep(0.3)
    assert ex.poll(req.handle).phase is Phase.RUNNING  # TERM ignored, the grace not yet over
    obs = wait_for(ex, req.handle, {Phase.LOST, Phase.EXITED})
    # KILLed with its wrapper, which recorded no exit status: the executor says what it did.
    assert obs == Observation(Phase.EXITED, exit_code=137, message="it did not stop on TERM "
                              "and was killed by SIGKILL after the 1.5 s grace period, exit "
                              "code 137")
    until(lambda: not Path(f"/proc/{child}").exists() or
          Path(f"/proc/{child}/stat").read_text().split(") ")[1].startswith("Z"))


def test_a_job_that_stops_on_term_has_its_status_recorded(tmp_path: Path,
                                                           ex: LocalExecutor) -> None:
    req = request(tmp_path, ex, "sleep 60")
    ex.launch(req)
    wait_for(ex, req.handle, {Phase.RUNNING})
    ex.cancel(req.handle, grace_seconds=30)
    obs = wait_for(ex, req.handle, {Phase.EXITED, Phase.LOST})
    assert obs == Observation(Phase.EXITED, exit_code=143)


def test_a_cancel_right_after_launch_reaches_the_command(tmp_path: Path) -> None:
    # As the tracker does: ask until the executor says it asked. A TERM sent before the
    # command's shell exists would reach only the wrapper, and the job would run on until
    # the KILL after the grace period.
    ex = LocalExecutor(tmp_path / "state")
    for attempt in range(1, 11):
        req = request(tmp_path, ex, "sleep 60", attempt=attempt)
        ex.launch(req)
        handle = req.handle
        until(functools.partial(ex.cancel, handle, 60.0), timeout=5)
        assert wait_for(ex, handle, {Phase.EXITED, Phase.LOST}, timeout=5) == \
            Observation(Phase.EXITED, exit_code=143)


def test_a_cancel_that_read_no_pid_before_the_job_started_asks_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The wrapper wrote its pid and its command began between the cancel's read of the pid
    # and its poll: nothing was signalled, so the cancel is not done yet.
    ex = LocalExecutor(tmp_path / "state")
    req = request(tmp_path, ex, "sleep 60")
    ex.launch(req)
    wait_for(ex, req.handle, {Phase.RUNNING})
    read_pid, reads = ex._read_pid, []

    def not_yet_the_first_time(handle: str) -> int | None:
        reads.append(handle)
        return None if len(reads) == 1 else read_pid(handle)

    monkeypatch.setattr(ex, "_read_pid", not_yet_the_first_time)
    assert not ex.cancel(req.handle, 60.0)
    until(functools.partial(ex.cancel, req.handle, 60.0), timeout=5)
    assert wait_for(ex, req.handle, {Phase.EXITED, Phase.LOST}, timeout=5) == \
        Observation(Phase.EXITED, exit_code=143)


def test_a_new_executor_adopts_a_running_job_and_sees_it_end(tmp_path: Path) -> None:
    first = LocalExecutor(tmp_path / "state")
    gate = tmp_path / "go"
    req = request(tmp_path, first, f"while [ ! -e {gate} ]; do sleep 0.02; done; exit 7")
    first.launch(req)
    wait_for(first, req.handle, {Phase.RUNNING})
    restarted = LocalExecutor(tmp_path / "state")  # what a restarted service builds
    ended: list[str] = []
    restarted.set_exit_listener(ended.append)
    assert restarted.adopt(req.handle).phase is Phase.RUNNING
    gate.touch()
    until(lambda: ended == [req.handle])
    assert restarted.poll(req.handle) == Observation(Phase.EXITED, exit_code=7)


def test_unknown_handle_is_lost(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "state")
    obs = ex.adopt(ex.handle_for("ghost", 1))
    assert obs.phase is Phase.NOT_FOUND and "never started" in obs.message
    assert ex.cancel(ex.handle_for("ghost", 1), grace_seconds=1)  # nothing to stop


def test_cancel_before_the_process_is_up_asks_to_be_repeated(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "state")
    handle = ex.handle_for("job2", 1)
    (tmp_path / "state" / handle).mkdir(parents=True)  # launched, pid not yet written
    assert ex.poll(handle).phase is Phase.STARTING
    assert ex.cancel(handle, grace_seconds=1) is False


def test_release_kills_what_a_finished_job_left_running(tmp_path: Path, ex: LocalExecutor) -> None:
    req = request(tmp_path, ex, "sleep 60 & echo $! > child.pid; exit 0")
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    child = int((req.files.workdir / "child.pid").read_text())
    assert Path(f"/proc/{child}").exists()
    ex.release(req.handle)
    until(lambda: not Path(f"/proc/{child}").exists() or
          Path(f"/proc/{child}/stat").read_text().split(") ")[1].startswith("Z"))


def test_a_recycled_pid_is_not_mistaken_for_the_job(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "state")
    handle = ex.handle_for("job9", 1)
    (tmp_path / "state" / handle).mkdir(parents=True)
    (tmp_path / "state" / handle / "pid").write_text(f"{os.getpid()}\n")  # alive, not ours
    assert ex.poll(handle).phase is Phase.LOST


def test_exit_descriptions() -> None:
    assert describe_exit(0) == "exited with code 0"
    assert describe_exit(2) == "exited with code 2"
    assert describe_exit(137) == "killed by SIGKILL (possibly out of memory), exit code 137"
    assert describe_exit(143) == "killed by SIGTERM, exit code 143"


def test_a_gang_is_one_handle_that_a_restarted_executor_adopts(tmp_path: Path) -> None:
    first = LocalExecutor(tmp_path / "state")
    gate = tmp_path / "go"
    req = replace(request(tmp_path, first, f'while [ ! -e {gate} ]; do sleep 0.02; done; '
                          '[ "$RANK" = 1 ] && exit 5; exit 0', gpu_ids=("1", "3", "5", "7")),
                  workers=2, resources=Resources(gpus=2))
    first.launch(req)
    wait_for(first, req.handle, {Phase.RUNNING})
    restarted = LocalExecutor(tmp_path / "state")
    ended: list[str] = []
    restarted.set_exit_listener(ended.append)
    assert restarted.adopt(req.handle).phase is Phase.RUNNING
    gate.touch()
    until(lambda: ended == [req.handle])
    assert restarted.poll(req.handle) == Observation(Phase.EXITED, exit_code=5)
    assert "[launcher] rank 1 exited with code 5" in req.files.log.read_text()


def test_a_gang_gets_the_variables_of_its_framework(tmp_path: Path) -> None:
    executor = LocalExecutor(tmp_path / "state")
    req = replace(request(tmp_path, executor, 'echo "tf=${TF_CONFIG:-none} port=${MASTER_PORT}"'),
                  workers=2, framework="pytorch")
    executor.launch(req)
    wait_for(executor, req.handle, {Phase.EXITED})
    lines = sorted(req.files.log.read_text().splitlines())
    assert len(lines) == 2 and all(" tf=none port=" in line and line[-1].isdigit()
                                   for line in lines)


def test_a_log_past_its_cap_is_cut_with_a_note_and_the_job_runs_on(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "state", max_log_bytes=1000)
    req = request(tmp_path, ex, "head -c 5000 /dev/zero | tr '\\0' x; echo; echo late >&2; "
                                "touch done; exit 4")
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 4
    until(lambda: req.files.log.read_bytes().endswith(b"discarded\n"))
    assert req.files.log.read_bytes() == b"x" * 1000 + cut_note(1000)
    assert (req.files.workdir / "done").exists()  # it ran to its end


@pytest.mark.parametrize(("size", "more", "cut"), [
    (1000, "", False), (1001, "", True),
    # One byte more that is a line's end, or a NUL: each cuts it as any byte does.
    (1000, "\\n", True), (1000, "\\000\\n", True)])
def test_a_log_full_to_the_byte_is_whole_and_one_byte_more_cuts_it(
        tmp_path: Path, size: int, more: str, cut: bool) -> None:
    ex = LocalExecutor(tmp_path / "state", max_log_bytes=1000)
    req = request(tmp_path, ex, f"head -c {size} /dev/zero | tr '\\0' x; printf '{more}'")
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    until(lambda: ex._copied_file(req.handle).exists())
    assert req.files.log.read_bytes() == b"x" * 1000 + (cut_note(1000) if cut else b"")


@pytest.mark.parametrize(("size", "cut"), [(1000, False), (1001, True)])
def test_a_log_is_cut_as_well_where_the_byte_past_its_cap_cannot_be_kept_in_a_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int, cut: bool) -> None:
    # A full disk, say: the copier looks for that byte as it did before it had the file.
    ex = LocalExecutor(tmp_path / "state", max_log_bytes=1000)
    monkeypatch.setattr(ex, "_past_cap_file", lambda handle: tmp_path / "missing" / "past-cap")
    req = request(tmp_path, ex, f"head -c {size} /dev/zero | tr '\\0' x; touch done")
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    until(lambda: ex._copied_file(req.handle).exists())
    assert req.files.log.read_bytes() == b"x" * 1000 + (cut_note(1000) if cut else b"")
    assert (req.files.workdir / "done").exists()


def head_shim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str) -> Path:
    """Put a `head` first on PATH that runs the shell line `first`, then the real head;
    returns the real one."""
    shims = tmp_path / "shims"
    shims.mkdir()
    real = next(Path(d) / "head" for d in os.environ["PATH"].split(":")
                if (Path(d) / "head").is_file())
    (shims / "head").write_text(f'#!/bin/sh\n{first}\nexec {real} "$@"\n')
    (shims / "head").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    return real


@pytest.mark.parametrize(("size", "heads"), [(999, 1), (1000, 2), (1001, 2)])
def test_only_an_output_that_may_have_reached_the_cap_has_it_looked_past_at_its_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ex: LocalExecutor, size: int,
        heads: int) -> None:
    """The log's size says the output ended under the cap: no second `head` starts for the
    byte past it, which every job's end would wait for."""
    started = tmp_path / "heads"
    real = head_shim(tmp_path, monkeypatch, f'echo "$*" >> {started}')
    ex.max_log_bytes = 1000
    req = request(tmp_path, ex, f"{real} -c {size} /dev/zero | tr '\\0' x")
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    until(lambda: ex._copied_file(req.handle).exists())
    assert req.files.log.read_bytes() == b"x" * min(size, 1000) + \
        (cut_note(1000) if size > 1000 else b"")
    assert started.read_text().splitlines() == ["-c 1000", "-c 1"][:heads]


def test_the_copier_counts_bytes_in_the_c_locale_and_the_job_keeps_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ex: LocalExecutor) -> None:
    """The log's copier reads no locale files at every job's start; the job's side of the
    pipe is not touched by it."""
    seen = tmp_path / "copier-locale"
    head_shim(tmp_path, monkeypatch, f'echo "$LC_ALL" >> {seen}')
    monkeypatch.setenv("LC_ALL", "C.UTF-8")  # the service's, which its jobs inherit
    req = request(tmp_path, ex, 'echo "job: $LC_ALL"')
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    until(lambda: ex._copied_file(req.handle).exists())
    assert req.files.log.read_text() == "job: C.UTF-8\n"
    assert seen.read_text().splitlines() == ["C"]


def test_a_log_that_held_output_before_is_cut_at_its_cap_all_the_same(tmp_path: Path) -> None:
    """A relaunched attempt's log is appended to: its size is no measure of this output."""
    ex = LocalExecutor(tmp_path / "state", max_log_bytes=1000)
    req = request(tmp_path, ex, "head -c 1001 /dev/zero | tr '\\0' x")
    req.files.log.write_bytes(b"y" * 500)
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    until(lambda: ex._copied_file(req.handle).exists())
    assert req.files.log.read_bytes() == b"y" * 500 + b"x" * 1000 + cut_note(1000)


def test_a_log_cut_mid_line_says_so_while_the_job_runs(tmp_path: Path) -> None:
    """Output past the cap with no line's end yet (a progress bar redrawn with CR): the note
    comes at once, not when a line ends, and the rest is discarded as it comes."""
    ex = LocalExecutor(tmp_path / "state", max_log_bytes=1000)
    req = request(tmp_path, ex, "head -c 4000000 /dev/zero | tr '\\0' x; touch sent; "
                                "sleep 30")
    ex.launch(req)
    until(lambda: (req.files.workdir / "sent").exists())
    until(lambda: req.files.log.read_bytes().endswith(cut_note(1000)), timeout=5)
    assert ex.poll(req.handle).phase is Phase.RUNNING
    assert req.files.log.read_bytes() == b"x" * 1000 + cut_note(1000)
    ex.cancel(req.handle, 0.5)
    wait_for(ex, req.handle, {Phase.EXITED})


def test_a_log_under_its_cap_is_kept_whole_with_stderr(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "state", max_log_bytes=1000)
    req = request(tmp_path, ex, "echo out; echo err >&2")
    ex.launch(req)
    wait_for(ex, req.handle, {Phase.EXITED})
    until(lambda: req.files.log.read_bytes().count(b"\n") == 2)
    assert req.files.log.read_bytes() == b"out\nerr\n"


@pytest.mark.parametrize("standbys", [0, 1])
def test_a_job_that_forks_without_end_meets_its_process_cap(tmp_path: Path,
                                                           standbys: int) -> None:
    ex = LocalExecutor(tmp_path / "state", pids_limit=30, standbys=standbys)
    if ex._pids.base is None:
        pytest.skip("no pids cgroup this user may create here")
    until(lambda: ex._standbys.ready() == standbys)  # its cap made ahead, or at the launch
    handed = handed_over(ex)
    # Forks until a fork fails (or 200 children); each child waits for the parent's end.
    req = request(tmp_path, ex, "n=0; while [ $n -lt 200 ] && (sleep 30 &) 2>/dev/null; "
                                "do n=$((n+1)); done; echo $n > forked; exit 0")
    try:
        ex.launch(req)
        obs = wait_for(ex, req.handle, {Phase.EXITED}, timeout=30)
        forked = int((req.files.workdir / "forked").read_text())
        assert forked < 30
        assert obs.exit_code == 0
        assert obs.message.startswith("exited with code 0; it reached its limit of 30 "
                                      "processes (")
        assert obs.message.endswith(" forks refused)")
    finally:
        ex.release(req.handle)
    until(lambda: not (ex._pids.base / req.handle).exists())  # removed once empty
    assert handed == ([req.handle] if standbys else [])
    ex.close()


def test_a_notice_reaches_the_program_that_listens_and_not_the_shells_around_it(
        tmp_path: Path, ex: LocalExecutor) -> None:
    """SIGUSR1 goes to the job's whole group: a program with a handler hears it; the shell
    that runs the job's line (it does not exec a line of several commands) and the wrapper
    go on, so the job's own exit status is recorded."""
    listener = ("import signal, sys, time, pathlib; "
                "signal.signal(signal.SIGUSR1, lambda *_: sys.exit(7)); "
                "pathlib.Path('ready').touch(); time.sleep(30)")
    req = request(tmp_path, ex, f'{sys.executable} -c "{listener}"; echo "after $?"; '
                  'echo "$TRAINYARD_PREEMPT_NOTICE"; exit 0')
    ex.launch(req)
    until(lambda: (req.files.workdir / "ready").exists())
    assert ex.send_signal(req.handle, signal.SIGUSR1)
    obs = wait_for(ex, req.handle, {Phase.EXITED})
    assert obs.exit_code == 0
    log = req.files.log.read_text()
    assert "after 7" in log
    assert f"{req.files.workdir}/.trainyard-preempt-notice" in log  # where it would look
    assert ex.send_signal(req.handle, signal.SIGUSR1)  # ended: nothing left to signal


def test_a_code_directory_is_its_jobs_working_directory_and_code_path(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.sh").write_text('echo "ran in $(pwd) with CODE_PATH=$CODE_PATH"\n')
    ex = LocalExecutor(tmp_path / "state")
    plain = request(tmp_path, ex, "sh train.sh")
    # Its image is for image backends; here the host's shell runs it.
    req = replace(plain, image="sha256:" + "b" * 64,
                  files=replace(plain.files, code=code))
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    assert req.files.log.read_text() == f"ran in {code} with CODE_PATH={code}\n"


def test_a_job_without_code_has_no_code_path_and_an_image_alone_is_refused(
        tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "state")
    req = request(tmp_path, ex, 'echo "[${CODE_PATH-unset}] $(pwd)"')
    ex.launch(req)
    assert wait_for(ex, req.handle, {Phase.EXITED}).exit_code == 0
    assert req.files.log.read_text() == f"[unset] {req.files.workdir}\n"
    with pytest.raises(LaunchError, match="runs commands, not images"):
        ex.launch(replace(request(tmp_path, ex, "true", attempt=2), image="sha256:" + "b" * 64))
