import os
import subprocess
import time

from trainyard.processes import pid_alive


def test_a_running_process_is_alive_and_an_exited_one_is_not_even_unreaped() -> None:
    assert pid_alive(os.getpid())
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert pid_alive(child.pid)
        child.kill()  # a zombie from its death until the wait below
        deadline = time.monotonic() + 10
        while pid_alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not pid_alive(child.pid)
        assert os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT) is not None  # unreaped
    finally:
        child.wait()
    assert not pid_alive(child.pid)
