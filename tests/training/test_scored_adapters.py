"""Adapters scored while training: which steps are scored, the best kept (later on a tie, the last step's
without any score), the folders left, and a resumed run scoring again what its checkpoint's steps left."""

from __future__ import annotations

from pathlib import Path

from sciir.training.lora_adapter import ADAPTER_FILE
from sciir.training.scored_adapters import (
    ScoreKeeper,
    is_scored_step,
    keep_best,
    resume_scores,
    saved_adapters,
    scored_folder,
    scored_root,
)


def test_every_eval_every_steps_and_the_last():
    assert [step for step in range(1, 11) if is_scored_step(step, 4, 10)] == [4, 8, 10]
    assert not any(is_scored_step(step, 0, 10) for step in range(1, 11))


def save(adapter_path: Path, step: int) -> Path:
    folder = scored_folder(scored_root(adapter_path), step)
    folder.mkdir(parents=True)
    (folder / ADAPTER_FILE).write_text(f"weights of step {step}")
    return folder


def keeper_of(adapter_path: Path, scores: dict[int, float | None]) -> ScoreKeeper:
    keeper = ScoreKeeper(lambda step, folder: scores[step])
    for step in scores:
        keeper(step, save(adapter_path, step))
    (adapter_path / ADAPTER_FILE).write_text(f"weights of step {max(scores)}")
    return keeper


def test_the_best_scored_adapter_replaces_the_last_and_the_other_folders_go(tmp_path):
    keeper = keeper_of(tmp_path, {2: 0.5, 4: 0.75, 6: 0.25})
    assert keep_best(tmp_path, keeper, 6) == 4
    assert (tmp_path / ADAPTER_FILE).read_text() == "weights of step 4"
    assert [step for step, _ in saved_adapters(scored_root(tmp_path))] == [4, 6]


def test_a_tie_keeps_the_later_step_and_no_score_keeps_the_last(tmp_path):
    tied = keeper_of(tmp_path / "tied", {2: 0.5, 4: 0.5, 6: None})
    assert keep_best(tmp_path / "tied", tied, 6) == 4
    unscored = keeper_of(tmp_path / "none", {2: None, 4: None})
    assert keep_best(tmp_path / "none", unscored, 4) == 4
    assert (tmp_path / "none" / ADAPTER_FILE).read_text() == "weights of step 4"


def test_a_resumed_run_scores_again_the_steps_before_its_checkpoint(tmp_path):
    for step in (2, 4, 6):
        save(tmp_path, step)
    scored: list[int] = []
    resume_scores(scored_root(tmp_path), 4, lambda step, folder: scored.append(step))
    assert scored == [2, 4]
    assert [step for step, _ in saved_adapters(scored_root(tmp_path))] == [2, 4]
    resume_scores(scored_root(tmp_path), 0, None)  # a fresh run starts with none
    assert not scored_root(tmp_path).exists()
