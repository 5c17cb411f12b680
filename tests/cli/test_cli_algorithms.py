"""`trainyard algorithms` and the SDK's algorithm calls against a real server process, as a
user's script would run them: a code directory uploaded, an image of the real engine pinned,
JSON out, sentences (never tracebacks) for mistakes."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.algorithm_code import TRAIN_PY, write_tree
from tests.cli.test_cli import trainyard
from tests.dockerenv import Engine, engine
from tests.serverproc import ServerProcess
from trainyard.client import Client, Resources, TrainyardError
from trainyard.services.images import BASE_IMAGE

__all__ = ["engine"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("cli-algorithms") / "data").start()
    yield proc
    proc.stop()


def ok(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    out = trainyard(server, *args)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    return out


def js(server: ServerProcess, *args: str) -> Any:
    return json.loads(ok(server, *args, "-o", "json").stdout)


def refused(server: ServerProcess, *args: str, code: int = 1) -> str:
    out = trainyard(server, *args)
    assert out.returncode == code, (out.stdout, out.stderr)
    assert "Traceback" not in out.stdout + out.stderr
    return " ".join(out.stderr.split())


def test_register_show_alias_and_delete_a_code_directory(server: ServerProcess,
                                                         tmp_path: Path) -> None:
    code = write_tree(tmp_path / "code", {"train.py": TRAIN_PY, "lib/util.py": "X = 1\n"})
    first = js(server, "algorithms", "register", "mlp", "--code", str(code), "--command",
               "python3 train.py", "-p", "LR=0.1", "--hyperparameter", "EPOCHS=3",
               "--cpus", "2", "--memory", "1Gi", "--description", "a small MLP",
               "--git-commit", "abc1234")
    assert (first["version"], first["source"], first["created"]) == (1, "code", True)
    assert first["hyperparameters"] == {"LR": "0.1", "EPOCHS": "3"}
    assert first["resources"] == {"cpus": 2.0, "memory_mb": 1024, "gpus": 0}
    assert (first["code_file_count"], first["git_commit"]) == (2, "abc1234")
    assert len(first["code_hash"]) == 64

    same = ok(server, "algorithms", "register", "mlp", "--code", str(code), "--command",
              "python3 train.py", "-p", "LR=0.1", "-p", "EPOCHS=3", "--cpus", "2",
              "--memory", "1Gi", "--description", "a small MLP", "--git-commit", "abc1234")
    assert "mlp:1 is the latest version and the same in every field" in same.stdout
    twin = js(server, "algorithms", "register", "mlp-twin", "--code", str(code), "--command",
               "python3 train.py")
    assert twin["code_hash"] == first["code_hash"] and twin["version"] == 1
    (code / "train.py").write_text(TRAIN_PY + "# v2\n")
    second = ok(server, "algorithms", "register", "mlp", "--code", str(code), "--command",
                "python3 train.py")
    assert "registered mlp:2: code" in second.stdout

    listed = {a["name"]: a for a in js(server, "algorithms", "list")["algorithms"]}
    assert (listed["mlp"]["versions"], listed["mlp"]["latest_version"]) == (2, 2)
    assert listed["mlp-twin"]["versions"] == 1
    assert "mlp-twin" in ok(server, "algorithms", "list").stdout

    assert "(new)" in ok(server, "algorithms", "alias", "mlp", "1", "production").stdout
    moved = js(server, "algorithms", "alias", "mlp", "2", "production")
    assert (moved["version"], moved["previous_version"]) == (2, 1)
    shown = js(server, "algorithms", "show", "mlp")
    assert [v["version"] for v in shown["versions"]] == [1, 2]
    assert shown["aliases"] == {"production": 2}
    assert [(c["from_version"], c["to_version"]) for c in shown["alias_history"]] == \
        [(0, 1), (1, 2)]
    assert shown["versions"][0]["job_count"] == 0 and shown["versions"][0]["runs"] == []
    text = ok(server, "algorithms", "show", "mlp").stdout
    assert first["code_hash"][:12] in text and "python3 train.py" in text
    assert "@production" in text and "(new) to 1" in text and "from 1 to 2" in text

    gone = js(server, "algorithms", "delete", "mlp:2")
    assert gone == {"name": "mlp", "version": 2, "deleted": True}
    assert [v["version"] for v in js(server, "algorithms", "show", "mlp")["versions"]] == [1]
    assert "NOT_FOUND" in refused(server, "algorithms", "delete", "mlp:2")


def test_mistakes_are_sentences_naming_what_is_wrong(server: ServerProcess,
                                                     tmp_path: Path) -> None:
    code = write_tree(tmp_path / "code", {"train.py": TRAIN_PY})
    assert "--image" in refused(server, "algorithms", "register", "x", code=2)
    no_command = refused(server, "algorithms", "register", "x", "--code", str(code))
    assert "INVALID_ARGUMENT" in no_command and "command:" in no_command
    bad_key = refused(server, "algorithms", "register", "x", "--code", str(code),
                      "--command", "true", "-p", "1LR=2")
    assert "hyperparameters.1LR" in bad_key
    assert "--memory" in refused(server, "algorithms", "register", "x", "--code", str(code),
                                 "--command", "true", "--memory", "lots", code=2)
    assert "name:" in refused(server, "algorithms", "register", "bad name", "--code",
                              str(code), "--command", "true")
    assert "NAME:VERSION" in refused(server, "algorithms", "delete", "x", code=2)
    assert "NOT_FOUND" in refused(server, "algorithms", "show", "never-registered")
    assert "alias:" in refused(server, "algorithms", "alias", "x", "1", "42")
    os.symlink("/etc/passwd", code / "link")
    linked = refused(server, "algorithms", "register", "x", "--code", str(code),
                     "--command", "true")
    assert "code:" in linked and "link" in linked
    assert "x" not in {a["name"] for a in js(server, "algorithms", "list")["algorithms"]}


def test_an_image_is_pinned_through_the_sdk(server: ServerProcess, engine: Engine) -> None:
    base = engine.client.images.get(BASE_IMAGE)
    with Client(server.address) as client:
        version = client.register_algorithm("base-image", image=BASE_IMAGE,
                                            command="python3 -c 'print(1)'",
                                            resources=Resources(gpus=0, cpus=0, memory_mb=0))
        assert (version["source"], version["image"], version["image_id"]) == \
            ("image", BASE_IMAGE, base.id)
        assert client.get_algorithm("base-image")["versions"][0]["image_id"] == base.id
        with pytest.raises(TrainyardError) as missing:
            client.register_algorithm("base-image", image="trainyard/never-built:1")
        assert missing.value.code == "INVALID_ARGUMENT"
        assert missing.value.message.startswith("image:")
        assert client.delete_algorithm("base-image", 1)["image_id"] == base.id
    shown = ok(server, "algorithms", "register", "base-cli", "--image", BASE_IMAGE).stdout
    assert f"image id {base.id[7:19]}" in shown


def test_an_upload_moves_whole_to_the_next_server(server: ServerProcess,
                                                  tmp_path: Path) -> None:
    """The first address answers nothing: the upload is sent again, from its spec, to the
    next one."""
    code = write_tree(tmp_path / "code", {"train.py": TRAIN_PY + "# failover\n",
                                          "data/empty.txt": ""})
    with Client(f"127.0.0.1:1,{server.address}") as client:
        version = client.register_algorithm("moved", code_dir=code,
                                            command="python3 train.py")
    assert (version["version"], version["code_file_count"], version["code_size_bytes"]) == \
        (1, 2, len(TRAIN_PY + "# failover\n"))
