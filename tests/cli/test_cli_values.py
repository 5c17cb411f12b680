"""Every bad option value is answered with a sentence naming the option (exit code 2),
never a traceback, before anything is sent: no server listens at the address given. (What
only the server can judge, it refuses naming the field: tests/cli/test_cli_limits.py.)"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from trainyard.cli.main import app

NOWHERE = "127.0.0.1:1"
HUGE = "99999999999999999999"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*args, "--server", NOWHERE], env={"COLUMNS": "300"})
    text = re.sub(r"[\s│╭╮╰╯─]+", " ", result.output)
    assert "Traceback" not in result.output and not isinstance(result.exception, ValueError)
    return result.exit_code, text


SUBMIT = ("submit", "--name", "x", "--command", "true")


@pytest.mark.parametrize(("args", "option", "problem"), [
    ((*SUBMIT, "--priority", HUGE), "--priority", "out of range"),
    ((*SUBMIT, "--priority", "-" + HUGE), "--priority", "out of range"),
    ((*SUBMIT, "--workers", "2147483648"), "--workers", "out of range"),
    ((*SUBMIT, "--gpus", HUGE), "--gpus", "out of range"),
    ((*SUBMIT, "--memory", HUGE + "T"), "--memory", "out of range"),
    ((*SUBMIT, "--memory", "4X"), "--memory", "is not a size"),
    ((*SUBMIT, "--memory", "-1G"), "--memory", "is not a size"),
    ((*SUBMIT, "--cpus", "nan"), "--cpus", "finite"),
    ((*SUBMIT, "--cpus", "inf"), "--cpus", "finite"),
    ((*SUBMIT, "--pipeline-max-parallel", HUGE), "--pipeline-max-parallel", "out of range"),
    ((*SUBMIT, "--label", "k=a\udc80b"), "--label", "lone surrogate"),
    ((*SUBMIT, "--param", "LR=\udc80"), "--param", "lone surrogate"),
    ((*SUBMIT, "--request-id", "r\ud800"), "--request-id", "lone surrogate"),
    (("submit", "--name", "x" * (1 << 20 + 1)), "--name", "at most"),
    (("sweep", "--name", "s", "--command", "true", "--trials", HUGE, "--range", "lr=0:1"),
     "--trials", "out of range"),
    (("sweep", "--name", "s", "--seed", "9" * 30, "--trials", "2", "--range", "lr=0:1"),
     "--seed", "out of range"),
    (("sweep", "--name", "s", "--trials", "2", "--range", "lr=0:inf"), "--range",
     "finite"),
    (("sweep", "--name", "s", "--grid", "a=1", "--max-parallel", HUGE), "--max-parallel",
     "out of range"),
    (("list", "--limit", HUGE), "--limit", "out of range"),
    (("runs", "list", "--limit", HUGE), "--limit", "out of range"),
    (("runs", "list", "--metric", "acc>=nan"), "--metric", "finite"),
    (("runs", "list", "--job", "j\ud800"), "--job", "lone surrogate"),
    (("status", "j\ud800"), "JOB_ID", "lone surrogate"),
    (("models", "alias", "m", "2147483648", "prod"), "VERSION", "out of range"),
    (("admin", "audit", "--limit", HUGE), "--limit", "out of range"),
    (("admin", "users", "create", "a\ud800"), "NAME", "lone surrogate"),
    (("admin", "tokens", "create", "ana", "--expires-in", "9" * 20 + "w"), "--expires-in",
     "out of range"),
])
def test_a_bad_value_is_a_sentence_naming_its_option(args: tuple[str, ...], option: str,
                                                      problem: str) -> None:
    code, text = run(*args)
    assert code == 2, text
    assert f"Invalid value for {option}" in text, text
    assert problem in text, text
    assert "UNAVAILABLE" not in text  # refused before it was sent


def test_memory_takes_the_units_users_type() -> None:
    for size in ("512M", "4G", "4Gi", "2048"):
        code, text = run(*SUBMIT, "--memory", size)
        assert code == 1 and "UNAVAILABLE" in text, text  # accepted, then sent


@pytest.mark.parametrize(("args", "option"), [
    (("sweep", "--name", "s", "--grid", "a=1,\ud800"), "--grid"),
    (("sweep", "--name", "s", "--trials", "2", "--choice", "a=1,\ud800"), "--choice"),
])
def test_a_sweeps_values_are_named_by_their_option(args: tuple[str, ...], option: str) -> None:
    code, text = run(*args)
    assert code == 2 and f"Invalid value for {option}: is not valid Unicode" in text, text
