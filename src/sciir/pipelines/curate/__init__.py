"""The ``curate`` pipeline: figures to standardised, geometry-checked panels."""

from __future__ import annotations

from typing import Any


def create_pipeline(**kwargs: Any) -> Any:
    """The pipeline (sciir.pipelines.curate.pipeline), imported on call: the worker processes that import
    this package's figure_work need no Kedro."""
    from sciir.pipelines.curate.pipeline import create_pipeline as create

    return create(**kwargs)
