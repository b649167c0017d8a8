"""The version of every model task's prompt template, as MLflow params of a run.

A version names a template's wording and reply schema (``conf/base/tasks/<task>.yml``); it is already part
of each request's cache key, so a changed prompt is asked again. Logged with every run
(``prompt_version.<task>``), it tells in the MLflow UI which prompts produced a run's annotations and verdicts.
"""

from __future__ import annotations

from sciir.tasks.registry import prompt_versions


def prompt_version_params() -> dict[str, str]:
    """``prompt_version.<task>`` -> version, as MLflow params."""
    return {f"prompt_version.{task}": version for task, version in prompt_versions().items()}
