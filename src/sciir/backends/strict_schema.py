"""JSON schemas for OpenAI's strict structured outputs: making one strict, and listing what breaks it.

A request sent with ``response_format: {"type": "json_schema", "json_schema": {..., "strict": true}}``
is refused by the hosted API (HTTP 400, "Invalid schema ...") unless its schema keeps to the subset of
JSON Schema that strict mode compiles into a decoding grammar:

- the root is an object (not ``anyOf``); every object sets ``additionalProperties: false`` and lists
  every one of its properties in ``required``; an optional field is a required field that may be null
  (``"type": ["string", "null"]`` or ``anyOf`` with ``{"type": "null"}``);
- every schema names its ``type`` (or is an ``anyOf`` or a ``$ref``); an array names its ``items``;
- supported constraints: ``pattern`` and ``format`` (a fixed list of formats) for strings; ``minimum``,
  ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum`` and ``multipleOf`` for numbers; ``minItems``
  and ``maxItems`` for arrays; ``enum``, ``const``, ``anyOf``, ``$defs`` and local ``$ref``;
- not permitted: ``default``, ``minLength``/``maxLength``, ``oneOf``, ``allOf``, ``not``,
  ``if``/``then``/``else``, the dependent and pattern keywords of objects, and the contains/unique
  keywords of arrays (listed in :data:`UNSUPPORTED_KEYWORDS`).

:func:`strict_schema` turns a pydantic model's schema into a strict one; :func:`strict_schema_problems`
lists every violation with its JSON path, so a schema is checked here (and by the loopback test server)
before a paid request is refused for it. Constraints that strict mode cannot carry (a string's
``minLength``) are dropped from the schema sent; the pydantic output model still enforces them when the
reply is parsed. :func:`omit_added_nulls` undoes, on a reply, the one change that would otherwise reach
the output model: a null in a field that is nullable only because strict mode made it required.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel

JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)

# keyword -> why strict mode refuses it (the reason shown in a problem).
UNSUPPORTED_KEYWORDS: dict[str, str] = {
    "default": "defaults are not supported",
    "minLength": "string length bounds are not supported",
    "maxLength": "string length bounds are not supported",
    "oneOf": "use anyOf",
    "allOf": "composition is not supported",
    "not": "composition is not supported",
    "if": "conditional schemas are not supported",
    "then": "conditional schemas are not supported",
    "else": "conditional schemas are not supported",
    "dependentRequired": "dependent keywords are not supported",
    "dependentSchemas": "dependent keywords are not supported",
    "patternProperties": "objects must list their properties",
    "unevaluatedProperties": "objects must list their properties",
    "propertyNames": "objects must list their properties",
    "minProperties": "object size bounds are not supported",
    "maxProperties": "object size bounds are not supported",
    "unevaluatedItems": "array keyword not supported",
    "prefixItems": "array keyword not supported",
    "contains": "array keyword not supported",
    "minContains": "array keyword not supported",
    "maxContains": "array keyword not supported",
    "uniqueItems": "array keyword not supported",
}
# Unsupported keywords that only narrow the accepted values: dropped when a schema is made strict
# (pydantic still enforces them on the parsed reply). ``title`` is allowed but only adds prompt noise.
_DROPPABLE = frozenset(
    {"default", "title", "minLength", "maxLength", "minProperties", "maxProperties", "uniqueItems"}
)
_NULL = {"type": "null"}


class StrictSchemaError(ValueError):
    """A schema with a construct strict mode cannot express (an open map, a conditional ...)."""


# ---- making a schema strict


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A strict-mode copy of ``schema`` (e.g. a pydantic ``model_json_schema()``), recursively:
    objects closed, every property required, formerly optional properties nullable, ``oneOf`` as
    ``anyOf``, a one-schema ``allOf`` inlined, and droppable keywords (``default``, ``title``,
    ``minLength`` ...) removed. Raises :class:`StrictSchemaError` for what cannot be made strict."""
    return _strict_node(schema, "$")


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A pydantic model class's JSON schema (a copy of its own: the caller may change it). Pydantic builds
    the schema anew at each call, about 2 ms, and every request and reply of a task needs it."""
    return copy.deepcopy(_model_schema(model))


def strict_model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The strict schema of a pydantic model class: what a request sends as its ``json_schema``."""
    return copy.deepcopy(_strict_model_schema(model))


@functools.cache
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


@functools.cache
def _strict_model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return strict_schema(_model_schema(model))


