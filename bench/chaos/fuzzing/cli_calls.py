"""Generated command lines for every command of the `trainyard` app, found by walking its
typer commands and their options: each option's value at and beyond what its type takes,
run in-process with typer's CliRunner, and a sample as real processes. A run that ends with
an exception other than a clean exit, or prints a traceback, counts."""

from __future__ import annotations

import enum
import os
import subprocess
import sys
import threading
import traceback
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer.main
from typer.testing import CliRunner

from chaos.fuzzing.grpc_calls import Outcome
from chaos.fuzzing.values import Values
from trainyard.cli.main import app

# Commands that would start something long or heavy whatever their options: a server, an
# image build (debootstrap). They are left out, and said so in the result.
SKIPPED = ("server", "images build-base", "images build")
# Commands that may wait for a job to end: real processes only, under a timeout.
FOLLOWING = ("watch",)
FOLLOW_FLAGS = ("--follow", "-f")
SERVERS = ("127.0.0.1:1", "", "not a host", "127.0.0.1:99999", "[::1", "127.0.0.1:0")
SUBPROCESS_TIMEOUT_S = 30
IN_PROCESS_TIMEOUT_S = 60


@dataclass
class Command:
    path: list[str]
    params: list[Any]  # the click parameters, --help left out


def commands() -> list[Command]:
    found: list[Command] = []

    def walk(cmd: Any, path: list[str]) -> None:
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
        elif " ".join(path) not in SKIPPED:
            found.append(Command(path, [p for p in cmd.params if p.name != "help"]))

    walk(typer.main.get_command(app), [])
    return found


def _annotation(param: Any) -> Any:
    """The parameter's type without Optional and list around it."""
    annotation = param.type_descriptor.annotation
    for _ in range(3):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        origin = typing.get_origin(annotation)
        if origin in (typing.Union, types.UnionType, list) and args:
            annotation = args[0]
    return annotation


