"""Checkpoints scored while training: what the finetune stage hands the training loop as its scorer
(``sciir.training.scored_adapters``), built here from generate's drawing and evaluate's judging and scoring,
since the training package imports neither.

Every ``eval_every`` steps the adapter draws a fixed, seeded subset of held-out samples
(``sciir.evaluation.checkpoint_scores``) through the generator named by ``checkpoint_scoring.generator`` with
the adapter in place of its own (``sciir.generation.adapters``), with generate's seed and size and through
generate's drawing (``sciir.generation.drawing``); the configured judge judges the images and they are scored
as evaluate scores a model. The pass rate, its interval, the coverage and the samples scored go to the
active MLflow run as step series beside the loss (``finetune.checkpoint.*``) and into the summary.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sciir.backends.base import GenerationRequest, ImageGenerator, VisionLanguageModel
from sciir.catalog.optional_dataset import MissingInput, is_missing_input
from sciir.evaluation.aggregation import UnjudgedPolicy
from sciir.evaluation.checkpoint_scores import SubsetScore, seeded_subset, subset_score, validation_items
from sciir.evaluation.params import EvaluateParams
from sciir.generation.adapters import lora_settings, plain_generator, with_adapter
from sciir.generation.drawing import draw_every_sample
from sciir.generation.params import GenerateParams
from sciir.runs.tracking import log_metrics
from sciir.training.finetune_params import FinetuneParams
from sciir.user_files.benchmark_file import read_benchmark_file

logger = logging.getLogger(__name__)

SERIES_PREFIX = "finetune"
# The summary's section and the registered version's tags.
SUMMARY_KEY = "checkpoint_scoring"
STEP_TAG, SCORE_TAG, COVERAGE_TAG = "checkpoint.step", "checkpoint.final_pass_rate", "checkpoint.coverage"


def scoring_generator(
    name: str, generators: dict[str, ImageGenerator], base_model_path: str
) -> ImageGenerator:
    """The configured generator ``name``, which loads a LoRA adapter onto the pipeline being fine-tuned.

    Raises:
        ValueError: no such generator, it loads no LoRA adapter, or it draws with another base pipeline
            than the one trained (its scores would be another model's).
    """
    if name not in generators:
        raise ValueError(
            f"finetune.checkpoint_scoring.generator names {name!r}, which is not a configured generator "
            f"(conf/base/backends.yml); configured: {sorted(generators)}"
        )
    pipeline = lora_settings(name, generators[name]).get("pipeline_path")
    if pipeline is None or Path(str(pipeline)).resolve() != Path(base_model_path).resolve():
        raise ValueError(
            f"finetune.checkpoint_scoring.generator {name} draws with the pipeline {pipeline}, not the base "
            f"model being fine-tuned ({base_model_path}): name a generator of that pipeline"
        )
    return plain_generator(generators[name])


@dataclass
class CheckpointScorer:
    """Scores the adapter of a step on the subset (``items`` with their ``checklists``); keeps each step's
    record. Called by the training loop (``sciir.training.scored_adapters.AdapterScorer``)."""

    items: pd.DataFrame
    checklists: pd.DataFrame
    judge: VisionLanguageModel
    generator_name: str
    generator: ImageGenerator
    generate: GenerateParams
    evaluate: EvaluateParams
    source: str
    policy: UnjudgedPolicy = "fail"
    records: list[dict[str, Any]] = field(default_factory=list)

    def _requests(self) -> list[GenerationRequest]:
        return [
            GenerationRequest(
                sample_id=str(row.sample_id),
                prompt=str(row.prompt),
                seed=self.generate.seed,
                width=self.generate.width,
                height=self.generate.height,
            )
            for row in self.items.itertuples(index=False)
        ]

    def score(self, step: int, adapter: Path) -> SubsetScore:
        """Draw the subset with ``adapter`` and judge and score the images as evaluate does."""
        model = f"{self.generator_name}@step-{step}"
        drawer = with_adapter(self.generator_name, self.generator, adapter)
        requests = self._requests()
        drawn = draw_every_sample(
            {model: drawer},
            lambda _: (requests, {}),
            [request.sample_id for request in requests],
            self.generate,
            {},
        )
        return subset_score(
            self.items, self.checklists, drawn.images, drawn.manifest, self.judge, self.evaluate, self.policy
        )

    def __call__(self, step: int, adapter: Path) -> float | None:
        found = self.score(step, adapter)
        series = {
            "checkpoint.final_pass_rate": found.final_pass_rate,
            "checkpoint.final_pass_rate.ci_low": found.ci_low,
            "checkpoint.final_pass_rate.ci_high": found.ci_high,
            "checkpoint.coverage": found.coverage,
            "checkpoint.n_scored": float(found.n_scored),
        }
        log_metrics({name: [{"value": value, "step": step}] for name, value in series.items()}, SERIES_PREFIX)
        self.records.append({"step": step, **found.as_record()})
        shown = f"{100 * found.final_pass_rate:.1f}%" if found.scored else "n/a"
        logger.info(
            "Checkpoint step %d: final pass rate %s over %d of %d samples scored, coverage %s (%s)",
            step,
            shown,
            found.n_scored,
            found.n_samples,
            "n/a" if math.isnan(found.coverage) else f"{100 * found.coverage:.1f}%",
            self.source,
        )
        return found.final_pass_rate if found.scored else None

    def summary(self, adapter_step: int) -> dict[str, Any]:
        """The summary's section: the subset, each step's scores and the step whose adapter was kept."""
        kept = next((record for record in self.records if record["step"] == adapter_step), None)
        return {
            "source": self.source,
            "sample_ids": [str(sample_id) for sample_id in self.items["sample_id"]],
            "generator": self.generator_name,
            "scores": self.records,
            "adapter_step": adapter_step,
            "adapter_score": kept,
        }


def registry_tags(summary: dict[str, Any]) -> dict[str, str]:
    """The registered version's tags from the summary's scoring section: the step of the adapter and its
    final pass rate and coverage (``n/a`` when it has none); none when nothing was scored."""
    section = summary.get(SUMMARY_KEY) or {}
    if "adapter_step" not in section:
        return {}
    kept = section.get("adapter_score") or {}

    def shown(key: str) -> str:
        value = kept.get(key)
        return "n/a" if value is None else f"{float(value):.4f}"

    return {
        STEP_TAG: str(section["adapter_step"]),
        SCORE_TAG: shown("final_pass_rate"),
        COVERAGE_TAG: shown("coverage"),
    }


def _held_out(
    training_rows: pd.DataFrame, validation_split: pd.DataFrame | MissingInput, max_train_samples: int
) -> tuple[pd.DataFrame, str]:
    """The validation split's rows, or, when it is empty or absent, the training rows the adapter is not
    trained on (those after the first ``max_train_samples``), with where they come from in words."""
    if not is_missing_input(validation_split) and not validation_split.empty:
        return validation_split, "validation split"
    rest = training_rows.iloc[max_train_samples:]
    return rest, (
        f"training rows not trained on (after the first {max_train_samples}; the validation split is empty: "
        "bench_select.validation_fraction)"
    )


def scoring_subset(
    config: FinetuneParams,
    training_rows: pd.DataFrame,
    validation_split: pd.DataFrame | MissingInput,
    checklists: pd.DataFrame | MissingInput,
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The items scored (``seeded_subset`` of the held-out samples that have a checklist question), their
    checklists, and where they come from in words (empty items: nothing to score on)."""
    scoring = config.checkpoint_scoring
    if scoring.source == "benchmark_file":
        tables = read_benchmark_file(str(scoring.path), "finetune.checkpoint_scoring.path")
        items, questions, source = tables.benchmark, tables.checklists, f"benchmark file {tables.name}"
    else:
        held_out, source = _held_out(training_rows, validation_split, config.max_train_samples)
        items = validation_items(held_out, None)
        questions = pd.DataFrame(columns=["sample_id"]) if is_missing_input(checklists) else checklists
    items = items[items["sample_id"].isin(set(questions["sample_id"]))]
    subset = seeded_subset(items, scoring.n_samples, scoring.seed)
    return subset, questions[questions["sample_id"].isin(set(subset["sample_id"]))], source


@dataclass(frozen=True)
class Unscored:
    """What the scorer node hands on when no adapter is scored (a Kedro dataset saves no None), and why."""

    reason: str


def checkpoint_scorer(
    training_rows: pd.DataFrame,
    validation_split: pd.DataFrame | MissingInput,
    checklists: pd.DataFrame | MissingInput,
    judge: VisionLanguageModel,
    generators: dict[str, ImageGenerator],
    base_model_path: str,
    params: dict[str, Any],
    generate_params: dict[str, Any],
    evaluate_params: dict[str, Any],
) -> CheckpointScorer | Unscored:
    """The scorer of the adapters saved every ``finetune.eval_every`` steps (module docstring), or why none
    is (said in a log line when it is not ``eval_every`` 0): no held-out sample has a checklist to judge.

    Raises:
        ValueError: the scoring generator is not one that loads a LoRA onto the base model trained
            (:func:`scoring_generator`).
    """
    config = FinetuneParams.model_validate(params)
    if not config.eval_every:
        return Unscored("finetune.eval_every is 0")
    items, questions, source = scoring_subset(config, training_rows, validation_split, checklists)
    if items.empty:
        reason = f"no sample of the {source} has a checklist question"
        logger.warning("finetune: no adapter is scored: %s", reason)
        return Unscored(reason)
    name = config.checkpoint_scoring.generator
    logger.info(
        "finetune: every %d steps the adapter draws %d samples of the %s",
        config.eval_every,
        len(items),
        source,
    )
    return CheckpointScorer(
        items,
        questions,
        judge,
        name,
        scoring_generator(name, generators, base_model_path),
        GenerateParams.model_validate(generate_params),
        EvaluateParams.model_validate(evaluate_params),
        source,
        config.checkpoint_scoring.unjudged_policy,
    )