def _strict_node(node: Any, path: str) -> dict[str, Any]:
    if not isinstance(node, Mapping):
        raise StrictSchemaError(f"{path}: expected a schema object, got {node!r}")
    node = _without_composition(node, path)
    blocked = sorted(key for key in node if key in UNSUPPORTED_KEYWORDS and key not in _DROPPABLE)
    if blocked:
        raise StrictSchemaError(f"{path}: {blocked} cannot be expressed in strict mode")
    strict = {key: value for key, value in node.items() if key not in _DROPPABLE}
    if "properties" in strict or strict.get("type") == "object":
        strict = _closed_object(strict, path)
    if "items" in strict:
        strict["items"] = _strict_node(strict["items"], f"{path}.items")
    if "anyOf" in strict:
        strict["anyOf"] = [_strict_node(sub, f"{path}.anyOf[{i}]") for i, sub in enumerate(strict["anyOf"])]
    for defs in ("$defs", "definitions"):
        if defs in strict:
            strict[defs] = {
                name: _strict_node(sub, f"{path}.{defs}.{name}") for name, sub in strict[defs].items()
            }
    return strict


def _without_composition(node: Mapping[str, Any], path: str) -> dict[str, Any]:
    """``oneOf`` as ``anyOf`` (strict decoding emits one branch anyway) and a one-schema ``allOf``
    (how some generators attach a description to a ``$ref``) merged into its parent."""
    flat = dict(node)
    if "oneOf" in flat:
        if "anyOf" in flat:
            raise StrictSchemaError(f"{path}: both oneOf and anyOf")
        flat["anyOf"] = flat.pop("oneOf")
    if "allOf" in flat and len(flat["allOf"]) == 1:
        [only] = flat.pop("allOf")
        flat = {**only, **flat}
    return flat


