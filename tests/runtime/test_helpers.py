"""The helpers training code calls: the contract read, metrics written, the checkpoint
signal; and the package's promise to need nothing beyond the standard library."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainyard import runtime
from trainyard.metadata.metrics_file import read_new_metrics
from trainyard.runtime.notice import GivenNotice, write_notice

PACKAGE = Path(runtime.__file__).parent


def test_runtime_reads_the_contract_and_writes_metrics_the_service_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METRICS_PATH", str(tmp_path / "m.jsonl"))
    monkeypatch.setenv("MODEL_SAVE_PATH", str(tmp_path / "model"))
    monkeypatch.setenv("HYPERPARAMETERS", json.dumps({"LR": "0.1", "EPOCHS": 3}))
    monkeypatch.setenv("JOB_ID", "j1")
    assert runtime.job_id() == "j1"
    assert runtime.hyperparameters() == {"LR": "0.1", "EPOCHS": "3"}
    assert runtime.hyperparameter("LR") == "0.1"
    assert runtime.model_path().is_dir()
    runtime.log_metric(step=1, loss=0.5)
    runtime.log_metric(accuracy=0.75)
    batch = read_new_metrics(tmp_path / "m.jsonl", 0)
    assert [(p.step, p.values) for p in batch.points] == [
        (1, {"loss": 0.5}), (None, {"accuracy": 0.75})
    ]


def test_rank_and_world_size_read_the_worker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert (runtime.rank(), runtime.world_size()) == (0, 1)  # a single-worker job
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert (runtime.rank(), runtime.world_size()) == (2, 4)



def test_the_notice_names_its_signal_and_nothing_when_it_came_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notice = tmp_path / "notice"
    monkeypatch.delenv(runtime.PREEMPT_NOTICE, raising=False)
    assert runtime.preemption_signal() == ""  # outside the service
    monkeypatch.setenv(runtime.PREEMPT_NOTICE, str(notice))
    assert runtime.preemption_signal() == "" and not runtime.preemption_requested()
    write_notice(notice, GivenNotice("SIGUSR1", 30.0))
    assert runtime.preemption_signal() == "SIGUSR1" and runtime.preemption_requested()
    write_notice(notice, GivenNotice("none", 30.0))
    assert runtime.preemption_signal() == ""  # the file alone: no signal to wait for
    notice.write_text("{half")
    assert runtime.preemption_signal() == ""


def test_checkpoint_saved_counts_in_the_signal_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(runtime.CHECKPOINT_SIGNAL, raising=False)
    runtime.checkpoint_saved()  # on the service's host: nothing to do, nothing written
    assert list(tmp_path.iterdir()) == []
    signal_file = tmp_path / "signal"
    monkeypatch.setenv(runtime.CHECKPOINT_SIGNAL, str(signal_file))
    runtime.checkpoint_saved()
    runtime.checkpoint_saved()
    assert signal_file.read_text() == "2\n"
    assert [p.name for p in tmp_path.iterdir()] == ["signal"]  # no partial file left


def _imports(tree: ast.AST, *, top_level_only: bool) -> set[str]:
    nodes = tree.body if top_level_only and isinstance(tree, ast.Module) else ast.walk(tree)
    names = {alias.name for node in nodes if isinstance(node, ast.Import)
             for alias in node.names}
    nodes = tree.body if top_level_only and isinstance(tree, ast.Module) else ast.walk(tree)
    names |= {node.module for node in nodes
              if isinstance(node, ast.ImportFrom) and node.module}
    return names


@pytest.mark.parametrize("module", sorted(p.name for p in PACKAGE.glob("*.py")))
def test_the_package_needs_only_the_standard_library(module: str) -> None:
    """It is copied into images and shipped to cluster nodes as it is; only channel.py
    imports grpc, and only inside the functions that call the service."""
    tree = ast.parse((PACKAGE / module).read_text())
    everywhere = {name.split(".")[0] for name in _imports(tree, top_level_only=False)}
    at_import = {name.split(".")[0] for name in _imports(tree, top_level_only=True)}
    assert at_import, "no imports found: the check is broken"
    allowed = set(sys.stdlib_module_names) | {"__future__"}
    assert at_import <= allowed | {"trainyard"}
    assert everywhere <= allowed | {"trainyard"} | ({"grpc"} if module == "channel.py" else set())
    ours = {name for name in _imports(tree, top_level_only=False) if name.startswith("trainyard")}
    assert all(name.startswith("trainyard.runtime") for name in ours), ours


def test_the_launcher_imports_nothing_of_its_package() -> None:
    # It runs alone, as `python3 -I gang.py`, wherever the executor put it.
    tree = ast.parse((PACKAGE / "gang.py").read_text())
    assert {name.split(".")[0] for name in _imports(tree, top_level_only=False)} <= \
        set(sys.stdlib_module_names) | {"__future__"}


def test_importing_the_runtime_loads_no_grpc() -> None:
    code = "import sys, trainyard.runtime; print(any(m.startswith('grpc') for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(PACKAGE.parent.parent)},
                          timeout=60, check=True)
    assert done.stdout.strip() == "False"
