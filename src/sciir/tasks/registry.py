"""Every model task, registered by name (as lm-evaluation-harness registers its tasks).

Each task is one module of ``sciir.tasks`` declaring its ``TASK`` (``sciir.tasks.task.ModelTask``): prompt
template and version (``conf/base/tasks/<task>.yml``), reply schema, request builder and parser, and the
rule-based answerers by reader kind (``offline``: OCR and diagram reading; ``ocr``: text reading only).
The registry lists them, hands each reader's answerers to the rule-based backends (``rule_book``), which
know no task.
"""

from __future__ import annotations

from sciir.backends.rule_based import Answerer, RuleBook
from sciir.tasks import (
    abstract_prompt,
    aesthetics,
    aibench_graph,
    aibench_illustration,
    aibench_qa,
    aibench_questions,
    candidate_score,
    checklist,
    judge,
    planner,
    prompt_checklist,
    reasoning,
    screen,
    track_scores,
    vqascore,
)
from sciir.tasks.annotation import AnnotationTask
from sciir.tasks.task import ModelTask

# The four annotation tasks, in dependency order (``sciir.tasks.annotation``).
ANNOTATION_TASKS: dict[str, AnnotationTask] = {
    entry.name: entry for entry in (track_scores.TASK, reasoning.TASK, abstract_prompt.TASK, checklist.TASK)
}

TASKS: dict[str, ModelTask] = {
    entry.name: entry
    for entry in (
        screen.TASK,
        *ANNOTATION_TASKS.values(),
        judge.TASK,
        aibench_qa.TASK,
        aibench_graph.TASK,
        aibench_questions.TASK,
        aesthetics.TASK,
        planner.TASK,
        candidate_score.TASK,
        prompt_checklist.TASK,
        aibench_illustration.TASK,
        vqascore.TASK,
    )
}

# Bump a reader's version when one of its task rules changes: it is part of the rule-based backend's
# identity, so answers of the old rules are not reused (the readers' own versions are counted apart).
RULES_VERSIONS: dict[str, str] = {"offline": "offline-rules-v5", "ocr": "ocr-rules-v1"}


class UnknownTask(KeyError):
    """A request names a task nobody registered."""


def task(name: str) -> ModelTask:
    """The registered task ``name``."""
    try:
        return TASKS[name]
    except KeyError:
        raise UnknownTask(f"no task {name!r} is registered (known: {sorted(TASKS)})") from None


def answerer(name: str, reader: str) -> Answerer | None:
    """The function that answers ``name`` with ``reader`` ("offline", "ocr"), or None when it cannot."""
    return task(name).answerers.get(reader)


def readers_of(reader: str) -> list[str]:
    """The tasks ``reader`` can answer."""
    return sorted(name for name, entry in TASKS.items() if reader in entry.answerers)


def rule_book(reader: str) -> RuleBook:
    """Every task's answerer for ``reader``, as the rule-based backend of that reader is handed them."""
    answerers = {name: entry.answerers[reader] for name, entry in TASKS.items() if reader in entry.answerers}
    return RuleBook(reader, answerers, tuple(sorted(TASKS)), RULES_VERSIONS.get(reader))
