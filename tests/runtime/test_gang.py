"""The gang launcher, run as the executors run it: a real process of real workers."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from trainyard import runtime
from trainyard.executors.base import LAUNCHER

LAUNCH = [sys.executable, "-I", str(LAUNCHER), "launch"]


def launch(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LAUNCH, *args], capture_output=True, text=True, timeout=timeout)


def by_rank(output: str) -> dict[int, list[str]]:
    lines: dict[int, list[str]] = {}
    for line in output.splitlines():
        assert line.startswith(("[rank ", "[launcher] ")), line
        if line.startswith("[rank "):
            rank, text = line[len("[rank "):].split("] ", 1)
            lines.setdefault(int(rank), []).append(text)
    return lines


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except FileNotFoundError:
        return True


def test_each_worker_gets_its_rank_its_peers_and_its_share_of_the_gpus() -> None:
    probe = ("import json, os; print(json.dumps({k: os.environ[k] for k in ('WORLD_SIZE', "
             "'RANK', 'LOCAL_RANK', 'MASTER_ADDR', 'MASTER_PORT', 'TF_CONFIG', "
             "'CUDA_VISIBLE_DEVICES', 'KEPT')}))")
    done = subprocess.run([*LAUNCH, "--workers", "3", "--gpu-ids", "a,b,c,d,e,f", "--",
                           sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=20, env={**os.environ, "KEPT": "yes"})
    assert done.returncode == 0, done.stdout + done.stderr
    seen = {rank: json.loads(lines[0]) for rank, lines in by_rank(done.stdout).items()}
    assert sorted(seen) == [0, 1, 2]
    ports = {env["MASTER_PORT"] for env in seen.values()}
    assert len(ports) == 1  # one rendezvous for all
    workers = json.loads(seen[0]["TF_CONFIG"])["cluster"]["worker"]
    assert len(set(workers)) == 3 and all(w.startswith("127.0.0.1:") for w in workers)
    assert f"127.0.0.1:{ports.pop()}" not in workers
    for rank, env in seen.items():
        assert (env["WORLD_SIZE"], env["RANK"], env["LOCAL_RANK"]) == ("3", str(rank), str(rank))
        assert env["MASTER_ADDR"] == "127.0.0.1" and env["KEPT"] == "yes"
        assert json.loads(env["TF_CONFIG"]) == {"cluster": {"worker": workers},
                                                "task": {"type": "worker", "index": rank}}
    assert [seen[r]["CUDA_VISIBLE_DEVICES"] for r in range(3)] == ["a,b", "c,d", "e,f"]


def test_without_gpus_no_worker_sees_one_and_every_line_is_prefixed() -> None:
    done = launch("--workers", "2", "--gpu-ids", "", "--",
                  'echo "gpus=[$CUDA_VISIBLE_DEVICES]"; echo err >&2; printf "no newline"')
    assert done.returncode == 0
    assert by_rank(done.stdout) == {r: ["gpus=[]", "err", "no newline"] for r in (0, 1)}


def test_a_failing_worker_stops_the_others_and_its_code_is_the_jobs(tmp_path: Path) -> None:
    # Rank 1 ignores TERM (so it takes the KILL after the grace); rank 2 stops on TERM.
    command = (f'echo $$ > {tmp_path}/$RANK.pid; case $RANK in '
               f'0) while [ ! -s {tmp_path}/1.pid ] || [ ! -s {tmp_path}/2.pid ]; do sleep 0.02;'
               ' done; exit 7;; 1) trap "" TERM; exec sleep 60;; *) exec sleep 60;; esac')
    started = time.monotonic()
    done = launch("--workers", "3", "--grace", "0.5", "--", command)
    assert done.returncode == 7
    assert time.monotonic() - started < 10
    assert "[launcher] rank 0 exited with code 7; stopping the other 2 workers" in done.stdout
    for rank in (1, 2):
        assert gone(int((tmp_path / f"{rank}.pid").read_text()))


def test_a_worker_killed_by_a_signal_fails_the_job_with_128_plus_it() -> None:
    done = launch("--workers", "2", "--",
                  'if [ "$RANK" = 1 ]; then kill -9 $$; fi; exec sleep 60')
    assert done.returncode == 128 + signal.SIGKILL


def test_term_to_the_launcher_reaches_every_worker(tmp_path: Path) -> None:
    command = (f'trap "echo stopping; exit 0" TERM; touch {tmp_path}/$RANK.up; '
               'while true; do sleep 0.05; done')
    proc = subprocess.Popen([*LAUNCH, "--workers", "2", "--", command], stdout=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 10
    while not all((tmp_path / f"{r}.up").exists() for r in (0, 1)):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)  # to the launcher alone, as a container's init does
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0  # each worker stopped cleanly, so the job did
    assert by_rank(out) == {0: ["stopping"], 1: ["stopping"]}


def test_with_no_forward_the_launcher_outlives_a_term_its_workers_also_got(
        tmp_path: Path) -> None:
    """Under the local executor a cancel signals the job's whole process group; the
    launcher must neither pass it on a second time nor die before its workers."""
    command = (f'trap "echo term >> {tmp_path}/$RANK.log; sleep 0.3; exit 0" TERM; '
               f'touch {tmp_path}/$RANK.up; while true; do sleep 0.05; done')
    proc = subprocess.Popen([*LAUNCH, "--workers", "2", "--no-forward", "--", command],
                            start_new_session=True)
    deadline = time.monotonic() + 10
    while not all((tmp_path / f"{r}.up").exists() for r in (0, 1)):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert [(tmp_path / f"{r}.log").read_text() for r in (0, 1)] == ["term\n", "term\n"]


def test_a_framework_chooses_which_variables_the_workers_get() -> None:
    probe = ("import os; print(','.join(sorted(k for k in ('WORLD_SIZE', 'RANK', 'MASTER_ADDR', "
             "'MASTER_PORT', 'TF_CONFIG') if k in os.environ)))")
    expected = {"pytorch": "MASTER_ADDR,MASTER_PORT,RANK,WORLD_SIZE",
                "tensorflow": "RANK,TF_CONFIG,WORLD_SIZE", "none": "RANK,WORLD_SIZE",
                "both": "MASTER_ADDR,MASTER_PORT,RANK,TF_CONFIG,WORLD_SIZE"}
    for framework, names in expected.items():
        done = launch("--workers", "2", f"--framework={framework}", "--", sys.executable, "-c",
                      probe)
        assert done.returncode == 0, done.stderr
        assert by_rank(done.stdout) == {0: [names], 1: [names]}, framework
    assert launch("--workers", "2", "--framework=jax", "--", "true").returncode == 2


def test_the_launcher_refuses_what_it_cannot_do() -> None:
    uneven = launch("--workers", "2", "--gpu-ids", "0,1,2", "--", "true")
    assert uneven.returncode == 2 and "3 GPUs cannot be shared equally by 2" in uneven.stderr
    assert launch("--workers", "2").returncode == 2  # no command
    assert launch("--workers", "0", "--", "true").returncode == 2


def test_it_runs_as_a_module_too() -> None:
    done = subprocess.run([sys.executable, "-m", "trainyard.runtime", "launch", "--workers",
                           "2", "--", "echo $RANK"], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0 and sorted(done.stdout.splitlines()) == ["[rank 0] 0",
                                                                        "[rank 1] 1"]


def test_the_worker_env_names_are_reserved_by_the_contract() -> None:
    from trainyard.domain.contract import WORKER_NAMES

    assert set(runtime.worker_env(0, 2, 1, [2, 3], ["g0", "g1"])) == WORKER_NAMES
