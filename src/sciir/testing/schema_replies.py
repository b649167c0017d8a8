"""Replies of a realistic size for any task, made from the request's own JSON schema: what a served model
under structured decoding returns, for load tests of every model-calling stage on the loopback server.

A checklist-answering task (a schema with an ``answers`` array of items with an ``id``) answers every
question id its prompt lists, as a judge must; any other task gets an instance of its schema: strings of
a few to a couple of dozen words, integers and numbers drawn within their bounds, arrays of two to five
items (within ``minItems``/``maxItems``), each enum's first non-null value. A list of strings holds labels
(all of ``LABELS`` when its size is free, so a reply's terms name every label its relations and tracks
use, as an annotator's must), and a logic graph's flows and phases name its components. A track's evidence (terms and visualisations) is empty for about one track
in three, as a figure rarely shows every track. The draw is seeded by the prompt, so the same request gets
the same reply.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from sciir.testing.chat_answers import checklist_ids, message_texts

WORDS = (
    "the sample shows a labelled diagram of the pathway with arrows between each stage and a legend "
    "naming the measured quantity over time in the experiment reported by the authors for every condition"
).split()


LABELS = ("Glucose", "Pyruvate", "Acetyl-CoA", "Citrate", "ATP synthase", "NADH")


def _labels(rng: random.Random, low: int, high: int | None) -> list[str]:
    """Labels for a list of strings: every label when the size is free, else consecutive distinct ones."""
    count = len(LABELS) if high is None else max(low, min(high, len(LABELS)))
    start = 0 if high is None else rng.randrange(len(LABELS))
    return [LABELS[(start + k) % len(LABELS)] for k in range(count)]


def _checked_question(value: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A checklist question (``kind``, ``about``) made coherent as an annotator writes one: its own id,
    no parent (a root question), and a text question about the one label it expects to be written."""
    if {"id", "question"} <= value.keys():
        value["id"] = f"q{rng.randrange(10**9)}"
    if "parent_ids" in value:
        value["parent_ids"] = []
    if {"kind", "about"} <= value.keys() and value.get("kind") == "text":
        label = rng.choice(LABELS)
        value["about"] = [label]
        if "expected_text" in value:
            value["expected_text"] = label
    return value


# How often a track's evidence (terms and visualisations) is left empty: a figure rarely shows all three
# tracks, so samples fall into all four of bench_select's groups, not only All_Three.
NOT_SHOWN_SHARE = 0.3


def _logic_graph(value: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A method's logic graph as a model writes one: distinct components named by labels, flows from each
    to the next, and each component in a phase of its own."""
    names = _labels(rng, 2, max(2, min(len(value["components"]), len(LABELS))))
    components = [
        {**component, "name": name} for component, name in zip(value["components"], names, strict=False)
    ]
    names = [component["name"] for component in components]
    flows = [{"source": a, "target": b} for a, b in zip(names, names[1:], strict=False)]
    phases = [{"name": f"stage {k + 1}", "components": [name]} for k, name in enumerate(names)]
    return {**value, "components": components, "flows": flows, "phases": phases if value["phases"] else []}


def _coherent(value: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """An object made coherent as a model writes it: a checklist question (``_checked_question``), a
    track's evidence left empty now and then (``NOT_SHOWN_SHARE``), or a logic graph (``_logic_graph``)."""
    if value.keys() == {"terms", "visualizations"} and rng.random() < NOT_SHOWN_SHARE:
        return {"terms": [], "visualizations": []}
    if {"components", "flows", "phases"} <= value.keys():
        return _logic_graph(value, rng)
    return _checked_question(value, rng)


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return _resolve(node, root)


def _typed(schema: dict[str, Any], root: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The schema's type other than null, and the branch that has it (``anyOf`` of a value, often a
    reference, or null)."""
    for branch in schema.get("anyOf", ()):
        branch = _resolve(branch, root)
        if branch.get("type") != "null":
            return _typed(branch, root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind, schema


def schema_instance(schema: dict[str, Any], rng: random.Random, root: dict[str, Any] | None = None) -> Any:
    """An instance of ``schema`` (the subset strict structured outputs use), drawn with ``rng``."""
    root = root if root is not None else schema
    kind, schema = _typed(_resolve(schema, root), root)  # a nullable enum is an enum too
    if "enum" in schema:
        return next((value for value in schema["enum"] if value is not None), None)
    if "const" in schema:
        return schema["const"]
    if kind == "object":
        properties = schema.get("properties", {})
        return _coherent({name: schema_instance(sub, rng, root) for name, sub in properties.items()}, rng)
    if kind == "array":
        if _typed(_resolve(schema.get("items", {}), root), root)[0] == "string":
            return _labels(rng, schema.get("minItems", 0), schema.get("maxItems"))
        low = max(schema.get("minItems", 2), 0)
        high = max(min(schema.get("maxItems", 5), 5), low)
        return [schema_instance(schema.get("items", {}), rng, root) for _ in range(rng.randint(low, high))]
    if kind == "integer":
        return rng.randint(int(schema.get("minimum", 0)), int(schema.get("maximum", 10)))
    if kind == "number":
        return round(rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 1.0)), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "string":
        text = _words(rng, 3, 24)
        return text[: schema["maxLength"]] if "maxLength" in schema else text
    return None


def answer_from_schema(request: dict[str, Any]) -> str:
    """The reply content for one chat-completions request (see the module docstring)."""
    prompt = "\n".join(message_texts(request))
    rng = random.Random(hashlib.sha256(prompt.encode()).digest())
    schema = request.get("response_format", {}).get("json_schema", {}).get("schema")
    if not isinstance(schema, dict):
        return json.dumps({"answer": _words(rng, 3, 12)})
    answers = schema.get("properties", {}).get("answers", {})
    if "id" in answers.get("items", {}).get("properties", {}):
        item = answers["items"]
        return json.dumps(
            {
                "answers": [
                    schema_instance(item, rng, schema) | {"id": qid}
                    for qid in dict.fromkeys(checklist_ids(prompt))
                ]
            }
        )
    return json.dumps(schema_instance(schema, rng))
