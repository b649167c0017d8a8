"""Every model task, registered by name (as lm-evaluation-harness registers its tasks).

A task is data plus small functions: its prompt template and version (``conf/base/tasks/<task>.yml``,
see ``sciir.tasks.prompts``), the JSON schema of its reply (strict-mode valid), the module that builds
its requests and parses replies into typed records, and the rule-based answerers that can answer it
honestly without a model (``offline``: OCR and diagram reading; ``ocr``: text reading only). Backends
know no task: the offline and OCR backends look the request's task up here. Entries name code as
``"module:attribute"`` so that importing the registry imports none of it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sciir.tasks.prompts import PromptTemplate, prompt_template

if TYPE_CHECKING:
    from sciir.backends.base import VLMRequest, VLMResult
    from sciir.backends.ocr import OcrReading


@dataclass(frozen=True)
class Sight:
    """What a rule-based answerer may use: an OCR reader and the confidence a read line needs."""

    read: Callable[[bytes], OcrReading]
    min_confidence: float = 60.0


Answerer = Callable[["VLMRequest", Sight], "VLMResult"]


@dataclass(frozen=True)
class ModelTask:
    """One registered task: what it asks, where its code lives, and who can answer it without a model."""

    name: str
    summary: str
    requests: str  # the module that builds the task's requests and parses its replies
    # "module:attribute": a JSON schema dict or a pydantic model; None: no JSON reply (logprobs, an image)
    reply_schema: str | None
    answerers: Mapping[str, str] = field(default_factory=dict)  # reader kind -> "module:function"

    @property
    def prompt(self) -> PromptTemplate:
        return prompt_template(self.name)

    def schema(self) -> dict[str, Any] | None:
        """The reply schema as sent (a pydantic model in OpenAI's strict form)."""
        if self.reply_schema is None:
            return None
        found = _resolve(self.reply_schema)
        if isinstance(found, dict):
            return found
        from sciir.backends.strict_schema import strict_model_schema

        return strict_model_schema(found)


def _resolve(reference: str) -> Any:
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


TASKS: dict[str, ModelTask] = {
    task.name: task
    for task in (
        ModelTask(
            "screen",
            "KEEP or REJECT a cropped panel (SciIR B.3)",
            "sciir.figures.review",
            "sciir.figures.review:SCREEN_SCHEMA",
            {"offline": "sciir.tasks.offline_answers:screen"},
        ),
        ModelTask(
            "track_scores",
            "relevance of a figure to the entity, process and law tracks, 1-10 (SciIR F)",
            "sciir.tasks.annotation",
            "sciir.tasks.annotation:TrackScores",
            {"offline": "sciir.tasks.annotation_rules:track_scores"},
        ),
        ModelTask(
            "reasoning",
            "terms, required text, relations, laws and the Sci-RCoT of a figure (SciIR F)",
            "sciir.tasks.annotation",
            "sciir.tasks.annotation:Reasoning",
            {"offline": "sciir.tasks.annotation_rules:reasoning"},
        ),
        ModelTask(
            "abstract_prompt",
            "the Sci-RCoT distilled by term substitution (SciIR F)",
            "sciir.tasks.annotation",
            "sciir.tasks.annotation:AbstractPrompt",
            {"offline": "sciir.tasks.annotation_rules:abstract_prompt"},
        ),
        ModelTask(
            "checklist",
            "the atomic two-layer checklist (SciIR D.1)",
            "sciir.tasks.annotation",
            "sciir.tasks.annotation:Checklist",
            {"offline": "sciir.tasks.annotation_rules:checklist"},
        ),
        ModelTask(
            "judge",
            "yes/no verdicts with evidence on a generated image's checklist (SciIR D.2)",
            "sciir.tasks.judge",
            "sciir.tasks.judge:JUDGE_REPLY_SCHEMA",
            {
                "offline": "sciir.tasks.offline_answers:judge",
                "ocr": "sciir.tasks.offline_answers:judge_by_text",
            },
        ),
        ModelTask(
            "aibench_qa",
            "the solver: yes/no answers to AIBench's four levels of questions (AIBench 3.5)",
            "sciir.tasks.aibench_qa",
            "sciir.tasks.aibench_qa:SOLVER_REPLY_SCHEMA",
            {
                "offline": "sciir.tasks.offline_answers:aibench_by_sight",
                "ocr": "sciir.tasks.offline_answers:aibench_by_text",
            },
        ),
        ModelTask(
            "aibench_graph",
            "the logic graph G = (V, E, P) of a figure's method, from the method text (AIBench 3.2)",
            "sciir.tasks.aibench_graph",
            "sciir.tasks.aibench_graph:GraphReply",
            {"offline": "sciir.tasks.offline_answers:aibench_graph"},
        ),
        ModelTask(
            "aibench_questions",
            "four levels of yes/no questions with gold answers from a logic graph (AIBench 3.2)",
            "sciir.tasks.aibench_questions",
            "sciir.tasks.aibench_questions:QuestionsReply",
            {"offline": "sciir.tasks.offline_answers:aibench_questions"},
        ),
        ModelTask(
            "aesthetics",
            "1-5 ratings of an illustration's visual design (AIBench)",
            "sciir.tasks.aesthetics",
            "sciir.tasks.aesthetics:AESTHETICS_REPLY_SCHEMA",
            {"offline": "sciir.tasks.offline_answers:abstain_on_aesthetics"},
        ),
        ModelTask(
            "planner",
            "a generation prompt rewritten into a Sci-RCoT plan before synthesis (SciIR 4, Qwen-Image-SciIR)",
            "sciir.generation.planning",
            "sciir.generation.planning:Plan",
        ),
        ModelTask(
            "candidate_score",
            "1-10 for one candidate image against its prompt, to keep the best of N (AIBench 4)",
            "sciir.generation.best_of_n",
            "sciir.generation.best_of_n:CandidateScore",
            {"offline": "sciir.tasks.offline_answers:candidate_score"},
        ),
        ModelTask(
            "aibench_illustration",
            "the generation prompt of an AIBench illustration: the paper's method text (AIBench 3.1, B.4)",
            "sciir.tasks.aibench_illustration",
            None,
        ),
        ModelTask(
            "vqascore",
            "P(yes) of 'Does this figure show ...?' from first-token log-probabilities (Lin et al. 2024)",
            "sciir.evaluation.baseline_metrics",
            None,
        ),
    )
}


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
    reference = task(name).answerers.get(reader)
    return _resolve(reference) if reference else None


def readers_of(reader: str) -> list[str]:
    """The tasks ``reader`` can answer."""
    return sorted(name for name, entry in TASKS.items() if reader in entry.answerers)


def prompt_versions() -> dict[str, str]:
    """Task name -> template version, for every registered task."""
    return {name: entry.prompt.version for name, entry in sorted(TASKS.items())}
