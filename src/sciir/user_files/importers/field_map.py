"""Which field of an input holds each thing an importer reads (its *roles*: id, prompt, statements ...),
and the values read through it.

Each importer names its roles with the spellings it knows (``FieldMap``); a user's map (``--field
prompt=question`` on the command line, or a YAML file of ``role: field`` lines given as ``--fields``)
replaces a role's spellings with the one field named. An error about a missing field names the file,
the item, the fields the item does have, and the option that maps one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sciir.user_files.importers.common import ImportFileError, Record, id_text
from sciir.user_files.table_files import is_missing

SHOWN_FIELDS = 20


@dataclass(frozen=True)
class FieldMap:
    """Role -> the fields tried for it, in order; ``mapped``: the roles the user's map names."""

    spellings: Mapping[str, tuple[str, ...]]
    mapped: frozenset[str] = frozenset()

    @property
    def roles(self) -> list[str]:
        return list(self.spellings)

    def names(self, role: str) -> tuple[str, ...]:
        return self.spellings[role]

    def with_user_map(self, user_map: Mapping[str, str], what: str) -> FieldMap:
        """This map with each role of ``user_map`` read from the field it names; an error for a role
        ``what`` (the importer's input, e.g. "statements file") does not have."""
        unknown = [role for role in user_map if role not in self.spellings]
        if unknown:
            raise ImportFileError(
                f"field map: unknown role {', '.join(map(repr, unknown))} (the roles of a {what}: "
                f"{', '.join(self.roles)})"
            )
        spellings = {
            role: (user_map[role],) if role in user_map else names for role, names in self.spellings.items()
        }
        return FieldMap(spellings, self.mapped | frozenset(user_map))

    def described(self, role: str) -> str:
        """``'prompt' (or 'caption', 'text')``, or ``'question' (mapped to prompt)`` for a mapped role."""
        names = self.spellings[role]
        if role in self.mapped:
            return f"{names[0]!r} (mapped to {role})"
        return repr(names[0]) + (f" (or {', '.join(map(repr, names[1:]))})" if len(names) > 1 else "")


# ---- the user's map


def field_option(text: str) -> tuple[str, str]:
    """``role=field`` of a ``--field`` option as (role, field); ValueError when it is not of that form."""
    role, separator, name = text.partition("=")
    if not separator or not role.strip() or not name.strip():
        raise ValueError(f"expected ROLE=FIELD (e.g. prompt=question), got {text!r}")
    return role.strip(), name.strip()


def read_field_map(path: Path) -> dict[str, str]:
    """The ``role: field`` lines of a YAML field map file; an error naming the file and the bad entry."""
    label = f"field map file {path}"
    if not path.is_file():
        raise ImportFileError(f"{label} does not exist")
    try:
        content = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ImportFileError(f"{label}: not YAML ({error})") from None
    if not isinstance(content, dict):
        raise ImportFileError(f"{label}: expected lines of 'role: field' (e.g. 'prompt: question')")
    bad = [role for role, name in content.items() if not isinstance(name, str | int) or not str(name).strip()]
    if bad:
        raise ImportFileError(f"{label}, {bad[0]!r}: expected the name of one field of the input")
    return {str(role): str(name).strip() for role, name in content.items()}


# ---- values through the map


def first_field(record: Record, fields: FieldMap, role: str) -> tuple[str, Any] | None:
    """The first field of ``role`` that the record fills, with its value."""
    for name in fields.names(role):
        value = record.fields.get(name)
        if not is_missing(value):
            return name, value
    return None


def field_name(record: Record, fields: FieldMap, role: str) -> str:
    """The field ``role`` is read from in this record (its first spelling when it fills none)."""
    found = first_field(record, fields, role)
    return found[0] if found else fields.names(role)[0]


def require_fields(record: Record, fields: FieldMap, roles: Sequence[str]) -> None:
    """An error when the record holds no field of some of ``roles`` (even an empty one): it names them,
    lists the fields the record does have and shows the option that maps each."""
    missing = [role for role in roles if not any(name in record.fields for name in fields.names(role))]
    if not missing:
        return
    filled = [str(name) for name, value in record.fields.items() if not is_missing(value)]
    shown = ", ".join(filled[:SHOWN_FIELDS]) + (", ..." if len(filled) > SHOWN_FIELDS else "")
    options = " ".join(f"--field {role}=<name>" for role in missing)
    raise ImportFileError(
        f"{record.where}: {' and '.join(f'no field {fields.described(role)}' for role in missing)}; "
        f"{record.name} has fields: {shown or 'none'}; map {'one' if len(missing) == 1 else 'them'} with "
        f"{options}"
    )


def optional_field_text(record: Record, fields: FieldMap, role: str) -> str | None:
    """The text of the first filled field of ``role``; None when none is; an error for a list or object."""
    found = first_field(record, fields, role)
    if found is None:
        return None
    name, value = found
    if isinstance(value, dict | list):
        raise ImportFileError(
            f"{record.where}, field {name!r}: expected a text, found {type(value).__name__}"
        )
    return id_text(value)


def required_field_text(record: Record, fields: FieldMap, role: str) -> str:
    """As ``optional_field_text``; an error naming the field when it is empty, or as ``require_fields``
    when the record has none."""
    text = optional_field_text(record, fields, role)
    if text is None:
        raise missing_field(record, fields, role)
    return text


def missing_field(record: Record, fields: FieldMap, role: str) -> ImportFileError:
    """The error for a record that fills no field of ``role``: as ``require_fields`` when it holds none,
    else naming the empty field."""
    require_fields(record, fields, [role])
    held = next(name for name in fields.names(role) if name in record.fields)
    return ImportFileError(f"{record.where}: field {held!r} is empty")


def structured_field(record: Record, fields: FieldMap, role: str) -> tuple[str, Any] | None:
    """As ``first_field``, a list or object as JSON values: a parquet cell's arrays as lists, a CSV cell's
    JSON text (``["a", "b"]``, ``{"A": "x"}``) parsed; None when the record fills no field of ``role``."""
    found = first_field(record, fields, role)
    if found is None:
        return None
    name, value = found
    return name, _json_values(f"{record.where}, field {name!r}", value)


def _json_values(where: str, value: Any) -> Any:
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()
    if isinstance(value, str) and value.strip()[:1] + value.strip()[-1:] in ("[]", "{}"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ImportFileError(f"{where}: not JSON ({error.msg} at column {error.colno})") from None
    if isinstance(value, dict):
        return {key: _json_values(where, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_values(where, item) for item in value]
    return value


def agreed_text(records: Sequence[Record], fields: FieldMap, role: str) -> str:
    """A field that every record of one sample repeats (e.g. its caption); an error when they differ."""
    values = {record.where: required_field_text(record, fields, role) for record in records}
    first_where, first = next(iter(values.items()))
    for where, value in values.items():
        if value != first:
            name = field_name(records[0], fields, role)
            raise ImportFileError(
                f"{where}, field {name!r}: {value[:60]!r} differs from {first[:60]!r} at {first_where}; "
                "the rows of one item must agree"
            )
    return first
