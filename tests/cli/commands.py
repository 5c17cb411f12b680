"""The command line run as a user's script runs it: a real process, against a real server."""

import os
import subprocess
import sys

from tests.serverproc import ServerProcess


def trainyard(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "TRAINYARD_SERVER": server.address}
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=60)
