"""A real OpenAI-compatible images server on loopback, with scripted answers and fault injection.

Serves ``POST /v1/images/generations`` from a thread per connection (``http.server``): image requests
are few and slow in real life, so tests need correctness here, not throughput. Each request is answered
by a responder that returns image bytes for the request's JSON body, or by the fault scripted for it.

    with FakeImagesServer(script=["429", None]) as server:
        server.base_url    # "http://127.0.0.1:PORT/v1"
        server.requests    # what arrived: body, headers, arrival time, fault injected
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import io
import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from http.server import BaseHTTPRequestHandler
from typing import Any

from PIL import Image

from sciir.testing.fault_plan import FaultPlan
from sciir.testing.http_wire import ServerReply, json_reply
from sciir.testing.loopback import QuietHandler, ThreadedLoopbackServer

ImageResponder = Callable[[dict[str, Any]], bytes]

IMAGES_ROUTE = "/v1/images/generations"
# What the fake server bills per image, as gpt-image models bill a low-quality square.
IMAGE_TOKENS = 272


class ImagesFault(StrEnum):
    """A way for the server to misbehave on one images request."""

    RATE_LIMITED = "429"  # with a Retry-After header
    SERVER_ERROR = "500"
    BAD_REQUEST = "400"
    MALFORMED_JSON = "malformed_json"  # HTTP 200 whose body is not JSON
    NOT_AN_IMAGE = "not_an_image"  # HTTP 200, a well-formed reply whose b64_json decodes to no image
    NO_IMAGE = "no_image"  # HTTP 200, a reply with an empty data list


def requested_size(body: dict[str, Any]) -> tuple[int, int]:
    """(width, height) from the request's ``size`` ("WxH"); 1024x1024 when absent, as OpenAI defaults."""
    width, _, height = str(body.get("size") or "1024x1024").partition("x")
    return int(width), int(height)


def solid_png(body: dict[str, Any]) -> bytes:
    """A PNG of the requested size in one colour drawn from the prompt and seed (same request, same image)."""
    digest = hashlib.sha256(f"{body.get('prompt')}|{body.get('seed')}".encode()).digest()
    buffer = io.BytesIO()
    Image.new("RGB", requested_size(body), tuple(digest[:3])).save(buffer, format="PNG")
    return buffer.getvalue()


@dataclass(frozen=True)
class ReceivedRequest:
    """One images request as the server received it."""

    index: int
    received_at: float  # time.monotonic() on arrival
    headers: dict[str, str]  # names in lower case
    body: dict[str, Any] | None  # None when the body was not a JSON object
    fault: ImagesFault | None


def _error_reply(status: int, message: str, *headers: tuple[str, str]) -> ServerReply:
    return json_reply(status, {"error": {"message": message, "code": status}}, headers)


def _images_reply(body: dict[str, Any], image: bytes) -> ServerReply:
    """An images response around ``image``, with gpt-image-style usage."""
    prompt_tokens = len(str(body.get("prompt", "")).split())
    return json_reply(
        200,
        {
            "created": int(time.time()),
            "data": [{"b64_json": base64.b64encode(image).decode("ascii")}],
            "usage": {
                "input_tokens": prompt_tokens,
                "output_tokens": IMAGE_TOKENS,
                "total_tokens": prompt_tokens + IMAGE_TOKENS,
            },
        },
    )


class FakeImagesServer(ThreadedLoopbackServer):
    """``POST /v1/images/generations`` on loopback, in a background thread.

    ``script[i]`` is the fault for the i-th images request (None or past the end: answer normally with
    ``responder(body)``). When the responder raises, the server answers HTTP 400 with its message.
    """

    def __init__(
        self,
        responder: ImageResponder = solid_png,
        script: Sequence[ImagesFault | str | None] = (),
        *,
        retry_after_s: float = 1.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.responder = responder
        self.script = tuple(None if fault is None else ImagesFault(fault) for fault in script)
        self.retry_after_s = retry_after_s
        super().__init__(host, port)
        self._lock = threading.Lock()
        self._received: list[ReceivedRequest] = []

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._received)

    thread_name = "fake-images-server"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    def _answer(self, headers: dict[str, str], raw_body: bytes) -> ServerReply:
        """Record one images request and reply as scripted."""
        try:
            body = json.loads(raw_body)
        except ValueError:
            body = None
        body = body if isinstance(body, dict) else None
        with self._lock:
            index = len(self._received)
            fault = self.script[index] if index < len(self.script) else None
            self._received.append(ReceivedRequest(index, time.monotonic(), headers, body, fault))
        if body is None or not isinstance(body.get("prompt"), str):
            return _error_reply(400, "the body must be a JSON object with a 'prompt' string")
        if fault is not None:
            return self._fault_reply(fault, body)
        try:
            image = self.responder(body)
        except Exception as err:  # a responder's refusal or bug reaches the client as a clear 400
            return _error_reply(400, f"the responder could not answer: {type(err).__name__}: {err}")
        return _images_reply(body, image)

    def _fault_reply(self, fault: ImagesFault, body: dict[str, Any]) -> ServerReply:
        if fault is ImagesFault.RATE_LIMITED:
            return _error_reply(
                429, "rate limit reached (injected)", ("Retry-After", f"{self.retry_after_s:g}")
            )
        if fault in (ImagesFault.SERVER_ERROR, ImagesFault.BAD_REQUEST):
            return _error_reply(int(fault.value), f"injected HTTP {fault.value}")
        if fault is ImagesFault.MALFORMED_JSON:
            return ServerReply(200, b'{"data": [{"b64_json": "iVBOR', (("Content-Type", "application/json"),))
        if fault is ImagesFault.NOT_AN_IMAGE:
            return _images_reply(body, b"this is text, not an image")
        return json_reply(200, {"created": int(time.time()), "data": []})


def _handler_for(server: FakeImagesServer) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``server``."""

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            raw_body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path.split("?", 1)[0] != IMAGES_ROUTE:
                self._send(_error_reply(404, f"no route POST {self.path}"))
                return
            headers = {name.lower(): value for name, value in self.headers.items()}
            self._send(server._answer(headers, raw_body))

        def _send(self, reply: ServerReply) -> None:
            self.send_whole(reply.status, reply.headers, reply.body)

    return Handler


def slow_responder(plan: FaultPlan, responder: ImageResponder = solid_png) -> ImageResponder:
    """``responder`` after a wait drawn from ``plan``'s latency (each request in its own thread)."""
    rng, lock = random.Random(plan.seed), threading.Lock()

    def answer(body: dict[str, Any]) -> bytes:
        with lock:
            delay = plan.latency_for(rng)
        time.sleep(delay)
        return responder(body)

    return answer


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until interrupted: ``python -m sciir.testing.fake_images_server --port N``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency-s", type=float, default=0.0)
    parser.add_argument("--latency-lognormal", type=float, nargs=2, metavar=("MEDIAN", "P95"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    lognormal = tuple(args.latency_lognormal) if args.latency_lognormal else None
    plan = FaultPlan(latency_s=args.latency_s, latency_lognormal=lognormal, seed=args.seed)
    with FakeImagesServer(slow_responder(plan), port=args.port) as server:
        print(f"fake images server listening at {server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)


if __name__ == "__main__":
    main()
