"""OpenAI strict structured outputs: the checker on hand-made schemas, the transformer on pydantic models,
and every schema the project sends."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from sciir.backends.base import VLMResult
from sciir.backends.replies import schema_problems
from sciir.backends.strict_schema import (
    StrictSchemaError,
    model_schema,
    nullable,
    omit_added_nulls,
    strict_model_schema,
    strict_schema,
    strict_schema_problems,
)
from sciir.tasks.checklist import Checklist
from sciir.tasks.registry import ANNOTATION_TASKS
from sciir.tasks.registry import ANNOTATION_TASKS as TASKS


def _closed(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A strict object schema over ``properties``: closed, every property required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
        **extra,
    }


STRICT_EXAMPLE = _closed(
    {
        "answers": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/Answer"}},
        "day": {"type": ["string", "null"], "format": "date"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "score": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 5}, {"type": "null"}]},
    },
    **{
        "$defs": {
            "Answer": _closed(
                {
                    "id": {"type": "string", "description": "the question id"},
                    "verdict": {"type": ["string", "null"], "enum": ["yes", "no", None]},
                }
            )
        }
    },
)


def test_a_strict_schema_with_refs_nullable_fields_and_supported_bounds_has_no_problem() -> None:
    assert strict_schema_problems(STRICT_EXAMPLE) == []


@pytest.mark.parametrize(
    ("schema", "problems"),
    [
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            ["$: 'additionalProperties' must be false"],
            id="open object",
        ),
        pytest.param(
            _closed({"a": {"type": "string"}, "b": {"type": "integer"}}) | {"required": ["a"]},
            ["$: every property must be required; not in 'required': ['b']"],
            id="missing required",
        ),
        pytest.param(
            _closed({"a": {"type": ["string", "null"], "default": None}}),
            ["$.properties.a: 'default' is not permitted in strict mode (defaults are not supported)"],
            id="default",
        ),
        pytest.param(
            _closed(
                {
                    "rows": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "minLength": 1},
                                "note": {"type": "string"},
                            },
                            "required": ["id"],
                        },
                    }
                }
            ),
            [
                "$.properties.rows.items: 'additionalProperties' must be false",
                "$.properties.rows.items: every property must be required; not in 'required': ['note']",
                "$.properties.rows.items.properties.id: 'minLength' is not permitted in strict mode "
                "(string length bounds are not supported)",
            ],
            id="nested array of objects",
        ),
        pytest.param(
            _closed({"v": {"enum": ["yes", "no", None]}, "tags": {"type": "array"}, "d": {"type": "text"}}),
            [
                "$.properties.v: a schema must name its 'type' (or be an anyOf or a $ref)",
                "$.properties.tags: an array must define its 'items'",
                "$.properties.d: unknown type 'text'",
            ],
            id="untyped enum, array without items, unknown type",
        ),
        pytest.param(
            {"anyOf": [_closed({"a": {"type": "string"}}), {"type": "null"}]},
            ["$: the root must be an object, not anyOf"],
            id="anyOf root",
        ),
        pytest.param(
            _closed({"a": {"type": "string", "format": "uri"}, "b": {"$ref": "#/$defs/Missing"}}),
            [
                "$.properties.a: format 'uri' is not supported (supported: ['date', 'date-time', 'duration', "
                "'email', 'hostname', 'ipv4', 'ipv6', 'time', 'uuid'])",
                "$.properties.b: $ref '#/$defs/Missing' points to nothing",
            ],
            id="unsupported format and dangling ref",
        ),
        pytest.param(
            _closed({"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}),
            [
                "$.properties.a: 'oneOf' is not permitted in strict mode (use anyOf)",
                "$.properties.a: a schema must name its 'type' (or be an anyOf or a $ref)",
            ],
            id="oneOf",
        ),
        pytest.param(
            ["not", "a", "schema"], ["$: the schema must be a JSON object, got list"], id="not an object"
        ),
    ],
)
def test_every_violation_is_listed_with_its_path(schema: Any, problems: list[str]) -> None:
    assert strict_schema_problems(schema) == problems


# ---- the transformer


class _Step(BaseModel):
    name: str = Field(min_length=1, title="Step name")
    after: list[str] = Field(default_factory=list)
    note: str | None = None
    polarity: Literal["positive", "negative"] = "positive"


class _Plan(BaseModel):
    steps: list[_Step] = Field(min_length=1)
    owner: _Step | None = None
    weight: int = Field(default=1, ge=1, le=5)


def test_a_pydantic_schema_becomes_strict_recursively() -> None:
    raw = _Plan.model_json_schema()
    assert strict_schema_problems(raw)  # pydantic's own schema would be refused
    strict = strict_model_schema(_Plan)
    assert strict_schema_problems(strict) == []
    step = strict["$defs"]["_Step"]
    assert step["required"] == ["name", "after", "note", "polarity"]
    assert step["properties"]["name"] == {"type": "string"}  # minLength and title dropped
    assert step["properties"]["after"] == {"type": ["array", "null"], "items": {"type": "string"}}
    assert step["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}  # already nullable
    assert step["properties"]["polarity"] == {
        "anyOf": [{"enum": ["positive", "negative"], "type": "string"}, {"type": "null"}]
    }
    assert strict["properties"]["weight"] == {"type": ["integer", "null"], "maximum": 5, "minimum": 1}
    assert strict["properties"]["steps"]["minItems"] == 1  # supported bounds stay
    assert "default" not in str(strict) and strict_schema(raw) == strict


def test_a_reply_with_nulls_for_optional_fields_parses_into_the_model_defaults() -> None:
    reply = {
        "steps": [{"name": "mix", "after": None, "note": None, "polarity": None}],
        "owner": None,
        "weight": None,
    }
    assert schema_problems(reply, strict_model_schema(_Plan)) == []
    plan = _Plan.model_validate(omit_added_nulls(reply, _Plan.model_json_schema()))
    assert plan == _Plan(steps=[_Step(name="mix")])
    assert (
        plan.steps[0].after == [] and plan.steps[0].note is None and plan.owner is None and plan.weight == 1
    )
    kept = omit_added_nulls(
        {"steps": [{"name": "mix", "after": ["a"], "note": "n"}]}, _Plan.model_json_schema()
    )
    assert kept == {"steps": [{"name": "mix", "after": ["a"], "note": "n"}]}


def test_constructs_strict_mode_cannot_express_are_refused_with_their_path() -> None:
    class _Open(BaseModel):
        scores: dict[str, int]

    with pytest.raises(
        StrictSchemaError, match=r"\$\.properties\.scores: an object with open additionalProperties"
    ):
        strict_model_schema(_Open)
    with pytest.raises(StrictSchemaError, match=r"\$: \['not'\] cannot be expressed"):
        strict_schema({"type": "object", "not": {"type": "null"}})


def test_nullable_widens_a_type_and_wraps_what_a_type_cannot_widen() -> None:
    assert nullable({"type": "string"}) == {"type": ["string", "null"]}
    assert nullable({"$ref": "#/$defs/A"}) == {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}
    assert nullable({"type": "string", "enum": ["a"]}) == {
        "anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]
    }
    already = {"type": ["string", "null"], "enum": ["yes", None]}
    assert nullable(already) is already


# ---- the project's schemas


# (every registered task's reply schema: tests/tasks/test_registry.py)


def test_a_checklist_reply_with_null_optional_fields_parses_to_the_models_meaning() -> None:
    schema = TASKS["checklist"].schema()
    item_schema = schema["$defs"]["ChecklistQuestion"]["properties"]
    text_question = {"id": "L1-01", "layer": 1, "track": "text", "kind": "text", "about": ["ATP"]}
    arrow_question = {
        "id": "L2-process-01",
        "layer": 2,
        "track": "process",
        "kind": "relation",
        "about": ["A", "B"],
    }
    for question, text in ((text_question, "Is 'ATP' written?"), (arrow_question, "Is there an arrow?")):
        question |= {"question": text, "polarity": "positive"}
    # Every other field (optional in the model) is sent as null, as a strict-mode model must send it.
    questions = [
        {key: {**text_question, "expected_text": "ATP"}.get(key) for key in item_schema},
        {key: {**arrow_question, "parent_ids": ["L1-01"]}.get(key) for key in item_schema},
    ]
    assert schema_problems({"questions": questions}, schema) == []
    checklist = ANNOTATION_TASKS["checklist"].parse_output(VLMResult(output={"questions": questions}))
    assert isinstance(checklist, Checklist)
    first, second = checklist.questions
    assert first.parent_ids == [] and first.expected_text == "ATP"
    assert second.parent_ids == ["L1-01"] and second.expected_text is None


def test_a_model_schema_is_built_once_and_each_caller_gets_a_copy_of_its_own(monkeypatch):
    class Reply(BaseModel):
        label: str
        note: str | None = None

    built = []
    original = Reply.model_json_schema.__func__

    def counted(cls, *args, **kwargs):
        built.append(cls)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(Reply, "model_json_schema", classmethod(counted))
    first, strict = model_schema(Reply), strict_model_schema(Reply)
    first["properties"].clear()
    strict["required"].append("changed by a caller")
    assert model_schema(Reply) == Reply.model_json_schema()  # what pydantic builds, untouched by the caller
    assert strict_model_schema(Reply) == strict_schema(Reply.model_json_schema())
    assert len(built) == 1 + 2  # once for the caches, then the two comparisons above
