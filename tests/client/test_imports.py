"""The client side loads nothing of the server: the SDK, the CLI's entry point, the job
runtime, credentials and downloads speak the API protocol only."""

from __future__ import annotations

import json
import subprocess
import sys

SERVER_SIDE = ("trainyard.services", "trainyard.store", "trainyard.tracker",
               "trainyard.executors", "trainyard.scheduler", "trainyard.server",
               "trainyard.metadata", "trainyard.api", "trainyard.domain", "trainyard.sim")
CLIENT_SIDE = ("trainyard.client", "trainyard.client.credentials",
               "trainyard.client.downloads", "trainyard.client.uploads", "trainyard.runtime",
               "trainyard.cli.main")


def loaded_by(module: str) -> list[str]:
    """The server modules that importing `module` loads, in a fresh interpreter."""
    code = (f"import json, sys, {module}; "
            f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({SERVER_SIDE!r}))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    return list(json.loads(done.stdout))


def test_client_modules_import_no_server_module() -> None:
    for module in CLIENT_SIDE:
        assert loaded_by(module) == [], module


def test_the_check_sees_a_server_import() -> None:
    assert "trainyard.store.db" in loaded_by("trainyard.services.access")
