"""Where a job's files live, and an attempt's directories made before its launch."""

from pathlib import Path

import pytest

from trainyard.metadata.workspace import Workspace


def test_an_attempt_of_a_new_data_dir_gets_every_directory_and_empty_file(
        tmp_path: Path) -> None:
    paths = Workspace(tmp_path / "data").attempt("j1", 1)
    paths.create()
    for directory in (paths.workdir, paths.model_dir, paths.checkpoint_dir):
        assert directory.is_dir() and not any(directory.iterdir())
    for file in (paths.metrics_path, paths.log_path):
        assert file.is_file() and file.stat().st_size == 0
    assert paths.checkpoint_dir.parent == paths.root.parent  # shared by the job's attempts


def test_a_later_attempt_keeps_the_checkpoints_and_the_earlier_attempt(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    first = workspace.attempt("j1", 1)
    first.create()
    (first.checkpoint_dir / "step-3").write_text("weights")
    (first.log_path).write_text("epoch 1\n")
    second = workspace.attempt("j1", 2)
    second.create()
    assert (second.checkpoint_dir / "step-3").read_text() == "weights"
    assert first.log_path.read_text() == "epoch 1\n"
    assert second.workdir.is_dir() and second.log_path.read_text() == ""
    second.create()  # made again (a relaunch): nothing fails, nothing is emptied
    assert (second.checkpoint_dir / "step-3").exists()


def test_a_file_where_a_directory_belongs_is_refused(tmp_path: Path) -> None:
    paths = Workspace(tmp_path).attempt("j1", 1)
    paths.root.mkdir(parents=True)
    paths.workdir.write_text("not a directory")
    with pytest.raises(FileExistsError):
        paths.create()
