"""Annotate nodes: ask the annotator for track scores, Sci-RCoT, abstract prompts and checklists.

The work on each kept curated sample (stages in dependency order, all samples streamed through the
annotator in one window) is ``sciir.annotation.sample_work``; the tables written from it,
``sciir.annotation.tables``. A sample whose image cannot be read or whose answer is unusable
becomes a ``failed`` row naming the sample and the task; the other samples go on. Samples with every
track score below tau are kept as ``ok`` rows without labels (low reasoning content, appendix B.4) and
get no further tasks.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from sciir.annotation.sample_work import AnnotateParams, CuratedImages, annotate_samples, kept_samples
from sciir.annotation.tables import annotate_metrics, annotation_tables
from sciir.backends.base import VisionLanguageModel


def annotate(
    curated: pd.DataFrame,
    curated_images: CuratedImages,
    annotator: VisionLanguageModel,
    params: dict[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """Annotate every kept curated sample: annotations, checklists and the run's metrics."""
    settings = AnnotateParams.model_validate(params)
    samples = kept_samples(curated, settings.max_methods_chars)
    annotate_samples(annotator, samples, curated_images, settings)
    annotations, checklists = annotation_tables(samples, settings.tau)
    return annotations, checklists, annotate_metrics(annotations, checklists, annotator.stats)
