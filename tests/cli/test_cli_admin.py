"""Identity from the command line: bootstrap, admin commands with a token, login, whoami,
and the server's refusal to expose itself."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.serverproc import ServerProcess


def trainyard(*args: str, env: dict[str, str] | None = None,
              stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
    return subprocess.run([sys.executable, "-m", "trainyard.cli.main", *args],
                          env={**base, "COLUMNS": "200", **(env or {})}, input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_bootstrap_ends_single_user_mode_and_tokens_rule(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = ServerProcess(data).start()
    try:
        addr = {"TRAINYARD_SERVER": server.address, "HOME": str(tmp_path)}
        who = trainyard("whoami", "-o", "json", env=addr)
        assert who.returncode == 0 and json.loads(who.stdout)["single_user"] is True
        boot = trainyard("admin", "bootstrap", "boss", "--data-dir", str(data), "-o", "json")
        assert boot.returncode == 0, boot.stderr
        token = json.loads(boot.stdout)["token"]
        again = trainyard("admin", "bootstrap", "other", "--data-dir", str(data))
        assert again.returncode == 1 and "already has users" in again.stderr
        # Within the authenticator's cache period, the running server asks for tokens.
        deadline = time.monotonic() + 15
        while (anon := trainyard("list", env=addr)).returncode == 0:
            assert time.monotonic() < deadline
            time.sleep(0.5)
        assert "UNAUTHENTICATED" in anon.stderr and "Traceback" not in anon.stderr
        admin = {**addr, "TRAINYARD_TOKEN": token}
        assert trainyard("admin", "users", "create", "ann", env=admin).returncode == 0
        assert trainyard("admin", "teams", "create", "vision", env=admin).returncode == 0
        added = trainyard("admin", "teams", "add-member", "vision", "ann", "-o", "json",
                          env=admin)
        assert json.loads(added.stdout)["members"] == ["ann"]
        made = trainyard("admin", "tokens", "create", "ann", "--expires-in", "1h",
                         "--read-only", env=admin)
        assert made.returncode == 0 and "read-only" in made.stderr
        ann_token = made.stdout.strip()
        assert ann_token.startswith("ty_") and ann_token not in made.stderr
        # A read-only token reads and may not write.
        ann = {**addr, "TRAINYARD_TOKEN": ann_token}
        assert trainyard("list", env=ann).returncode == 0
        refused = trainyard("submit", "--name", "x", "--command", "true", env=ann)
        assert refused.returncode == 1 and "PERMISSION_DENIED" in refused.stderr
        assert "read-only" in refused.stderr
        # Revoked: refused at once.
        token_id = ann_token.split("_")[1]
        assert trainyard("admin", "tokens", "revoke", token_id, env=admin).returncode == 0
        revoked = trainyard("list", env=ann)
        assert revoked.returncode == 1 and "was revoked" in revoked.stderr
        bad = trainyard("admin", "tokens", "create", "ann", "--expires-in", "soon", env=admin)
        assert bad.returncode == 2 and "--expires-in" in bad.stderr
        audit = json.loads(trainyard("admin", "audit", "-o", "json", env=admin).stdout)
        assert {"RevokeToken", "CreateToken", "CreateUser", "Train"} <= \
            {e["action"] for e in audit}
        # `login` checks the token, then keeps it private to its owner.
        login = trainyard("login", env=addr, stdin=token + "\n")
        assert login.returncode == 0, login.stderr
        config = tmp_path / ".trainyard" / "config.toml"
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        who = trainyard("whoami", env={"HOME": str(tmp_path)})
        assert who.returncode == 0 and who.stdout.startswith("boss (admin")
        config.chmod(0o644)
        loose = trainyard("whoami", env={"HOME": str(tmp_path)})
        # The sentence wraps at the terminal's width wherever its long paths put the end.
        assert loose.returncode == 1 and "chmod 600" in " ".join(loose.stderr.split())
        logs = server.log_path.read_text()
        assert token.split("_", 2)[2] not in logs and ann_token.split("_", 2)[2] not in logs
    finally:
        server.stop()


@pytest.mark.parametrize(("setup", "words"), [
    ("none", "with no users"),
    ("users", "without TLS"),
])
def test_a_server_refuses_to_expose_itself(tmp_path: Path, setup: str, words: str) -> None:
    data = tmp_path / "data"
    if setup == "users":
        assert trainyard("admin", "bootstrap", "boss", "--data-dir", str(data)).returncode == 0
    # A documentation-only address: the refusal comes before any bind.
    done = trainyard("server", "--host", "192.0.2.1", "--port", "0", "--data-dir", str(data))
    assert done.returncode == 1
    assert "refusing to bind 192.0.2.1" in done.stderr and words in done.stderr
    assert "Traceback" not in done.stderr


def test_gen_cert_makes_a_private_key(tmp_path: Path) -> None:
    done = trainyard("admin", "gen-cert", "--out", str(tmp_path / "tls"))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE((tmp_path / "tls" / "server.key").stat().st_mode) == 0o600
    again = trainyard("admin", "gen-cert", "--out", str(tmp_path / "tls"))
    assert again.returncode == 1 and "server" in again.stderr


def test_single_user_mode_cannot_lock_itself_out(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data").start()
    try:
        addr = {"TRAINYARD_SERVER": server.address, "HOME": str(tmp_path)}
        made = trainyard("admin", "users", "create", "ann", env=addr)
        assert made.returncode == 1 and "admin bootstrap" in made.stderr
        who = trainyard("whoami", "-o", "json", env=addr)
        assert who.returncode == 0 and json.loads(who.stdout)["single_user"] is True
    finally:
        server.stop()


@pytest.mark.parametrize("where", ["data-dir", "database"])
def test_bootstrap_without_a_store_says_so_without_a_traceback(tmp_path: Path,
                                                               where: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    args = ["--data-dir", str(blocker / "data")] if where == "data-dir" else \
        ["--data-dir", str(tmp_path / "data"),
         "--database-url", "postgresql://nobody@127.0.0.1:1/none"]
    result = trainyard("admin", "bootstrap", "boss", *args)
    assert result.returncode == 1
    assert result.stderr.startswith("error: cannot open the store at ")
    assert "Traceback" not in result.stderr and not result.stdout
