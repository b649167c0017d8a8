"""Parsing and validating a model's reply: JSON objects, checked against the request's JSON schema.

Shared by every vision-language backend, so a reply is judged the same way whoever served it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

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


_STRICT = ConfigDict(strict=True)
# JSON schema keyword -> pydantic Field argument, per JSON type.
_NUMBER_BOUNDS = {"minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt"}
_STRING_BOUNDS = {"minLength": "min_length", "maxLength": "max_length", "pattern": "pattern"}
_ARRAY_BOUNDS = {"minItems": "min_length", "maxItems": "max_length"}


class UnsupportedSchema(ValueError):
    """A request's JSON schema uses a construct the reply validator cannot express."""


def _json_equal(left: Any, right: Any) -> bool:
    """Equality as JSON means it: ``true`` is not ``1``, while ``1`` is ``1.0``."""
    numbers = [isinstance(value, int | float) and not isinstance(value, bool) for value in (left, right)]
    if all(numbers):
        return left == right
    return type(left) is type(right) and left == right


def _one_of(options: list[Any]) -> Callable[[Any], Any]:
    """A validator accepting exactly the JSON values in ``options`` (a schema's ``enum``)."""

    def check(value: Any) -> Any:
        if not any(_json_equal(value, option) for option in options):
            raise ValueError(f"{value!r} is not one of {options}")
        return value

    return check


def _constraints(schema: Mapping[str, Any], names: Mapping[str, str]) -> Any:
    """A pydantic ``Field`` carrying the schema keywords in ``names`` (JSON keyword -> Field argument)."""
    return Field(**{argument: schema[keyword] for keyword, argument in names.items() if keyword in schema})


class _SchemaTranslator:
    """Turns a JSON schema into a strict pydantic type: an object becomes a model, an enum a validator.

    Covers what structured-output schemas use (OpenAI strict mode, vLLM guided decoding, pydantic's
    ``model_json_schema``): ``type`` (one or a list), ``enum``, ``const``, ``properties``, ``required``,
    ``additionalProperties: false``, ``items``, ``minItems``/``maxItems``, ``minLength``/``maxLength``/
    ``pattern``, ``minimum``/``maximum`` (and exclusive), ``anyOf``/``oneOf`` (both as "any of"), a
    single-schema ``allOf`` and local ``$ref``. Annotations (``title``, ``description``, ``default``) and
    formats are ignored; an ``additionalProperties`` schema lets extra properties through unchecked.
    """

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self._refs: dict[str, Any] = {}
        self._resolving: set[str] = set()
        self._types: dict[str, Callable[[Mapping[str, Any]], Any]] = {
            "object": self._object,
            "array": self._array,
            "string": lambda s: Annotated[str, _constraints(s, _STRING_BOUNDS)],
            "integer": lambda s: Annotated[int, _constraints(s, _NUMBER_BOUNDS)],
            "number": lambda s: Annotated[float, _constraints(s, _NUMBER_BOUNDS)],
            "boolean": lambda s: bool,
            "null": lambda s: None,
        }

    def annotation(self, schema: Any) -> Any:
        """The pydantic type that accepts what ``schema`` accepts."""
        if schema is True or schema == {}:
            return Any
        if schema is False:
            raise UnsupportedSchema("a 'false' schema accepts no value")
        if "$ref" in schema:
            return self._resolve(schema["$ref"])
        if "enum" in schema or "const" in schema:
            options = schema["enum"] if "enum" in schema else [schema["const"]]
            return Annotated[Any, AfterValidator(_one_of(options))]
        alternatives = schema.get("anyOf", schema.get("oneOf"))
        if alternatives is not None:
            return Union[tuple(self.annotation(option) for option in alternatives)]  # noqa: UP007
        if "allOf" in schema:
            if len(schema["allOf"]) != 1:
                raise UnsupportedSchema("allOf with more than one schema")
            return self.annotation(schema["allOf"][0])
        names = schema.get("type")
        if names is None:
            return Any
        if isinstance(names, str):
            return self._typed(names, schema)
        return Union[tuple(self._typed(name, schema) for name in names)]  # noqa: UP007

    def _typed(self, name: str, schema: Mapping[str, Any]) -> Any:
        if name not in self._types:
            raise UnsupportedSchema(f"unknown JSON type {name!r}")
        return self._types[name](schema)

    def _resolve(self, ref: str) -> Any:
        """The type of the schema a local ``$ref`` such as ``#/$defs/Question`` points to, built once."""
        if ref in self._refs:
            return self._refs[ref]
        if not ref.startswith("#") or ref in self._resolving:
            raise UnsupportedSchema(f"$ref {ref!r} is not local (#/...) or refers to itself")
        target: Any = self.root
        for part in filter(None, ref[1:].split("/")):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        self._resolving.add(ref)
        self._refs[ref] = self.annotation(target)
        self._resolving.discard(ref)
        return self._refs[ref]

    def _array(self, schema: Mapping[str, Any]) -> Any:
        items = self.annotation(schema.get("items", True))
        return Annotated[list[items], _constraints(schema, _ARRAY_BOUNDS)]  # type: ignore[valid-type]

    def _object(self, schema: Mapping[str, Any]) -> Any:
        """A model for an object schema; fields are named by position and aliased, so any key works."""
        properties = dict(schema.get("properties", {}))
        required = schema.get("required", [])
        properties.update({key: True for key in required if key not in properties})
        fields = {
            f"field_{number}": (self.annotation(sub), Field(... if key in required else None, alias=key))
            for number, (key, sub) in enumerate(properties.items())
        }
        extra = "forbid" if schema.get("additionalProperties", True) is False else "allow"
        config = ConfigDict(strict=True, extra=extra)
        return create_model(str(schema.get("title", "Reply")), __config__=config, **fields)


@functools.lru_cache(maxsize=64)
def _validator_for(schema_json: str) -> TypeAdapter[Any]:
    schema = json.loads(schema_json)
    annotation = _SchemaTranslator(schema).annotation(schema)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return TypeAdapter(annotation)  # a model carries its own strict config
    return TypeAdapter(annotation, config=_STRICT)


def reply_validator(schema: Mapping[str, Any]) -> TypeAdapter[Any]:
    """A strict pydantic validator for values that must fit ``schema``, built once per distinct schema.

    Raises :class:`UnsupportedSchema` for a schema it cannot express.
    """
    return _validator_for(json.dumps(schema, sort_keys=True))


def schema_problems(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Every place where ``value`` does not fit ``schema``, as ``"<path>: <what is wrong>"``."""
    try:
        reply_validator(schema).validate_python(value)
    except ValidationError as err:
        return [f"{'.'.join(map(str, e['loc'])) or '(top level)'}: {e['msg']}" for e in err.errors()]
    return []


def parse_reply(text: str, schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The JSON object in a reply's ``text``, checked against ``schema`` when the request had one."""
    value = parse_json_object(text)
    problems = schema_problems(value, schema) if schema is not None else []
    if problems:
        shown = "; ".join(problems[:_PROBLEMS_SHOWN])
        more = f" (and {len(problems) - _PROBLEMS_SHOWN} more)" if len(problems) > _PROBLEMS_SHOWN else ""
        raise InvalidReply(f"does not match its JSON schema: {shown}{more}", raw=text)
    return value
