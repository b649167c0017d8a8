"""The version of every model task's prompt template, as MLflow params of a run.

A version names a template's wording and reply schema; it is already part of each request's cache key,
so a changed prompt is asked again. Logged with every run (``prompt_version.<task>``), it tells in the
MLflow UI which prompts produced a run's annotations and verdicts.
"""

from __future__ import annotations


def prompt_versions() -> dict[str, str]:
    """Task name -> template version, for every task the project sends to a model."""
    from sciir.aibench.aesthetics import AESTHETICS_TASK, AESTHETICS_TEMPLATE_VERSION
    from sciir.aibench.solver import SOLVER_TASK, SOLVER_TEMPLATE_VERSION
    from sciir.annotation import TASKS
    from sciir.baseline_metrics import VQASCORE_TASK, VQASCORE_TEMPLATE_VERSION
    from sciir.judging import JUDGE_TASK, JUDGE_TEMPLATE_VERSION
    from sciir.screening import SCREEN_TASK, SCREEN_TEMPLATE_VERSION

    versions = {name: spec.version for name, spec in TASKS.items()}
    versions |= {
        SCREEN_TASK: SCREEN_TEMPLATE_VERSION,
        JUDGE_TASK: JUDGE_TEMPLATE_VERSION,
        SOLVER_TASK: SOLVER_TEMPLATE_VERSION,
        AESTHETICS_TASK: AESTHETICS_TEMPLATE_VERSION,
        VQASCORE_TASK: VQASCORE_TEMPLATE_VERSION,
    }
    return dict(sorted(versions.items()))


def prompt_version_params() -> dict[str, str]:
    """``prompt_version.<task>`` -> version, as MLflow params."""
    return {f"prompt_version.{task}": version for task, version in prompt_versions().items()}
