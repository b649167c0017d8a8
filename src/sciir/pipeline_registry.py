"""Project pipelines: the eight named stages and `__default__` running all of them in order."""

from __future__ import annotations

from kedro.framework.project import find_pipelines
from kedro.pipeline import Pipeline

STAGES = ("ingest", "curate", "annotate", "bench_select", "finetune", "generate", "evaluate", "human_corr")


def register_pipelines() -> dict[str, Pipeline]:
    """Register each stage by name; Kedro orders `__default__` by the datasets the stages share.

    `kedro run --pipelines X` makes Kedro import only stage X (so evaluate never imports torch);
    the full set is found when all stages are requested.
    """
    found = find_pipelines(raise_errors=True)
    pipelines = {name: found[name] for name in STAGES if name in found}
    if len(pipelines) == len(STAGES):
        pipelines["__default__"] = sum(pipelines.values(), Pipeline([]))
    return pipelines
