"""Prompt templates are config: read from conf/base/tasks, replaced by conf/local/tasks, checked on load."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sciir.tasks.judge import build_judge_request
from sciir.tasks.prompts import PromptError, prompt_template
from sciir.tasks.registry import ANNOTATION_TASKS as ANNOTATION_TASKS

PROJECT_CONF = Path(__file__).resolve().parents[2] / "conf"
CHECKLIST = [{"id": "q1", "question": "Is ATP written?", "layer": 1, "track": "text"}]


@pytest.fixture
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the project's task templates as the conf folder in use, with an empty conf/local."""
    root = tmp_path / "conf"
    shutil.copytree(PROJECT_CONF / "base" / "tasks", root / "base" / "tasks")
    (root / "local" / "tasks").mkdir(parents=True)
    monkeypatch.setenv("SCIIR_CONF_DIR", str(root))
    return root


def test_a_local_template_replaces_the_base_one_and_changes_the_request_and_its_key(conf: Path) -> None:
    base = build_judge_request("Draw ATP.", CHECKLIST, b"png")
    (conf / "local" / "tasks" / "judge.yml").write_text(
        "version: my-judge-v1\ntemplate: |\n  Check $prompt against $checklist. Answer in JSON.\n"
    )
    mine = build_judge_request("Draw ATP.", CHECKLIST, b"png")
    assert mine.template_version == "my-judge-v1" and base.template_version != "my-judge-v1"
    assert mine.prompt.startswith("Check Draw ATP. against [")
    assert mine.content_key() != base.content_key()


def test_every_annotation_template_renders_with_the_context_its_task_declares() -> None:
    for name, spec in ANNOTATION_TASKS.items():
        asked = prompt_template(name).placeholders - {"schema"}
        assert asked == set(spec.context_keys), name
        request = ANNOTATION_TASKS[name].build(
            dict.fromkeys(spec.context_keys, "x"), b"png" if spec.sees_image else None
        )
        assert "$" not in request.prompt.replace("$defs", "").replace("$ref", ""), name


def test_a_template_asking_for_a_field_nobody_gives_names_the_task_and_the_field(conf: Path) -> None:
    (conf / "local" / "tasks" / "judge.yml").write_text("version: v9\ntemplate: 'Judge $image_title'\n")
    with pytest.raises(PromptError, match=r"task judge: template .*judge.yml needs field 'image_title'"):
        build_judge_request("Draw ATP.", CHECKLIST, b"png")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("version: v1\ntemplate: [unclosed\n", "is not valid YAML"),
        ("template: 'no version'\n", "needs the keys 'version' and 'template'"),
        ("version: ''\ntemplate: 'x'\n", "needs a non-empty string 'version' and 'template'"),
    ],
)
def test_a_malformed_template_file_is_refused_with_its_path_and_reason(
    conf: Path, text: str, reason: str
) -> None:
    (conf / "local" / "tasks" / "screen.yml").write_text(text)
    with pytest.raises(PromptError, match=rf"task screen: .*screen.yml {reason}"):
        prompt_template("screen")


def test_a_task_without_a_template_file_says_where_it_was_looked_for(conf: Path) -> None:
    (conf / "base" / "tasks" / "aesthetics.yml").unlink()
    with pytest.raises(
        PromptError, match=r"task aesthetics: no template file \(.*base/tasks/aesthetics.yml\)"
    ):
        prompt_template("aesthetics")
