"""Parsing and validating a model's reply: JSON objects, checked against the request's JSON schema.

Shared by every vision-language backend, so a reply is judged the same way whoever served it. Replies are
checked against draft 2020-12 (every keyword with its meaning: ``oneOf`` is exactly one, ``true`` is not
``1``; formats are annotations only, as in most structured-output servers): by ``jsonschema-rs`` for
speed, and by ``jsonschema``, the reference implementation, for the message when a reply does not fit.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

_FENCED = re.compile(r"^```[\w-]*[ \t]*\n?(.*?)\n?```$", re.DOTALL)
# Reasoning models served without a reasoning parser put their thinking before the answer.
_THINKING = re.compile(r"^<think>.*?</think>", re.DOTALL)
_PROBLEMS_SHOWN = 5


class InvalidReply(ValueError):
    """A reply that does not hold the JSON object asked for; ``raw`` is what came back."""

    def __init__(self, reason: str, raw: str | None) -> None:
        super().__init__(reason)
        self.raw = raw


def strip_wrappers(text: str) -> str:
    """``text`` without a leading ``<think>`` block and without Markdown code fences around it."""
    cleaned = _THINKING.sub("", text.strip()).strip()
    fenced = _FENCED.match(cleaned)
    return fenced.group(1).strip() if fenced else cleaned


def parse_json_object(text: str, required: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON object in ``text`` (fences stripped), checked to hold every ``required`` key."""
    try:
        value = json.loads(strip_wrappers(text))
    except json.JSONDecodeError as err:
        raise InvalidReply(f"not JSON: {err}", raw=text) from None
    if not isinstance(value, dict):
        raise InvalidReply(f"expected a JSON object, got {type(value).__name__}", raw=text)
    missing = [key for key in required if key not in value]
    if missing:
        raise InvalidReply(f"missing required keys {missing}", raw=text)
    return value


class UnsupportedSchema(ValueError):
    """A request's JSON schema that replies cannot be checked against (not a valid JSON schema, or a
    reference that cannot be resolved locally)."""


@dataclass(frozen=True)
class ReplyValidator:
    """One schema's validators: jsonschema-rs answers "valid?" (about 2 us for a judge reply, against 0.4 ms
    in Python, which made the judge node CPU-bound), jsonschema says what is wrong when it is not."""

    fast: Any  # jsonschema_rs.Validator
    explaining: Draft202012Validator

    def iter_errors(self, value: Any) -> Iterator[ValidationError]:
        return iter(()) if self.fast.is_valid(value) else self.explaining.iter_errors(value)


# Validators kept: a judge request's schema names its sample's question ids, so a run has one per sample;
# checking a schema against the meta-schema (about 3 ms) then happens once per sample, not per image.
@functools.lru_cache(maxsize=4096)
def _validator_for(schema_json: str) -> ReplyValidator:
    schema = json.loads(schema_json)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as err:
        where = "/".join(map(str, err.path)) or "(top level)"
        raise UnsupportedSchema(f"not a valid JSON schema at {where}: {err.message}") from None
    _check_references(schema)  # every $ref is local, so neither library fetches anything
    fast = jsonschema_rs.Draft202012Validator(schema, validate_formats=False)
    return ReplyValidator(fast, Draft202012Validator(schema))


def _references(schema: Any) -> Iterator[str]:
    """Every ``$ref`` in ``schema``, at any depth."""
    if isinstance(schema, dict):
        if isinstance(schema.get("$ref"), str):
            yield schema["$ref"]
        for value in schema.values():
            yield from _references(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _references(value)


def _check_references(schema: Mapping[str, Any]) -> None:
    """Refuse, before any request is sent, a ``$ref`` that leads outside the schema (jsonschema would not
    fetch it: no registry is given) or round a loop of references with nothing between."""
    resolver = Registry().with_resource("", DRAFT202012.create_resource(schema)).resolver()
    for ref in set(_references(schema)):
        seen: set[str] = set()
        while ref not in seen:
            seen.add(ref)
            try:
                target = resolver.lookup(ref).contents
            except Unresolvable as err:
                raise UnsupportedSchema(
                    f"$ref {ref!r} cannot be resolved within the schema ({err})"
                ) from None
            if not (isinstance(target, dict) and isinstance(target.get("$ref"), str)):
                break
            ref = target["$ref"]
        else:
            raise UnsupportedSchema(f"$ref {ref!r} refers to itself")


def reply_validator(schema: Mapping[str, Any]) -> ReplyValidator:
    """A JSON Schema (draft 2020-12) validator for values that must fit ``schema``, built once per distinct
    schema. Raises :class:`UnsupportedSchema` for a schema that is not valid."""
    return _validator_for(json.dumps(schema, sort_keys=True))


def _joined(path: Iterable[Any]) -> str:
    return ".".join(map(str, path)) or "(top level)"


def _problems(error: ValidationError) -> list[tuple[list[str], str]]:
    """(path, what is wrong) for one error; a missing or an unexpected property is named in the path."""
    path = [str(part) for part in error.absolute_path]
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [key for key in error.validator_value if error.message.startswith(f"{key!r} ")]
        return [([*path, key], "a required property is missing") for key in missing[:1]] or [
            (path, error.message)
        ]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set((error.schema or {}).get("properties", {}))
        extras = sorted(key for key in error.instance if key not in allowed)
        return [([*path, key], "not a property of this object") for key in extras] or [(path, error.message)]
    return [(path, error.message)]


def schema_problems(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Every place where ``value`` does not fit ``schema``, as ``"<path>: <what is wrong>"``, in path order
    (:class:`UnsupportedSchema` for a schema replies cannot be checked against)."""
    found = [problem for error in reply_validator(schema).iter_errors(value) for problem in _problems(error)]
    return [f"{_joined(path)}: {message}" for path, message in sorted(found)]


def parse_reply(text: str, schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The JSON object in a reply's ``text``, checked against ``schema`` when the request had one."""
    value = parse_json_object(text)
    problems = schema_problems(value, schema) if schema is not None else []
    if problems:
        shown = "; ".join(problems[:_PROBLEMS_SHOWN])
        more = f" (and {len(problems) - _PROBLEMS_SHOWN} more)" if len(problems) > _PROBLEMS_SHOWN else ""
        raise InvalidReply(f"does not match its JSON schema: {shown}{more}", raw=text)
    return value