def _closed_object(node: dict[str, Any], path: str) -> dict[str, Any]:
    """An object node closed to extra keys, with every property required and the optional ones nullable."""
    if node.get("additionalProperties", False) is not False:
        raise StrictSchemaError(f"{path}: an object with open additionalProperties (a map) cannot be strict")
    required = set(node.get("required", []))
    properties = {}
    for name, sub in node.get("properties", {}).items():
        strict_sub = _strict_node(sub, f"{path}.properties.{name}")
        properties[name] = strict_sub if name in required else nullable(strict_sub)
    return {
        **node,
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def accepts_null(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` visibly accepts null (its type, enum, const or an anyOf branch)."""
    types = schema.get("type")
    if types == "null" or (isinstance(types, list) and "null" in types):
        return "enum" not in schema or None in schema["enum"]
    if "const" in schema:
        return schema["const"] is None
    if "anyOf" in schema:
        return any(isinstance(sub, Mapping) and accepts_null(sub) for sub in schema["anyOf"])
    return types is None and "enum" in schema and None in schema["enum"]


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` widened to also accept null: its type list when it is a plain typed schema, else an
    ``anyOf`` branch (an enum, const or ``$ref`` cannot take null through its type alone)."""
    if accepts_null(schema):
        return schema
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], _NULL]}
    types = schema.get("type")
    if types is not None and not {"enum", "const", "$ref"} & schema.keys():
        listed = types if isinstance(types, list) else [types]
        return {**schema, "type": [*listed, "null"]}
    return {"anyOf": [schema, _NULL]}


# ---- checking a schema


def strict_schema_problems(schema: Any) -> list[str]:
    """Every reason the hosted API would refuse ``schema`` in strict mode, as ``"<JSON path>: <why>"``;
    empty when the schema is valid."""
    if not isinstance(schema, Mapping):
        return [f"$: the schema must be a JSON object, got {type(schema).__name__}"]
    problems = []
    if "anyOf" in schema:
        problems.append("$: the root must be an object, not anyOf")
    elif schema.get("type") != "object":
        problems.append(f"$: the root must have type 'object', got {schema.get('type')!r}")
    problems += [
        problem for path, node in _nodes(schema, "$") for problem in _node_problems(node, path, schema)
    ]
    return problems


def _nodes(node: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every subschema in ``node`` (itself included) with its JSON path, depth first."""
    yield path, node
    if not isinstance(node, Mapping):
        return
    for keyword in ("properties", "$defs", "definitions"):
        if isinstance(node.get(keyword), Mapping):
            for name, sub in node[keyword].items():
                yield from _nodes(sub, f"{path}.{keyword}.{name}")
    if "items" in node:
        yield from _nodes(node["items"], f"{path}.items")
    for keyword in ("anyOf", "oneOf", "allOf"):
        if isinstance(node.get(keyword), list):
            for index, sub in enumerate(node[keyword]):
                yield from _nodes(sub, f"{path}.{keyword}[{index}]")


def _node_problems(node: Any, path: str, root: Mapping[str, Any]) -> list[str]:
    """What is wrong with one subschema on its own (its children are checked as nodes of their own)."""
    if not isinstance(node, Mapping):
        return [f"{path}: a schema must be a JSON object, got {node!r}"]
    problems = [
        f"{path}: '{keyword}' is not permitted in strict mode ({why})"
        for keyword, why in UNSUPPORTED_KEYWORDS.items()
        if keyword in node
    ]
    for check in _CHECKS:
        problems += check(node, path, root)
    return problems


def _type_problems(node: Mapping[str, Any], path: str, root: Mapping[str, Any]) -> list[str]:
    if "$ref" in node or "anyOf" in node:
        return []
    types = node.get("type")
    if types is None:
        return [f"{path}: a schema must name its 'type' (or be an anyOf or a $ref)"]
    listed = types if isinstance(types, list) else [types]
    unknown = [name for name in listed if name not in JSON_TYPES]
    return [f"{path}: unknown type {name!r}" for name in unknown]


def _object_problems(node: Mapping[str, Any], path: str, root: Mapping[str, Any]) -> list[str]:
    if not _has_type(node, "object") and "properties" not in node:
        return []
    problems = []
    if node.get("additionalProperties") is not False:
        problems.append(f"{path}: 'additionalProperties' must be false")
    properties = list(node.get("properties", {}))
    required = node.get("required", [])
    missing = [name for name in properties if name not in required]
    if missing:
        problems.append(f"{path}: every property must be required; not in 'required': {missing}")
    unknown = [name for name in required if name not in properties]
    if unknown:
        problems.append(f"{path}: 'required' names properties that do not exist: {unknown}")
    return problems


def _array_problems(node: Mapping[str, Any], path: str, root: Mapping[str, Any]) -> list[str]:
    if _has_type(node, "array") and "items" not in node:
        return [f"{path}: an array must define its 'items'"]
    return []


def _format_problems(node: Mapping[str, Any], path: str, root: Mapping[str, Any]) -> list[str]:
    if "format" in node and node["format"] not in STRING_FORMATS:
        return [f"{path}: format {node['format']!r} is not supported (supported: {sorted(STRING_FORMATS)})"]
    return []


def _ref_problems(node: Mapping[str, Any], path: str, root: Mapping[str, Any]) -> list[str]:
    if "$ref" not in node:
        return []
    ref = node["$ref"]
    if not isinstance(ref, str) or not ref.startswith("#"):
        return [f"{path}: $ref {ref!r} must point inside the schema (#/...)"]
    return [] if resolve_ref(ref, root) is not None else [f"{path}: $ref {ref!r} points to nothing"]


def resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    """What a local ``$ref`` (``#/$defs/Question``) points to in ``root``; None when it points nowhere."""
    target: Any = root
    for part in filter(None, ref.removeprefix("#").split("/")):
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, Mapping) or key not in target:
            return None
        target = target[key]
    return target


def _has_type(node: Mapping[str, Any], name: str) -> bool:
    types = node.get("type")
    return types == name or (isinstance(types, list) and name in types)


_CHECKS: tuple[Callable[[Mapping[str, Any], str, Mapping[str, Any]], list[str]], ...] = (
    _type_problems,
    _object_problems,
    _array_problems,
    _format_problems,
    _ref_problems,
)


# ---- reading a reply back into the original model


def omit_added_nulls(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` (a reply to the strict form of ``schema``) with every null removed whose property was
    optional in ``schema`` and does not accept null there, so the output model applies its own default
    (``parent_ids: null`` becomes the model's ``[]``); a null the original schema allows stays null."""
    return _omit(value, schema, schema)


def _omit(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    schema = _resolved(schema, root)
    if isinstance(value, dict) and isinstance(schema.get("properties"), Mapping):
        required = set(schema.get("required", []))
        properties = schema["properties"]
        return {
            key: _omit(item, properties.get(key, {}), root)
            for key, item in value.items()
            if not (
                item is None
                and key in properties
                and key not in required
                and not _nullable_in(properties[key], root)
            )
        }
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_omit(item, schema["items"], root) for item in value]
    return value


def _resolved(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with local ``$ref`` followed to its target; {} when that is not a schema object."""
    seen: set[str] = set()
    while isinstance(schema, Mapping) and isinstance(ref := schema.get("$ref"), str) and ref not in seen:
        seen.add(ref)
        schema = resolve_ref(ref, root)
    return schema if isinstance(schema, Mapping) else {}


def _nullable_in(schema: Any, root: Mapping[str, Any]) -> bool:
    resolved = _resolved(schema, root)
    return accepts_null(resolved) or resolved == {}
