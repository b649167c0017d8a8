"""Every model task is registered once, with its template file, a strict reply schema and real answerers."""

from __future__ import annotations

from pathlib import Path

import pytest

from sciir.backends.strict_schema import strict_schema_problems
from sciir.tasks.prompts import prompt_versions
from sciir.tasks.registry import TASKS, UnknownTask, answerer, readers_of, task

TEMPLATES = Path(__file__).resolve().parents[2] / "conf" / "base" / "tasks"


def test_every_template_file_belongs_to_a_registered_task_and_every_task_has_one() -> None:
    assert {path.stem for path in TEMPLATES.glob("*.yml")} == set(TASKS)
    assert all(version for version in prompt_versions().values())


@pytest.mark.parametrize("name", sorted(name for name, entry in TASKS.items() if entry.reply_schema))
def test_every_reply_schema_is_valid_in_strict_mode(name: str) -> None:
    schema = task(name).schema()
    assert schema is not None and schema["type"] == "object"
    assert strict_schema_problems(schema) == []


@pytest.mark.parametrize(("name", "reader"), [(n, r) for n, e in TASKS.items() for r in e.answerers])
def test_every_answerer_named_in_the_registry_is_a_function(name: str, reader: str) -> None:
    assert callable(answerer(name, reader))


def test_the_ocr_reader_answers_only_what_text_can_settle() -> None:
    assert readers_of("ocr") == ["aibench_qa", "judge"]
    assert answerer("track_scores", "ocr") is None


def test_an_unregistered_task_is_refused_with_the_known_names() -> None:
    with pytest.raises(UnknownTask, match=r"no task 'jduge' is registered \(known: \['abstract_prompt'"):
        task("jduge")
