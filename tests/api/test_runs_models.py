"""Runs, comparison, reproduction, models, aliases, download and lineage through a real
server over loopback, on SQLite and PostgreSQL, with real job processes."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from tests.liveserver import live_server
from trainyard.client import Client, TrainSpec, TrainyardError
from trainyard.server.assembly import TrainyardServer
from trainyard.v1 import training_pb2 as pb

TRAINER = Path(__file__).resolve().parents[2] / "examples" / "trainer.py"
# Two metric lines and a model file whose bytes depend on LR.
JOB = ('echo "{\\"step\\": 1, \\"acc\\": 0.5}" >> "$METRICS_PATH"; '
       'echo "{\\"step\\": 2, \\"acc\\": $ACC}" >> "$METRICS_PATH"; '
       'mkdir -p "$MODEL_SAVE_PATH/sub"; echo "$LR" > "$MODEL_SAVE_PATH/sub/w.txt"; '
       'echo model > "$MODEL_SAVE_PATH/README"')


@pytest.fixture
def srv(tmp_path: Path, database_url: str) -> Iterator[TrainyardServer]:
    with live_server(tmp_path, database_url, max_concurrent=2) as server:
        yield server


@pytest.fixture
def client(srv: TrainyardServer) -> Iterator[Client]:
    with Client(f"127.0.0.1:{srv.port}", timeout=20) as c:
        yield c


def dataset(client: Client, tmp_path: Path, name: str = "rows", text: str = "1\n2\n") -> str:
    path = tmp_path / f"ds-{name}-{abs(hash(text))}"
    path.mkdir()
    (path / "rows.csv").write_text(text)
    return client.register_dataset(name, str(path)).version


def run_job(client: Client, spec: TrainSpec) -> str:
    job_id = client.train(spec).job_id
    assert client.wait(job_id).state == "SUCCEEDED", client.status(job_id)
    return job_id


def params_of(comparison: dict, section: str) -> dict[str, tuple[list, bool]]:  # type: ignore[type-arg]
    return {row["key"]: ([v["value"] if v["present"] else None for v in row["values"]],
                         row["differs"]) for row in comparison[section]}


def test_lineage_both_ways_and_a_comparison_of_runs(client: Client, tmp_path: Path) -> None:
    version = dataset(client, tmp_path)
    a = run_job(client, TrainSpec(name="mlp-a", command=JOB, dataset=f"rows:{version}",
                                  hyperparameters={"LR": "0.1", "ACC": "0.8", "SEED": "1"},
                                  model_name="digits-mlp", git_commit="0123abcd",
                                  labels={"algorithm": "mlp"}))
    b = run_job(client, TrainSpec(name="mlp-b", command=JOB, dataset=f"rows:{version}",
                                  hyperparameters={"LR": "0.2", "ACC": "0.9"},
                                  model_name="digits-mlp", git_commit="0123abcd"))
    # Model version -> run, dataset version, code.
    lineage = client.model_lineage("digits-mlp:1")
    assert lineage["run_id"] == f"{a}-1" and lineage["owner"] == "local"
    assert lineage["dataset"]["version"] == version and lineage["dataset"]["name"] == "rows"
    assert lineage["code"] == {"image": "", "image_id": "", "command": JOB,
                               "git_commit": "0123abcd", "algorithm": None, "code_hash": ""}
    assert lineage["algorithm"] is None  # a job of no registered algorithm
    assert lineage["hyperparameters"] == {"LR": "0.1", "ACC": "0.8", "SEED": "1"}
    assert lineage["run"]["metrics"]["acc"]["value"] == 0.8
    assert client.model_lineage("digits-mlp")["run_id"] == f"{b}-1"  # the latest
    # Dataset version -> every model trained on it, and its runs.
    down = client.dataset_lineage("rows", version)
    assert [(m["model_name"], m["version"], m["run_id"]) for m in down["models"]] == \
        [("digits-mlp", 1, f"{a}-1"), ("digits-mlp", 2, f"{b}-1")]
    assert down["dataset"]["run_ids"] == [f"{a}-1", f"{b}-1"]
    [listed] = client.list_datasets("rows")
    assert listed.run_count == 2 and listed.run_ids == (f"{a}-1", f"{b}-1")
    # Side by side, with the keys that differ flagged (SEED only in one run).
    comparison = client.compare_runs([f"{a}-1", b], series=True)
    assert [r["run_id"] for r in comparison["runs"]] == [f"{a}-1", f"{b}-1"]
    assert params_of(comparison, "hyperparameters") == {
        "ACC": (["0.8", "0.9"], True), "LR": (["0.1", "0.2"], True),
        "SEED": (["1", None], True)}
    metrics = {m["key"]: ([v["value"] for v in m["values"]], m["differs"])
               for m in comparison["metrics"]}
    assert metrics == {"acc": ([0.8, 0.9], True)}
    settings = params_of(comparison, "settings")
    assert settings["git_commit"] == (["0123abcd", "0123abcd"], False)
    assert settings["dataset"][1] is False
    points = [[p["value"] for p in s["points"]] for r in comparison["runs"]
              for s in r["series"]]
    assert points == [[0.5, 0.8], [0.5, 0.9]]
    # Filters and sorting.
    found, _ = client.list_runs(metrics=[("acc", ">=", 0.85)])
    assert [r["run_id"] for r in found] == [f"{b}-1"]
    found, _ = client.list_runs(sort="acc", descending=True, dataset=f"rows:{version[:8]}")
    assert [r["run_id"] for r in found] == [f"{b}-1", f"{a}-1"]
    assert [r["run_id"] for r in client.list_runs(algorithm="mlp")[0]] == [f"{b}-1", f"{a}-1"]
    with pytest.raises(TrainyardError) as info:
        client.compare_runs([f"{a}-1", "nope-1"])
    assert info.value.code == "NOT_FOUND"


def write_digits(directory: Path) -> None:
    """A small slice of the digits data in the demo's format, so training takes a moment."""
    digits = load_digits()
    x, y = digits.data.astype(np.int64), digits.target
    for name, rows in (("train", slice(0, 300)), ("test", slice(300, 400))):
        np.savetxt(directory / f"{name}.csv", np.column_stack([y[rows], x[rows]]), fmt="%d",
                   delimiter=",")


