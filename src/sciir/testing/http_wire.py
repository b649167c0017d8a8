"""The HTTP/1.1 the loopback fakes speak: a request read from an asyncio stream, a reply with the ways of
sending it badly (cut short, never sent, late), JSON and error bodies. Only what OpenAI clients use:
Content-Length bodies and keep-alive."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any


@dataclass(frozen=True)
class RawRequest:
    """One request as read from the connection."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


@dataclass(frozen=True)
class ServerReply:
    """What to send back, including the ways of not sending it properly."""

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    send_fraction: float = 1.0  # below 1: the body stops part way and the connection closes
    silent: bool = False  # close the connection without replying
    delay_s: float = 0.0  # wait this long first


def json_reply(status: int, payload: Any, headers: tuple[tuple[str, str], ...] = ()) -> ServerReply:
    return ServerReply(status, json.dumps(payload).encode(), (("Content-Type", "application/json"), *headers))


def error_reply(status: int, message: str, headers: tuple[tuple[str, str], ...] = ()) -> ServerReply:
    """An OpenAI-style error body: message, type and code."""
    error = {"message": message, "type": HTTPStatus(status).phrase.lower().replace(" ", "_"), "code": status}
    return json_reply(status, {"error": error}, headers)


async def read_request(reader: asyncio.StreamReader) -> RawRequest | None:
    """The next request on a connection; None once the client has closed it."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    request_line, *header_lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    method, target, version = request_line.split(" ", 2)
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    return RawRequest(method, target.split("?", 1)[0], headers, body, keep_alive)


def encode_reply(reply: ServerReply, keep_alive: bool) -> bytes:
    """Status line, headers and (all or part of) the body of ``reply``."""
    lines = [
        f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}",
        f"Content-Length: {len(reply.body)}",
    ]
    lines += [f"{name}: {value}" for name, value in reply.headers]
    lines.append(f"Connection: {'keep-alive' if keep_alive else 'close'}")
    body = reply.body[: int(len(reply.body) * reply.send_fraction)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
