"""AIBench on the evaluate side: the solver answers the questions of each AIBench illustration, the judge
rates its aesthetics, baseline metrics (CLIPScore, VQAScore) of the SciIR-Bench images are computed when
configured, and everything is scored.

The AIBench examination (``sciir.evaluation.aibench_examination``) reads ``aibench_generations``: each
contestant's illustration of each paper of the AIBench set, drawn from the paper's method text by generate
(``sciir.pipelines.generate.aibench_nodes``), with its manifest. The baseline metrics are
``sciir.evaluation.baseline_metrics``; the metrics logged, ``sciir.evaluation.run_metrics``. A branch that
looks at images is skipped with one log line when ``evaluate.verdicts_file`` is set or an input does not
exist yet (``sciir.pipelines.evaluate.inputs``).
"""

from __future__ import annotations

import logging
from typing import Any, cast

import pandas as pd
from kedro.pipeline import Pipeline, node

from sciir.aibench.level_accuracy import score_answers
from sciir.aibench.params import AIBenchParams, VQAScoreSettings
from sciir.backends.base import VisionLanguageModel
from sciir.backends.cache import ResponseCache
from sciir.catalog.backend_dataset import make_backend
from sciir.catalog.optional_dataset import MissingInput, is_missing_input
from sciir.evaluation.aibench_examination import examine_illustrations, no_examination
from sciir.evaluation.baseline_metrics import baseline_frame, baseline_scores
from sciir.evaluation.generated_images import ImageLoaders, image_source
from sciir.evaluation.run_metrics import aibench_scores_text, aibench_stage_metrics
from sciir.pipelines.evaluate.inputs import examination_skip, image_branch_skip, model_roles
from sciir.tasks import aesthetics

logger = logging.getLogger(__name__)


def examine_images(
    aibench_generations: ImageLoaders | MissingInput,
    aibench_generation_manifest: pd.DataFrame | MissingInput,
    aibench_set: pd.DataFrame | MissingInput,
    aibench_qa: pd.DataFrame | MissingInput,
    judge: VisionLanguageModel,
    params: dict[str, Any],
    verdicts_file: str | None = None,
    images_dir: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Every model's illustration of every AIBench-set paper: the solver answers its AIBench questions
    (one request, the image alone) and the judge rates its aesthetics (one request).

    Returns ``aibench_answers`` (one row per model, sample and question), ``aesthetics_ratings`` (one row
    per model and sample) and a run summary: missing images per model, failed requests per task, the
    answers given to unknown question ids, and the judge's cache stats. Skipped with one log line (empty
    tables) when ``verdicts_file`` or ``images_dir`` is set, or the AIBench set, its questions or the
    AIBench generation manifest do not exist yet. A manifest without images (every generation failed)
    is examined: each pair fails with its generation's reason.
    """
    skip = examination_skip(
        verdicts_file,
        images_dir,
        aibench_generation_manifest=aibench_generation_manifest,
        aibench_set=aibench_set,
        aibench_qa=aibench_qa,
    )
    if skip:
        return no_examination(skip)
    images: ImageLoaders = {} if is_missing_input(aibench_generations) else aibench_generations
    settings = AIBenchParams.model_validate(params)
    return examine_illustrations(
        images, aibench_generation_manifest, aibench_set, aibench_qa, judge, settings.window
    )


def score_aibench(
    aibench_answers: pd.DataFrame,
    aibench_generation_manifest: pd.DataFrame | MissingInput,
    params: dict[str, Any],
) -> pd.DataFrame:
    """``aibench_scores``: accuracy per level, question-level global average and coverage per model, each
    with its role from the AIBench generation manifest (references listed last, never ranked)."""
    return score_answers(aibench_answers, model_roles(aibench_generation_manifest, params))


def score_aesthetics(aesthetics_ratings: pd.DataFrame) -> pd.DataFrame:
    """``aesthetics_scores``: mean rating per criterion, coverage and image count per model."""
    return aesthetics.score_aesthetics(aesthetics_ratings)


def vqascore_backend(settings: VQAScoreSettings) -> VisionLanguageModel:
    """The configured VQA model, built like a catalog backend (cached when ``cache_path`` is set)."""
    cache = ResponseCache(settings.cache_path) if settings.cache_path else None
    spec = {"backend": settings.backend, **settings.config}
    # kind "vlm" builds only vision-language models (the registry checks the class)
    return cast(VisionLanguageModel, make_backend("vqascore", "vlm", spec, cache, None))


def baseline_metrics(
    generations: ImageLoaders,
    benchmark: pd.DataFrame,
    params: dict[str, Any],
    verdicts_file: str | None = None,
    images_dir: str | None = None,
) -> pd.DataFrame:
    """``baseline_scores``: CLIPScore and VQAScore per image where configured; each metric that is not
    configured is skipped with one log line and adds no rows, and so is everything when
    ``verdicts_file`` is set or an input does not exist yet. The images are the judge's (``images_dir``
    when set)."""
    generations = image_source(generations, images_dir)
    skip = image_branch_skip(verdicts_file, generations=generations, benchmark=benchmark)
    if skip:
        logger.info("baseline metrics skipped: %s", skip)
        return baseline_frame([])
    settings = AIBenchParams.model_validate(params).baseline_metrics
    return baseline_scores(generations, benchmark, settings, vqascore_backend)


def summarise_aibench(
    aibench_scores: pd.DataFrame,
    aesthetics_scores: pd.DataFrame,
    baseline_scores: pd.DataFrame,
    run_summary: dict[str, Any],
) -> dict[str, float]:
    """``aibench_metrics`` (``sciir.evaluation.run_metrics.aibench_stage_metrics``), and the AIBench scores
    logged as a table."""
    metrics = aibench_stage_metrics(aibench_scores, aesthetics_scores, baseline_scores, run_summary)
    logger.info("%s", aibench_scores_text(aibench_scores))
    return metrics


def create_aibench_pipeline(**kwargs: Any) -> Pipeline:
    """Evaluate-side AIBench (inputs: aibench_generations, aibench_generation_manifest, aibench_set,
    evaluation_aibench_qa, generations and evaluation_benchmark (baseline metrics), judge, params:aibench,
    params:evaluate (model roles), params:evaluate.verdicts_file, params:evaluate.images_dir; outputs:
    aibench_answers, aibench_scores,
    aesthetics_ratings, aesthetics_scores, baseline_scores, aibench_metrics)."""
    return Pipeline(
        [
            node(
                examine_images,
                [
                    "aibench_generations",
                    "aibench_generation_manifest",
                    "aibench_set",
                    "evaluation_aibench_qa",
                    "judge",
                    "params:aibench",
                    "params:evaluate.verdicts_file",
                    "params:evaluate.images_dir",
                ],
                ["aibench_answers", "aesthetics_ratings", "aibench_run_summary"],
                name="examine_aibench_images",
            ),
            node(
                score_aibench,
                ["aibench_answers", "aibench_generation_manifest", "params:evaluate"],
                "aibench_scores",
                name="score_aibench_answers",
            ),
            node(score_aesthetics, "aesthetics_ratings", "aesthetics_scores", name="score_aesthetics"),
            node(
                baseline_metrics,
                [
                    "generations",
                    "evaluation_benchmark",
                    "params:aibench",
                    "params:evaluate.verdicts_file",
                    "params:evaluate.images_dir",
                ],
                "baseline_scores",
                name="baseline_metrics",
            ),
            node(
                summarise_aibench,
                ["aibench_scores", "aesthetics_scores", "baseline_scores", "aibench_run_summary"],
                "aibench_metrics",
                name="summarise_aibench",
            ),
        ]
    )