def test_reproduce_gives_the_identical_spec_and_metrics(client: Client, tmp_path: Path) -> None:
    data = tmp_path / "digits"
    data.mkdir()
    write_digits(data)
    version = client.register_dataset("digits", str(data)).version
    spec = TrainSpec(name="digits-mlp", dataset=f"digits:{version}",
                     command=f"{shlex.quote(sys.executable)} {shlex.quote(str(TRAINER))}",
                     hyperparameters={"LR": "0.1", "EPOCHS": "3", "SEED": "7", "HIDDEN": "16",
                                      "BATCH_SIZE": "32"},
                     labels={"sweep": "repro"}, git_commit="feedc0de", queue="default")
    original = run_job(client, spec)
    reproduced = client.reproduce_run(original)
    assert reproduced["reproduces"] == f"{original}-1" and not reproduced["existing"]
    assert client.wait(reproduced["job_id"]).state == "SUCCEEDED"
    first, again = client.get_run(f"{original}-1"), client.get_run(reproduced["job_id"])
    assert again["spec"] == first["spec"] == reproduced["spec"]
    assert again["reproduced_from"] == f"{original}-1"
    assert first["reproduced_by"] == [reproduced["job_id"]]
    assert first["metrics"].keys() >= {"loss", "train_accuracy", "test_accuracy"}

    def curves(run: dict) -> dict[str, list[tuple[int, float]]]:  # type: ignore[type-arg]
        return {s["key"]: [(p["step"], p["value"]) for p in s["points"]] for s in run["series"]}

    assert curves(again) == curves(first) and len(curves(first)["loss"]) == 3
    assert again["model"]["content_hash"] == first["model"]["content_hash"]
    assert again["model"]["version"] == first["model"]["version"] + 1


