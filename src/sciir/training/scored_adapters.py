"""Adapters scored while training, and the best of them kept.

Every ``eval_every`` steps, and at the last step, the main process saves the adapter into
``<adapter_path>/scored/step-<step>`` and hands the folder to a scorer: a callable the caller gives (the
finetune stage builds one from generate's drawing and evaluate's judging; this package knows only that it
returns a number, higher being better, or None when the adapter got no score). After training, the adapter
of the best-scored step (the later step on a tie) replaces the last step's at ``adapter_path``, so what the
stage delivers, what generate draws and what is registered is that adapter; of the scored folders only the
best's and the last step's are kept. When no step got a score, the last step's adapter stays.

A resumed run scores again the folders its checkpoint's steps left (the same weights: the run is
deterministic, and a cached judge answers again for nothing), so it picks the adapter an uninterrupted run
picks; folders of later steps are removed, as that run will save them again.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sciir.backends.diffusers_gen import ADAPTER_FILE

logger = logging.getLogger(__name__)

SCORED_DIR = "scored"
STEP_PREFIX = "step-"
# Called with the step and the folder of the adapter saved at that step: its score (higher is better), or
# None when it has none (e.g. the judge judged nothing). Random draws inside it do not touch the run's.
AdapterScorer = Callable[[int, Path], float | None]


def scored_root(adapter_path: str | Path) -> Path:
    return Path(adapter_path) / SCORED_DIR


def scored_folder(root: Path, step: int) -> Path:
    return root / f"{STEP_PREFIX}{step:06d}"


def scored_step(folder: Path) -> int | None:
    """The step of a ``step-<step>`` folder; None for any other name."""
    suffix = folder.name.removeprefix(STEP_PREFIX)
    return int(suffix) if folder.name.startswith(STEP_PREFIX) and suffix.isdigit() else None


def saved_adapters(root: Path) -> list[tuple[int, Path]]:
    """The adapters saved under ``root`` (folders holding the adapter file) with their steps, earliest first."""
    if not root.is_dir():
        return []
    found = [(scored_step(folder), folder) for folder in root.iterdir() if (folder / ADAPTER_FILE).is_file()]
    return sorted((step, folder) for step, folder in found if step is not None)


def is_scored_step(step: int, eval_every: int, steps: int) -> bool:
    """Whether the adapter of ``step`` is scored: every ``eval_every`` steps and the last (never when 0)."""
    return eval_every > 0 and (step % eval_every == 0 or step == steps)


def resume_scores(root: Path, resumed_step: int, on_score: AdapterScorer | None) -> None:
    """Before training from step ``resumed_step`` (0: a fresh run): remove the folders of later steps (the
    run saves them again) and score again, in order, those up to it."""
    for step, folder in saved_adapters(root):
        if step > resumed_step:
            shutil.rmtree(folder)
        elif on_score is not None:
            on_score(step, folder)
    if resumed_step == 0:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class ScoreKeeper:
    """Calls the scorer with each saved adapter and keeps each step's score."""

    scorer: AdapterScorer
    scores: dict[int, float | None] = field(default_factory=dict)

    def __call__(self, step: int, folder: Path) -> None:
        self.scores[step] = self.scorer(step, folder)

    def score_saved(self, root: Path) -> None:
        """Score every adapter saved under ``root``, earliest first (those data-parallel processes saved)."""
        for step, folder in saved_adapters(root):
            self(step, folder)

    def best_step(self) -> int | None:
        """The step of the highest score, the later on a tie; None when no step has a score."""
        scored = [(score, step) for step, score in self.scores.items() if score is not None]
        return max(scored)[1] if scored else None


def keep_best(adapter_path: str | Path, keeper: ScoreKeeper, last_step: int) -> int:
    """Put the best-scored adapter at ``adapter_path`` (its files over the last step's) and remove the
    scored folders other than the best's and the last step's. Returns the step whose adapter is now at
    ``adapter_path``: the best, or ``last_step`` when no step has a score."""
    root = scored_root(adapter_path)
    best = keeper.best_step()
    if best is None:
        logger.info("No scored adapter has a score: the adapter of the last step, %d, is kept", last_step)
    elif best != last_step:
        for source in scored_folder(root, best).iterdir():
            if source.is_file():
                shutil.copy2(source, Path(adapter_path) / source.name)
        logger.info("The adapter of step %d, the best scored, replaces the last step's (%d)", best, last_step)
    for step, folder in saved_adapters(root):
        if step not in (best, last_step):
            shutil.rmtree(folder)
    return last_step if best is None else best