class CliFuzzer:
    def __init__(self, values: Values, address: str, tokens: dict[str, str],
                 scratch: Path) -> None:
        self.values = values
        self.address = address
        self.tokens = tokens
        self.scratch = scratch
        self.commands = commands()
        self.runner = CliRunner()
        scratch.mkdir(parents=True, exist_ok=True)
        (scratch / "garbage.csv").write_bytes(os.urandom(2000))
        (scratch / "empty.csv").write_text("")
        (scratch / "out").mkdir(exist_ok=True)
        self.paths = [str(scratch / "garbage.csv"), str(scratch / "empty.csv"),
                      str(scratch / "out"), str(scratch / "missing" / "x"), "", "relative.txt",
                      str(scratch / "out" / "new.json")]

    # --- generation ------------------------------------------------------------------------

    def argv(self) -> tuple[Command, list[str]]:
        command = self.values.rng.choice(self.commands)
        template = self._template(" ".join(command.path))
        if template is not None and self.values.chance(0.4):
            return command, [*command.path, *template]
        out = list(command.path)
        for param in command.params:
            if param.param_type_name == "argument":
                if self.values.chance(0.93):
                    out.append(self._value(param))
                continue
            if param.name == "server":
                if self.values.chance(0.08):
                    out += [param.opts[0], self.values.rng.choice(SERVERS)]
                continue
            if self.values.chance(0.55):
                continue
            if param.is_flag:
                out.append(self.values.rng.choice(param.opts))
                continue
            for _ in range(self.values.rng.randint(1, 3) if param.multiple else 1):
                out += [self.values.rng.choice(param.opts), self._value(param)]
        if self.values.chance(0.03):
            out.append(self.values.rng.choice(("--no-such-option", "extra", "--", "-")))
        return command, out

    def _template(self, name: str) -> list[str] | None:
        """The arguments of a run of `name` that should succeed for a caller allowed it."""
        p, r = self.values.pools, self.values.rng

        def one(pool: list[str], default: str = "none") -> str:
            return r.choice(pool) if pool else default

        job, run_id, dataset = one(p.job_ids), one(p.run_ids), one(p.datasets)
        made = {
            "submit": ["--name", f"cli-{r.randint(0, 10**6)}", "--command",
                       self.values.safe_command(), "--param", "LR=0.1", "--label", "k=v"],
            "sweep": ["--name", "cli-sweep", "--command", "true", "--grid", "LR=0.1,0.2",
                      "--max-parallel", "1"],
            "status": [job], "logs": [job], "cancel": [job], "watch": [job], "list": [],
            "queues": [], "whoami": [], "datasets list": [], "datasets lineage": [dataset],
            "datasets register": [f"cli-{r.randint(0, 10**6)}", one(p.dataset_paths)],
            "datasets delete": [dataset], "runs list": ["--limit", "5"], "runs show": [run_id],
            "runs compare": [run_id, one(p.run_ids)], "runs reproduce": [run_id],
            "models list": [], "models show": ["fuzzmodel"], "models lineage": ["fuzzmodel"],
            "models download": ["fuzzmodel", str(self.scratch / "out" / f"m{r.randint(0, 99)}")],
            "models alias": ["fuzzmodel", "1", "prod"], "admin audit": ["--limit", "5"],
            "admin users create": [f"cu{r.randint(0, 10**6)}"], "admin users list": [],
            "admin teams create": [f"ct{r.randint(0, 10**6)}"], "admin teams list": [],
            "admin teams add-member": [one(p.teams), one(p.users)],
            "admin tokens create": [one(p.users), "--expires-in", "1h"],
            "admin tokens list": [], "admin tokens revoke": [one(p.token_ids)],
            "admin queues list": [], "images list": [],
        }
        return made.get(name)

    def _value(self, param: Any) -> str:
        v, r = self.values, self.values.rng
        kind = _annotation(param)
        name = param.name or ""
        if kind is Path or name in ("trace", "dest", "context", "out", "plots"):
            return r.choice(self.paths)
        if isinstance(kind, type) and issubclass(kind, enum.Enum):
            return r.choice([m.value for m in kind]) if v.chance(0.8) else v.text()
        if kind is int:
            roll = r.random()
            if roll < 0.6:
                return str(v.integer(-(2**31), 2**31 - 1))
            return str(v.huge_integer()) if roll < 0.8 else v.text()
        if kind is float:
            return r.choice((str(v.real()), "nan", "inf", "-inf", "1e999", v.text()))
        if param.multiple and name in ("param", "label", "grid", "choice", "range"):
            if v.chance(0.7):
                return f"{r.choice(('LR', 'K', 'k', 'EPOCHS'))}={v.text()}"
            return v.text()
        return v.text(name)

    # --- running ---------------------------------------------------------------------------

    def _env(self, caller: str) -> dict[str, str]:
        return {"TRAINYARD_SERVER": self.address, "TRAINYARD_TOKEN": self.tokens[caller],
                "TRAINYARD_CONFIG": str(self.scratch / "config.toml"), "COLUMNS": "120"}

    def one(self, as_process: bool = False) -> Outcome:
        command, argv = self.argv()
        caller = self.values.caller(list(self.tokens))
        name = " ".join(command.path)
        following = name in FOLLOWING or any(flag in argv for flag in FOLLOW_FLAGS)
        if as_process or following:
            return self._process(name, argv, caller)
        return self._in_process(name, argv, caller)

    def _in_process(self, name: str, argv: list[str], caller: str) -> Outcome:
        box: dict[str, Any] = {}

        def invoke() -> None:
            box["result"] = self.runner.invoke(app, argv, env=self._env(caller),
                                               catch_exceptions=True)

        cwd = os.getcwd()
        os.chdir(self.scratch)
        try:
            worker = threading.Thread(target=invoke, daemon=True)
            worker.start()
            worker.join(IN_PROCESS_TIMEOUT_S)
        finally:
            os.chdir(cwd)
        result = box.get("result")
        if result is None:
            return Outcome("cli", name, caller, "hung", internal=True,
                           detail=f"no end within {IN_PROCESS_TIMEOUT_S} s: {_show(argv)}")
        exc = result.exception
        tb = ""
        if exc is not None and not isinstance(exc, SystemExit):
            tb = "".join(traceback.format_exception(exc)[-3:])
        elif "Traceback (most recent call" in result.output:
            tb = result.output[-600:]
        outcome = Outcome("cli", name, caller, str(result.exit_code), traceback=tb)
        if tb:
            outcome.detail = f"{_show(argv)}\n{tb}"
        return outcome

    def _process(self, name: str, argv: list[str], caller: str) -> Outcome:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINYARD_")}
        env.update(self._env(caller))
        # What a real command line can carry: no NUL, and each argument under the kernel's
        # limit of 128 KiB.
        argv = [a.replace("\0", "")[:30_000] for a in argv]
        try:
            done = subprocess.run([sys.executable, "-m", "trainyard.cli.main", *argv],
                                  capture_output=True, text=True, env=env, cwd=self.scratch,
                                  timeout=SUBPROCESS_TIMEOUT_S, stdin=subprocess.DEVNULL,
                                  errors="replace")
        except subprocess.TimeoutExpired:
            return Outcome("cli-process", name, caller, "timeout",
                           detail=f"still running after {SUBPROCESS_TIMEOUT_S} s: {_show(argv)}")
        output = done.stdout + done.stderr
        tb = output[-600:] if "Traceback (most recent call" in output else ""
        outcome = Outcome("cli-process", name, caller, str(done.returncode), traceback=tb)
        if tb:
            outcome.detail = f"{_show(argv)}\n{tb}"
        return outcome


def _show(argv: list[str], limit: int = 300) -> str:
    text = " ".join(repr(a) if len(a) < 80 else repr(a[:60]) + f"...({len(a)})" for a in argv)
    return text[:limit]