def test_aliases_move_and_downloads_are_verified(client: Client, srv: TrainyardServer,
                                                 tmp_path: Path) -> None:
    for lr in ("0.1", "0.2"):
        run_job(client, TrainSpec(name="m", command=JOB, hyperparameters={"LR": lr,
                                                                          "ACC": "0.7"}))
    assert client.set_model_alias("m", "production", 1)["previous_version"] == 0
    moved = client.set_model_alias("m", "production", 2)
    assert (moved["version"], moved["previous_version"]) == (2, 1)
    model = client.get_model("m")
    assert model["aliases"] == {"production": 2}
    assert [(c["from_version"], c["to_version"]) for c in model["alias_history"]] == \
        [(0, 1), (1, 2)]
    assert [v["aliases"] for v in model["versions"]] == [[], ["production"]]
    listed = {m["name"]: m for m in client.list_models()}
    assert listed["m"]["versions"] == 2 and listed["m"]["aliases"] == {"production": 2}

    out = tmp_path / "out"
    got = client.download_model("m@production", out)
    assert got["model"]["version"] == 2
    assert (out / "sub" / "w.txt").read_text() == "0.2\n"
    assert sorted(f["path"] for f in got["files"]) == ["README", "sub/w.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    client.download_model("m:1", empty)  # an empty directory will do too
    assert (empty / "sub" / "w.txt").read_text() == "0.1\n"

    # A stored file changed behind the service's back: refused, and nothing is left.
    stored = srv.workspace.artifacts_dir / got["model"]["content_hash"]
    tampered = stored / "sub" / "w.txt"
    os.chmod(stored / "sub", 0o755)
    os.chmod(tampered, 0o644)
    tampered.write_text("0.3\n")
    dest = tmp_path / "refused"
    with pytest.raises(TrainyardError) as info:
        client.download_model("m:2", dest)
    assert info.value.code == "DATA_LOSS" and "sub/w.txt" in info.value.message
    assert not dest.exists() and not list(tmp_path.glob(".refused.download-*"))
    # The manifest rewritten to match the change: the version's content hash still tells.
    manifest = stored / ".manifest"
    os.chmod(stored, 0o755)
    os.chmod(manifest, 0o644)
    import hashlib

    sha = hashlib.sha256(b"0.3\n").hexdigest()
    lines = [f"{sha}  4  sub/w.txt" if line.endswith("sub/w.txt") else line
             for line in manifest.read_text().splitlines()]
    manifest.write_text("\n".join(lines) + "\n")
    with pytest.raises(TrainyardError) as info:
        client.download_model("m:2", dest)
    assert info.value.code == "DATA_LOSS" and "content hash" in info.value.message
    assert not dest.exists()


def test_a_stream_naming_paths_outside_the_directory_is_refused(
        client: Client, srv: TrainyardServer, tmp_path: Path) -> None:
    """A server (here, a tampered store) that names '../x' or an absolute path writes
    nothing anywhere."""
    run_job(client, TrainSpec(name="t", command=JOB, hyperparameters={"LR": "1", "ACC": "1"}))
    stored = srv.workspace.artifacts_dir / client.get_model("t")["versions"][0]["content_hash"]
    os.chmod(stored, 0o755)
    os.chmod(stored / ".manifest", 0o644)
    original = (stored / ".manifest").read_text()
    for evil in ("../../escape.txt", "/tmp/escape.txt", "sub/../../escape.txt"):
        (stored / ".manifest").write_text(original.replace("  README", f"  {evil}"))
        dest = tmp_path / "dl" / "model"
        dest.parent.mkdir(exist_ok=True)
        with pytest.raises(TrainyardError) as info:
            client.download_model("t", dest)
        # The server refuses to read it, or the client to write it: nothing is written.
        assert info.value.code in ("FAILED_PRECONDITION", "DATA_LOSS")
        assert not dest.exists() and list(dest.parent.iterdir()) == []
        assert not (tmp_path / "escape.txt").exists() and not Path("/tmp/escape.txt").exists()


def test_a_used_dataset_version_is_kept_and_an_unused_one_deleted(
        client: Client, srv: TrainyardServer, tmp_path: Path) -> None:
    used = dataset(client, tmp_path, "used", "1\n")
    job_id = run_job(client, TrainSpec(name="u", command="true", dataset=f"used:{used}"))
    with pytest.raises(TrainyardError) as info:
        client.delete_dataset("used", used)
    assert info.value.code == "FAILED_PRECONDITION" and f"{job_id}-1" in info.value.message
    assert [d.version for d in client.list_datasets("used")] == [used]
    assert (srv.workspace.datasets_dir / used).is_dir()

    spare = dataset(client, tmp_path, "spare", "spare\n")
    same = dataset(client, tmp_path, "same", "spare\n")  # the same content, another name
    assert same == spare
    assert client.delete_dataset("spare", spare)["name"] == "spare"
    assert client.list_datasets("spare") == []
    assert (srv.workspace.datasets_dir / spare).is_dir()  # "same" still holds it
    client.delete_dataset("same", same)
    assert not (srv.workspace.datasets_dir / same).exists()
    with pytest.raises(TrainyardError) as info:
        client.delete_dataset("same", same)
    assert info.value.code == "NOT_FOUND"


TRAVERSAL = ["../x", "..", "/etc/passwd", "a/b", "a\\b", "x\x00y", ".hidden", "ok\n"]


@pytest.mark.parametrize("bad", TRAVERSAL)
def test_path_like_inputs_are_refused(client: Client, srv: TrainyardServer, tmp_path: Path,
                                      bad: str) -> None:
    stub = client._stub  # the raw RPCs: no client-side parsing in the way
    calls = {
        "GetModel": lambda: stub.GetModel(pb.GetModelRequest(name=bad)),
        "SetModelAlias.name": lambda: stub.SetModelAlias(pb.SetModelAliasRequest(
            name=bad, alias="p", version=1)),
        "SetModelAlias.alias": lambda: stub.SetModelAlias(pb.SetModelAliasRequest(
            name="m", alias=bad, version=1)),
        "DownloadModel.name": lambda: list(stub.DownloadModel(pb.DownloadModelRequest(
            model=pb.ModelRef(name=bad)))),
        "DownloadModel.alias": lambda: list(stub.DownloadModel(pb.DownloadModelRequest(
            model=pb.ModelRef(name="m", alias=bad)))),
        "GetModelLineage": lambda: stub.GetModelLineage(pb.GetModelLineageRequest(
            model=pb.ModelRef(name=bad))),
        "GetDatasetLineage.name": lambda: stub.GetDatasetLineage(pb.GetDatasetLineageRequest(
            name=bad, version="0" * 64)),
        "GetDatasetLineage.version": lambda: stub.GetDatasetLineage(
            pb.GetDatasetLineageRequest(name="d", version=bad)),
        "DeleteDataset.name": lambda: stub.DeleteDataset(pb.DeleteDatasetRequest(
            name=bad, version="0" * 64)),
        "DeleteDataset.version": lambda: stub.DeleteDataset(pb.DeleteDatasetRequest(
            name="d", version=bad)),
        "RegisterDataset.name": lambda: stub.RegisterDataset(pb.RegisterDatasetRequest(
            name=bad, path=str(tmp_path))),
        "GetRun": lambda: stub.GetRun(pb.GetRunRequest(run_id=bad)),
        "ReproduceRun": lambda: stub.ReproduceRun(pb.ReproduceRunRequest(run_id=bad)),
        "ListRuns.dataset": lambda: stub.ListRuns(pb.ListRunsRequest(dataset=bad)),
        "Train.model_name": lambda: stub.Train(pb.TrainRequest(name="x", command="true",
                                                               model_name=bad)),
        "Train.dataset": lambda: stub.Train(pb.TrainRequest(
            name="x", command="true", dataset=pb.DatasetRef(name=bad, version="0" * 64))),
    }
    import grpc

    before = sorted(p.name for p in srv.workspace.data_dir.rglob("*"))
    for what, call in calls.items():
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT, (what, info.value)
    assert sorted(p.name for p in srv.workspace.data_dir.rglob("*")) == before
    assert client.list_jobs()[0] == []


def test_download_destinations_are_checked(client: Client, tmp_path: Path) -> None:
    run_job(client, TrainSpec(name="d", command=JOB, hyperparameters={"LR": "1", "ACC": "1"}))
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep").write_text("mine")
    afile = tmp_path / "afile"
    afile.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    for dest in (full, afile, link, tmp_path / "missing-parent" / "model"):
        with pytest.raises(TrainyardError) as info:
            client.download_model("d", dest)
        assert info.value.code == "INVALID_ARGUMENT"
    assert [p.name for p in full.iterdir()] == ["keep"] and afile.read_text() == "x"
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert not (tmp_path / "missing-parent").exists()
    with pytest.raises(TrainyardError) as info:
        client.download_model("d@", tmp_path / "x")
    assert info.value.code == "INVALID_ARGUMENT"
