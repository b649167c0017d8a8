"""Project pipelines: the eight named stages and `__default__` running all of them in order."""

from __future__ import annotations

from kedro.framework.project import find_pipelines
from kedro.pipeline import Pipeline

STAGES = ("ingest", "curate", "annotate", "bench_select", "finetune", "generate", "evaluate", "human_corr")


def register_pipelines() -> dict[str, Pipeline]:
    """Register each stage by name; Kedro orders `__default__` by the datasets the stages share."""
    found = find_pipelines(raise_errors=True)
    missing = [name for name in STAGES if name not in found]
    if missing:
        raise RuntimeError(f"pipelines not found under sciir.pipelines: {missing}")
    pipelines = {name: found[name] for name in STAGES}
    pipelines["__default__"] = sum(pipelines.values(), Pipeline([]))
    return pipelines
