"""JSON request bodies whose large string values (base64 images) are spliced in as their own bytes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class JSONText:
    """A JSON string value given as the ASCII bytes of its content, spliced into a request body as it is
    (``json_body``): a megabyte of base64 is then neither scanned for escapes nor copied through a str.
    Only for content that needs no JSON escape (no quote, backslash or control character), such as a
    base64 data URL."""

    __slots__ = ("content",)

    def __init__(self, content: bytes) -> None:
        self.content = content

    def __str__(self) -> str:  # what a cache key or a log line sees
        return self.content.decode("ascii")


_SPLICE = "\x00sciir-json-text\x00"  # a string no caller writes; json escapes it as \u0000...
_SPLICED = json.dumps(_SPLICE)


def json_body(payload: Mapping[str, Any]) -> bytes:
    """``payload`` as a JSON request body, each ``JSONText`` value spliced in as its own bytes."""
    texts: list[bytes] = []

    def splice(value: Any) -> str:
        if not isinstance(value, JSONText):
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        texts.append(value.content)
        return _SPLICE

    head, *rest = json.dumps(payload, default=splice).split(_SPLICED)
    if len(rest) != len(texts):  # a caller's own string held the marker: never send a wrong body
        raise ValueError("the payload holds the JSONText splice marker in one of its strings")
    pieces = [head.encode()]
    for text, tail in zip(texts, rest, strict=True):
        pieces += [b'"', text, b'"', tail.encode()]
    return b"".join(pieces)
