"""`trainyard runs`, `models` and `datasets lineage|delete` against a real server process,
as a user's script would run them: JSON out, sentences for mistakes."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import trainyard
from tests.serverproc import ServerProcess

JOB = ('echo "{\\"step\\": 1, \\"acc\\": 0.5}" >> "$METRICS_PATH"; '
       'echo "{\\"step\\": 2, \\"acc\\": $ACC}" >> "$METRICS_PATH"; '
       'echo "$LR" > "$MODEL_SAVE_PATH/w.txt"')


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path_factory.mktemp("cli-runs") / "data").start()
    yield proc
    proc.stop()


def ok(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    out = trainyard(server, *args)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    return out


def js(server: ServerProcess, *args: str) -> Any:
    return json.loads(ok(server, *args, "-o", "json").stdout)


def test_runs_models_and_lineage_as_json(server: ServerProcess, tmp_path: Path) -> None:
    data = tmp_path / "ds"
    data.mkdir()
    (data / "rows.csv").write_text("1\n")
    version = js(server, "datasets", "register", "rows", str(data))["version"]
    jobs = []
    for lr, acc in (("0.1", "0.8"), ("0.2", "0.9")):
        jobs.append(js(server, "submit", "--name", f"mlp-{lr}", "--command", JOB, "--dataset",
                       f"rows:{version}", "-p", f"LR={lr}", "-p", f"ACC={acc}",
                       "--model-name", "digits-mlp", "--git-commit", "abc1234",
                       "--follow")["job_id"])
    a, b = (f"{j}-1" for j in jobs)

    listed = js(server, "runs", "list", "--metric", "acc>=0.85")
    assert [r["run_id"] for r in listed["runs"]] == [b] and listed["next_page_token"] == ""
    by_acc = js(server, "runs", "list", "--sort", "acc", "--desc", "--dataset", "rows")
    assert [r["run_id"] for r in by_acc["runs"]] == [b, a]
    assert by_acc["runs"][0]["code"]["git_commit"] == "abc1234"
    assert by_acc["runs"][0]["algorithm"] == "mlp"

    shown = js(server, "runs", "show", a)
    assert shown["state"] == "SUCCEEDED" and shown["spec"]["dataset"]["version"] == version
    assert [t["to_state"] for t in shown["transitions"]] == ["WAITING", "LAUNCHING", "RUNNING",
                                                             "SUCCEEDED"]
    assert shown["model"]["model_name"] == "digits-mlp" and shown["log_uri"].startswith("file:")

    png = tmp_path / "curves.png"
    compared = js(server, "runs", "compare", a, b, "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert compared["plot"] == {"path": str(png), "metrics": ["acc"]}
    params = {row["key"]: row["differs"] for row in compared["hyperparameters"]}
    assert params == {"ACC": True, "LR": True}
    text = ok(server, "runs", "compare", a, b, "--chart").stdout
    assert "*" in text and "metric curves" in text and "▁" in text

    reproduced = js(server, "runs", "reproduce", a)
    assert reproduced["reproduces"] == a and reproduced["spec"] == shown["spec"]

    moved = js(server, "models", "alias", "digits-mlp", "2", "production")
    assert (moved["version"], moved["previous_version"]) == (2, 0)
    models = js(server, "models", "list")["models"]
    assert [(m["name"], m["aliases"]) for m in models] == [("digits-mlp", {"production": 2})]
    model = js(server, "models", "show", "digits-mlp")
    assert [v["run_id"] for v in model["versions"][:2]] == [a, b]
    got = js(server, "models", "download", "digits-mlp@production", str(tmp_path / "out"))
    assert (tmp_path / "out" / "w.txt").read_text() == "0.2\n"
    assert got["files"][0]["path"] == "w.txt" and got["model"]["version"] == 2
    lineage = js(server, "models", "lineage", "digits-mlp@production")
    assert lineage["run_id"] == b and lineage["dataset"]["version"] == version
    assert lineage["code"]["git_commit"] == "abc1234"

    down = js(server, "datasets", "lineage", f"rows:{version}")
    assert {m["run_id"] for m in down["models"]} >= {a, b}
    datasets = js(server, "datasets", "list")["datasets"]
    assert datasets[0].keys() >= {"name", "version", "size_bytes", "file_count", "created_at",
                                  "created", "run_count", "run_ids"}
    assert a in datasets[0]["run_ids"]
    refused = trainyard(server, "datasets", "delete", f"rows:{version}", "-o", "json")
    assert refused.returncode == 1 and "FAILED_PRECONDITION" in refused.stderr
    assert a in refused.stderr

    (tmp_path / "spare").mkdir()
    (tmp_path / "spare" / "x").write_text("spare")
    spare = js(server, "datasets", "register", "spare", str(tmp_path / "spare"))["version"]
    assert js(server, "datasets", "delete", f"spare:{spare}") == {
        "name": "spare", "version": spare, "deleted": True}

    for args in (["runs", "show", a], ["runs", "list"], ["models", "show", "digits-mlp"],
                 ["models", "lineage", "digits-mlp:1"], ["datasets", "lineage",
                                                         f"rows:{version}"]):
        ok(server, *args)  # the text renderings too


@pytest.mark.parametrize(("args", "words"), [
    (["runs", "list", "--metric", "acc"], "--metric"),
    (["runs", "show", "../etc"], "is not a run id"),
    (["runs", "compare", "x-1", "--plot", "out.svg"], "PNG"),
    (["models", "show", "../x"], "not a valid model name"),
    (["models", "alias", "m", "1", "../p"], "not a valid alias"),
    (["models", "download", "m@", "out"], "name the alias"),
    (["datasets", "lineage", "rows"], "NAME:VERSION"),
    (["datasets", "delete", "rows:../../etc"], "64-character hash"),
])
def test_mistakes_are_sentences(server: ServerProcess, args: list[str], words: str) -> None:
    out = trainyard(server, *args)
    assert out.returncode != 0
    assert words in " ".join(out.stderr.split()), out.stderr
    assert "Traceback" not in out.stderr + out.stdout
