"""The command line at its inputs' limits against a real server: what only the server can
judge (NUL bytes, control characters, names too long, 10,000 hyperparameters, every Unicode
class) is answered with the server's sentence naming the field and exit code 1, or taken;
never a traceback, and a refusal stores nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from tests.serverproc import ServerProcess
from trainyard.cli.main import app
from trainyard.client import Client


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("cli-limits") / "data").start()
    yield proc
    proc.stop()


def jobs(server: ServerProcess) -> int:
    with Client(server.address) as client:
        return len(client.list_jobs(page_size=1000)[0])


SUBMIT = ("submit", "--name", "x", "--command", "true")
CASES: list[tuple[tuple[str, ...], str]] = [
    (("submit", "--name", "a\x00b", "--command", "true"), "name"),
    (("submit", "--name", "x" * 300, "--command", "true"), "name"),
    (("submit", "--name", "", "--command", "true"), "name"),
    ((*SUBMIT, "--label", "k=a\x00"), "labels"),
    ((*SUBMIT, "--label", "k=" + "v" * (1 << 20)), "labels"),
    ((*SUBMIT, "--command", "true\x00"), "command"),
    ((*SUBMIT, "--priority", str(2**31 - 1)), "priority"),
    ((*SUBMIT, "--memory", "8P"), "resources"),
    ((*SUBMIT, "--workers", "100000"), "workers"),
    ((*SUBMIT, "--queue", "q\u202e"), "queue"),
    ((*SUBMIT, *[f"--param=P{i}={i}" for i in range(10_000)]), "hyperparameters"),
    *[((*SUBMIT, "--label", f"k={text}"), "labels")
      for text in ("e\u0301", "\u05e9\u202e", "\U0001f469\u200d\U0001f52c", "a\u200bb",
                   "a\x1b[31m", "\ue000")],
    (("status", "x" * (1 << 20)), "job_id"),
    (("list", "--limit", str(2**31 - 1)), "page_size"),
    (("runs", "list", "--limit", "-1"), "page_size"),
    (("sweep", "--name", "s", "--command", "true", "--trials", str(2**31 - 1), "--range",
      "lr=0:1"), "trials"),
]


@pytest.mark.parametrize(("args", "field"), CASES, ids=[f"{c[1]}-{i}" for i, c in
                                                       enumerate(CASES)])
def test_a_value_only_the_server_judges_is_answered(server: ServerProcess,
                                                     args: tuple[str, ...], field: str) -> None:
    before = jobs(server)
    result = CliRunner().invoke(app, [*args, "--server", server.address],
                                env={"COLUMNS": "300"})
    text = re.sub(r"\s+", " ", result.output)
    assert "Traceback" not in result.output and result.exception is None or \
        isinstance(result.exception, SystemExit), result.exception
    if result.exit_code == 0:
        return
    assert result.exit_code == 1, text
    assert f"error (INVALID_ARGUMENT): {field}" in text or \
        f"error (NOT_FOUND): job '{'x' * 10}" in text, text
    assert jobs(server) == before
