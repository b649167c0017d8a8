"""Which checkpoint folders count, which are pruned, which one ``latest`` resumes."""

from __future__ import annotations

import pytest

from sciir.training.checkpoints import (
    PROGRESS_FILE,
    checkpoint_folder,
    find_checkpoint,
    list_checkpoints,
    prune_checkpoints,
)


def _checkpoint(root, step, complete=True):
    folder = checkpoint_folder(root, step)
    folder.mkdir(parents=True)
    if complete:
        (folder / PROGRESS_FILE).write_text("{}")
    return folder


def test_checkpoints_are_ordered_by_step_and_incomplete_ones_ignored(tmp_path):
    for step in (10, 9, 100):
        _checkpoint(tmp_path, step)
    _checkpoint(tmp_path, 200, complete=False)  # a save cut short
    (tmp_path / "checkpoint-final").mkdir()
    assert [p.name for p in list_checkpoints(tmp_path)] == ["checkpoint-9", "checkpoint-10", "checkpoint-100"]
    assert find_checkpoint(tmp_path, "latest") == tmp_path / "checkpoint-100"
    assert find_checkpoint(tmp_path / "none yet", "latest") is None
    assert find_checkpoint(tmp_path, None) is None


def test_pruning_removes_the_oldest_first(tmp_path):
    for step in (2, 4, 6, 8):
        _checkpoint(tmp_path, step)
    removed = prune_checkpoints(tmp_path, keep=1)
    assert [p.name for p in removed] == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]
    assert [p.name for p in list_checkpoints(tmp_path)] == ["checkpoint-8"]
    assert prune_checkpoints(tmp_path, keep=3) == []


def test_a_named_folder_must_be_a_checkpoint(tmp_path):
    assert find_checkpoint(tmp_path, str(_checkpoint(tmp_path, 3))) == tmp_path / "checkpoint-3"
    with pytest.raises(FileNotFoundError, match="not a checkpoint"):
        find_checkpoint(tmp_path, str(tmp_path / "checkpoint-7"))
