"""AIBench on the evaluate side: the solver answers the questions of each AIBench illustration, the judge
rates its aesthetics, baseline metrics (CLIPScore, VQAScore) of the SciIR-Bench images are computed when
configured, and everything is scored.

The AIBench examination (``sciir.evaluation.aibench_examination``) reads ``aibench_generations``: each
contestant's illustration of each paper of the AIBench set, drawn from the paper's method text by generate
(``sciir.pipelines.generate.aibench_nodes``), with its manifest; for a benchmark file with multiple-choice
questions (AIBench's own file, imported), the file's images. The blank baseline's white images are
examined beside them (``sciir.evaluation.sanity_baselines``). The baseline metrics are
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
from sciir.catalog.optional_dataset import MissingInput
from sciir.evaluation.aibench_examination import examine_illustrations, no_examination
from sciir.evaluation.baseline_metrics import baseline_frame, baseline_scores
from sciir.evaluation.generated_images import ImageLoaders, image_source
from sciir.evaluation.params import EvaluateParams
from sciir.evaluation.run_metrics import aibench_scores_text, aibench_stage_metrics
from sciir.evaluation.sanity_baselines import blank_answers_warning, log_warning, with_blank
from sciir.pipelines.evaluate.inputs import examination_skip, examined_images, image_branch_skip, model_roles
from sciir.tasks import aesthetics

logger = logging.getLogger(__name__)


def examine_images(
    aibench_generations: ImageLoaders | MissingInput,
    aibench_generation_manifest: pd.DataFrame | MissingInput,
    generations: ImageLoaders | MissingInput,
    generation_manifest: pd.DataFrame | MissingInput,
    aibench_set: pd.DataFrame | MissingInput,
    aibench_qa: pd.DataFrame | MissingInput,
    judge: VisionLanguageModel,
    params: dict[str, Any],
    evaluate_params: dict[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Every model's illustration of every AIBench-set paper, and the blank baseline's white image of
    it: the solver answers its AIBench questions (one request, the image alone) and the judge rates its
    aesthetics (one request). The illustrations are the AIBench generations or, for a benchmark file
    with multiple-choice questions, the file's own images (``inputs.examined_images``).

    Returns ``aibench_answers`` (one row per model, sample and question), ``aesthetics_ratings`` (one row
    per model and sample) and a run summary: missing images per model, failed requests per task, the
    answers given to unknown question ids, and the judge's cache stats. Skipped with one log line (empty
    tables) when ``verdicts_file`` is set, ``images_dir`` is set without a benchmark file, or the AIBench
    set, its questions or the AIBench generation manifest do not exist yet. A manifest without images
    (every generation failed) is examined: each pair fails with its generation's reason.
    """
    config = EvaluateParams.model_validate(evaluate_params)
    images, manifest = examined_images(
        config, aibench_generations, aibench_generation_manifest, generations, generation_manifest
    )
    skip = examination_skip(
        config, aibench_generation_manifest=manifest, aibench_set=aibench_set, aibench_qa=aibench_qa
    )
    if skip:
        return no_examination(skip)
    settings = AIBenchParams.model_validate(params)
    images = with_blank(images, [str(sample) for sample in aibench_set["sample_id"]], config.blank)
    # examination_skip found them: the manifest, the AIBench set and its questions exist
    tables = cast("tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]", (manifest, aibench_set, aibench_qa))
    return examine_illustrations(images, *tables, judge, settings.window)


def score_aibench(
    aibench_answers: pd.DataFrame,
    aibench_generation_manifest: pd.DataFrame | MissingInput,
    generation_manifest: pd.DataFrame | MissingInput,
    params: dict[str, Any],
) -> pd.DataFrame:
    """``aibench_scores``: accuracy per level, question-level global average, coverage and how often the
    insufficient-information option was given, per model, each with its role from the manifest of the
    images examined (references and the blank baseline listed last, never ranked). A warning is logged
    when the solver sees things in the blank images."""
    config = EvaluateParams.model_validate(params)
    manifest = generation_manifest if config.benchmark else aibench_generation_manifest
    log_warning(blank_answers_warning(aibench_answers, config))
    return score_answers(aibench_answers, model_roles(manifest, params))


def score_aesthetics(aesthetics_ratings: pd.DataFrame) -> pd.DataFrame:
    """``aesthetics_scores``: mean rating per criterion, coverage and image count per model."""
    return aesthetics.score_aesthetics(aesthetics_ratings)


def vqascore_backend(settings: VQAScoreSettings) -> VisionLanguageModel:
    """The configured VQA model, built like a catalog backend (cached when ``cache_path`` is set)."""
    cache = ResponseCache(settings.cache_path) if settings.cache_path else None
    spec = {"backend": settings.backend, **settings.config}
    return make_backend("vqascore", "vlm", spec, cache, None)  # "vlm": the registry checks the class


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
    """Evaluate-side AIBench (inputs: aibench_generations, aibench_generation_manifest, generations and
    generation_manifest (a benchmark file's images; also the baseline metrics'), evaluation_aibench_set,
    evaluation_aibench_qa, evaluation_benchmark (baseline metrics), judge, params:aibench, params:evaluate
    (images, model roles, the blank baseline), params:evaluate.verdicts_file, params:evaluate.images_dir;
    outputs: aibench_answers, aibench_scores, aesthetics_ratings, aesthetics_scores, baseline_scores,
    aibench_metrics)."""
    return Pipeline(
        [
            node(
                examine_images,
                [
                    "aibench_generations",
                    "aibench_generation_manifest",
                    "generations",
                    "generation_manifest",
                    "evaluation_aibench_set",
                    "evaluation_aibench_qa",
                    "judge",
                    "params:aibench",
                    "params:evaluate",
                ],
                ["aibench_answers", "aesthetics_ratings", "aibench_run_summary"],
                name="examine_aibench_images",
            ),
            node(
                score_aibench,
                ["aibench_answers", "aibench_generation_manifest", "generation_manifest", "params:evaluate"],
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
