import json
from pathlib import Path

import pytest

from trainyard import runtime
from trainyard.metadata.metrics_file import read_new_metrics


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


def test_runtime_imports_nothing_outside_the_standard_library() -> None:
    source = Path(runtime.__file__).read_text()
    imports = {line.split()[1].split(".")[0] for line in source.splitlines()
               if line.startswith(("import ", "from "))}
    assert imports <= {"__future__", "json", "os", "pathlib", "typing"}
