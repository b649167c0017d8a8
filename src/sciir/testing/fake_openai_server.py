"""A real OpenAI-compatible HTTP server on loopback, with scripted answers and fault injection.

Built on asyncio streams in one background thread rather than ``http.server``: every request is a
coroutine, so injected latency and hung replies cost no thread, and a few hundred requests per second
with latency stay cheap. It speaks the part of HTTP/1.1 that OpenAI clients use: Content-Length bodies
and keep-alive. Responders run on the server's event loop, so they must answer quickly. Like the hosted
API, it refuses (HTTP 400, every problem named with its path) a ``response_format`` whose schema is sent
with ``strict: true`` but is not valid for strict structured outputs.

    with FakeOpenAIServer(responder=..., faults=FaultPlan(script=["429", None])) as srv:
        srv.base_url   # "http://127.0.0.1:PORT/v1"
        srv.stats      # requests received, faults injected, most requests in flight at once

Also runnable: ``python -m sciir.testing.fake_openai_server --port 8000 --fault 503=0.1``; then
``GET /stats`` (outside the OpenAI API's ``/v1``) returns the same counts and the server process's CPU
seconds as JSON, for benchmarks that run the server in its own process.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import json
import math
import random
import re
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from http import HTTPStatus
from typing import Any

from sciir.backends.strict_schema import strict_schema_problems

# What the fake server bills per image; real servers bill hundreds of tokens per image too.
IMAGE_TOKENS = 256
_JSON_START = re.compile(r"[\[{]")
_MALFORMED_BODY = b'{"choices": [{"message": {"content": oops'


class Fault(str, Enum):
    """A way for the server to misbehave on one chat-completions request."""

    RATE_LIMITED = "429"  # with a Retry-After header
    SERVER_ERROR = "500"
    UNAVAILABLE = "503"
    BAD_REQUEST = "400"
    UNAUTHORIZED = "401"  # echoes the presented API key, as careless servers do
    TIMEOUT = "timeout"  # hang past the client's timeout, then close without a reply
    DROP = "drop"  # close the connection without a reply
    MALFORMED_JSON = "malformed_json"  # HTTP 200 whose body is not JSON
    SCHEMA_INVALID = "schema_invalid"  # a well-formed reply whose content lacks the expected keys
    TRUNCATED = "truncated"  # HTTP 200 whose body stops half way, then the connection closes


def as_fault(value: Fault | str) -> Fault:
    """``value`` as a :class:`Fault`, with the known kinds listed when it is not one."""
    try:
        return Fault(value)
    except ValueError:
        known = ", ".join(fault.value for fault in Fault)
        raise ValueError(f"unknown fault {value!r}; known faults: {known}") from None


@dataclass(frozen=True)
class FaultPlan:
    """Which faults to inject, and how slowly to answer.

    ``script[i]`` is the fault for the i-th chat-completions request (None: answer normally); requests
    past the script draw a fault from ``probabilities`` (seeded, so a run is repeatable in arrival
    order). ``latency_s`` is a fixed delay or a ``(low, high)`` range drawn per request.
    """

    script: Sequence[Fault | str | None] = ()
    probabilities: Mapping[Fault | str, float] = field(default_factory=dict)
    latency_s: float | tuple[float, float] = 0.0
    retry_after_s: float = 1.0
    hang_s: float = 30.0
    seed: int = 0

    def __post_init__(self) -> None:
        # Normalise once so drawing a fault per request is a plain lookup.
        object.__setattr__(self, "script", tuple(None if f is None else as_fault(f) for f in self.script))
        probabilities = {as_fault(f): float(p) for f, p in self.probabilities.items()}
        if any(not 0.0 <= p <= 1.0 for p in probabilities.values()) or sum(probabilities.values()) > 1.0:
            raise ValueError(
                f"fault probabilities must lie in [0, 1] and sum to at most 1, got {probabilities}"
            )
        object.__setattr__(self, "probabilities", probabilities)
        low, high = self.latency_s if isinstance(self.latency_s, tuple) else (self.latency_s, self.latency_s)
        if not 0.0 <= low <= high:
            raise ValueError(
                f"latency_s must be a non-negative delay or a (low, high) range, got {self.latency_s}"
            )
        object.__setattr__(self, "latency_s", (float(low), float(high)))

    def fault_for(self, index: int, rng: random.Random) -> Fault | None:
        """The fault to inject into the ``index``-th chat-completions request, if any."""
        if index < len(self.script):
            return self.script[index]
        draw = rng.random()
        for fault, probability in self.probabilities.items():
            if draw < probability:
                return fault
            draw -= probability
        return None

    def latency_for(self, rng: random.Random) -> float:
        """Seconds to wait before answering one request."""
        low, high = self.latency_s
        return low if low == high else rng.uniform(low, high)


@dataclass(frozen=True)
class FirstTokenDistribution:
    """A scripted answer of one token: the probability of each candidate first token.

    The reply's content is the most likely token (greedy decoding). A request with ``logprobs: true``
    also gets ``choices[0].logprobs.content[0]``: that token and its ``top_logprobs`` most likely
    alternatives, as OpenAI returns them.
    """

    probabilities: Mapping[str, float]

    def __post_init__(self) -> None:
        values = list(self.probabilities.values())
        if not values or any(not 0.0 < p <= 1.0 for p in values) or sum(values) > 1.0 + 1e-9:
            raise ValueError(
                "first-token probabilities must lie in (0, 1] and sum to at most 1, "
                f"got {dict(self.probabilities)}"
            )

    def ranked(self) -> list[tuple[str, float]]:
        """The candidate tokens, most likely first."""
        return sorted(self.probabilities.items(), key=lambda item: item[1], reverse=True)

    @property
    def most_likely(self) -> str:
        return self.ranked()[0][0]

    def logprobs(self, top: int) -> dict[str, Any]:
        """A choice's ``logprobs``: the most likely token as the one generated, ``top`` alternatives."""
        ranked = self.ranked()
        alternatives = [_token_logprob(token, probability) for token, probability in ranked[:top]]
        return {"content": [{**_token_logprob(*ranked[0]), "top_logprobs": alternatives}]}


def _token_logprob(token: str, probability: float) -> dict[str, Any]:
    """One token's entry in a reply's ``logprobs``, as OpenAI writes it."""
    return {"token": token, "logprob": math.log(probability), "bytes": list(token.encode())}


# A plain string is a reply without log-probabilities, as from a server that ignores ``logprobs``.
Responder = Callable[[dict[str, Any]], str | FirstTokenDistribution]


class NoScriptedAnswer(LookupError):
    """The responder has nothing to say to this request (the server answers HTTP 400)."""


def message_texts(request: Mapping[str, Any]) -> list[str]:
    """The text of every message in a chat-completions request (string or list-of-parts content)."""
    texts = []
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return texts


def _question_ids(value: Any) -> list[str]:
    """Ids of the checklist questions (objects with "id" and "question") anywhere in ``value``."""
    if isinstance(value, dict):
        if "id" in value and "question" in value:
            return [str(value["id"])]
        return [qid for item in value.values() for qid in _question_ids(item)]
    if isinstance(value, list):
        return [qid for item in value for qid in _question_ids(item)]
    return []


def checklist_ids(text: str) -> list[str]:
    """Ids of every checklist question in the JSON embedded anywhere in ``text``."""
    decoder = json.JSONDecoder()
    found: list[str] = []
    position = 0
    while match := _JSON_START.search(text, position):
        try:
            value, position = decoder.raw_decode(text, match.start())
        except ValueError:
            position = match.start() + 1
            continue
        found += _question_ids(value)
    return found


def checklist_responder(verdict_for: Callable[[str], str | None], note: str = "scripted") -> Responder:
    """A responder answering every checklist question in a SciIR judge request with ``verdict_for(id)``."""

    def answer(request: dict[str, Any]) -> str:
        ids = [qid for text in message_texts(request) for qid in checklist_ids(text)]
        if not ids:
            raise NoScriptedAnswer(
                "no JSON checklist (objects with 'id' and 'question') in the request's messages"
            )
        answers = [
            {"id": qid, "verdict": verdict_for(qid), "evidence": "scripted", "reasoning": note}
            for qid in dict.fromkeys(ids)
        ]
        return json.dumps({"answers": answers})

    return answer


_SAY_YES = checklist_responder(lambda qid: "yes", note="the fake server says yes to everything")


def answer_checklist_yes(request: dict[str, Any]) -> str:
    """Answer a SciIR judge request "yes" to every checklist question found in its messages."""
    return _SAY_YES(request)


@dataclass(frozen=True)
class RecordedRequest:
    """One chat-completions request as the server received it."""

    index: int
    received_at: float  # time.monotonic() on arrival
    headers: dict[str, str]
    body: dict[str, Any] | None  # None when the body was not JSON
    fault: Fault | None


@dataclass(frozen=True)
class ServerStats:
    """Counts since the server started."""

    requests: int  # every HTTP request, any path
    chat_requests: int
    faults: dict[str, int]  # injected faults by kind
    in_flight: int
    max_in_flight: int


@dataclass(frozen=True)
class _HTTPRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


@dataclass(frozen=True)
class _Reply:
    """What to send back, including the ways of not sending it properly."""

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    send_fraction: float = 1.0  # below 1: the body stops part way and the connection closes
    silent: bool = False  # close the connection without replying
    delay_s: float = 0.0  # wait this long first


def strict_schema_refusal(request: Mapping[str, Any]) -> str | None:
    """Why the hosted API would refuse this request's ``response_format`` (a schema sent with
    ``strict: true`` that strict mode does not accept), with every problem and its path; None if it would not."""
    response_format = request.get("response_format")
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict) or spec.get("strict") is not True:
        return None
    problems = strict_schema_problems(spec.get("schema"))
    if not problems:
        return None
    return f"Invalid schema for response_format {spec.get('name')!r}: {'; '.join(problems)}"


def _json_reply(status: int, payload: Any, headers: tuple[tuple[str, str], ...] = ()) -> _Reply:
    return _Reply(status, json.dumps(payload).encode(), (("Content-Type", "application/json"), *headers))


def _error_reply(status: int, message: str, headers: tuple[tuple[str, str], ...] = ()) -> _Reply:
    error = {"message": message, "type": HTTPStatus(status).phrase.lower().replace(" ", "_"), "code": status}
    return _json_reply(status, {"error": error}, headers)


def _choice(request: dict[str, Any], answer: str | FirstTokenDistribution) -> dict[str, Any]:
    """The one choice of a reply; with log-probabilities when asked for and the answer has them."""
    content = answer if isinstance(answer, str) else answer.most_likely
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": "stop",
    }
    if isinstance(answer, FirstTokenDistribution) and request.get("logprobs") is True:
        top = request.get("top_logprobs")
        choice["logprobs"] = answer.logprobs(top if isinstance(top, int) else 0)
    return choice


def _completion(
    request: dict[str, Any], answer: str | FirstTokenDistribution, index: int, model: str
) -> dict[str, Any]:
    """A chat.completion envelope around ``answer``, with approximate token counts."""
    choice = _choice(request, answer)
    content = choice["message"]["content"]
    texts = message_texts(request)
    images = sum(
        1
        for message in request.get("messages") or []
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "image_url"
    )
    prompt_tokens = sum(len(text.split()) for text in texts) + IMAGE_TOKENS * images
    completion_tokens = len(content.split())
    return {
        "id": f"chatcmpl-fake-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


async def _read_request(reader: asyncio.StreamReader) -> _HTTPRequest | None:
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
    return _HTTPRequest(method, target.split("?", 1)[0], headers, body, keep_alive)


def _encode(reply: _Reply, keep_alive: bool) -> bytes:
    """Status line, headers and (all or part of) the body of ``reply``."""
    lines = [
        f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}",
        f"Content-Length: {len(reply.body)}",
    ]
    lines += [f"{name}: {value}" for name, value in reply.headers]
    lines.append(f"Connection: {'keep-alive' if keep_alive else 'close'}")
    body = reply.body[: int(len(reply.body) * reply.send_fraction)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class _Counters:
    """Mutable counts behind :class:`ServerStats`, shared between the server thread and readers."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.chat_requests = 0
        self.faults: dict[str, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0

    def snapshot(self) -> ServerStats:
        with self.lock:
            return ServerStats(
                self.requests, self.chat_requests, dict(self.faults), self.in_flight, self.max_in_flight
            )


class FakeOpenAIServer:
    """OpenAI-compatible ``/v1/chat/completions`` and ``/v1/models`` on loopback, in a background thread.

    ``responder(request_json)`` returns the reply content, or a :class:`FirstTokenDistribution` for
    replies with log-probabilities; when it raises, the server answers HTTP 400 with its message.
    ``requests`` keeps the last ``history_limit`` chat requests (bodies included).
    """

    def __init__(
        self,
        responder: Responder = answer_checklist_yes,
        faults: FaultPlan | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = "fake-vlm",
        history_limit: int = 100,
    ) -> None:
        self.responder = responder
        self.faults = faults or FaultPlan()
        self.host = host
        self.port = port
        self.model = model
        self._rng = random.Random(self.faults.seed)
        self._counters = _Counters()
        self._history: deque[RecordedRequest] = deque(maxlen=history_limit)
        self._routes: dict[tuple[str, str], Callable[[_HTTPRequest], Awaitable[_Reply]]] = {
            ("POST", "/v1/chat/completions"): self._chat_completions,
            ("GET", "/v1/models"): self._models,
            ("GET", "/stats"): self._stats,
        }
        self._fault_replies: dict[Fault, Callable[[_HTTPRequest, dict[str, Any], int], _Reply]] = {
            Fault.RATE_LIMITED: functools.partial(self._status_fault, 429),
            Fault.SERVER_ERROR: functools.partial(self._status_fault, 500),
            Fault.UNAVAILABLE: functools.partial(self._status_fault, 503),
            Fault.BAD_REQUEST: functools.partial(self._status_fault, 400),
            Fault.UNAUTHORIZED: functools.partial(self._status_fault, 401),
            Fault.TIMEOUT: lambda *_: _Reply(silent=True, delay_s=self.faults.hang_s),
            Fault.DROP: lambda *_: _Reply(silent=True),
            Fault.MALFORMED_JSON: lambda *_: _Reply(
                200, _MALFORMED_BODY, (("Content-Type", "application/json"),)
            ),
            Fault.SCHEMA_INVALID: self._schema_invalid,
            Fault.TRUNCATED: self._truncated,
        }
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._connections: set[asyncio.Task[Any]] = set()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def stats(self) -> ServerStats:
        return self._counters.snapshot()

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._counters.lock:
            return list(self._history)

    def start(self) -> FakeOpenAIServer:
        """Listen and serve in a background thread; returns once the port is bound."""
        self._thread = threading.Thread(target=self._run, name="fake-openai-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            self._thread.join()
            self._thread = None
            raise RuntimeError(f"fake OpenAI server could not start on {self.host}:{self.port}") from (
                self._startup_error
            )
        return self

    def stop(self) -> None:
        """Stop serving: open connections are closed, hung replies abandoned."""
        if self._thread is None:
            return
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join()
        self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as err:  # reported to start(); the thread has nowhere else to put it
            self._startup_error = err
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        server = await asyncio.start_server(self._serve_connection, self.host, self.port)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            server.close()
            for task in self._connections:
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer requests on one connection until either side closes it."""
        task = asyncio.current_task()
        assert task is not None  # a connection handler always runs as a task
        self._connections.add(task)
        try:
            while (request := await _read_request(reader)) is not None:
                if not await self._answer(request, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # the client went away or sent something that is not HTTP: drop the connection
        except asyncio.CancelledError:
            pass  # stop() ends hung replies; asyncio would report a cancelled handler as an error
        finally:
            self._connections.discard(task)
            writer.close()

    async def _answer(self, request: _HTTPRequest, writer: asyncio.StreamWriter) -> bool:
        """Route and send one reply; False when the connection must close afterwards."""
        with self._counters.lock:
            self._counters.requests += 1
            self._counters.in_flight += 1
            self._counters.max_in_flight = max(self._counters.max_in_flight, self._counters.in_flight)
        try:
            route = self._routes.get((request.method, request.path))
            reply = (
                await route(request)
                if route
                else _error_reply(404, f"no route {request.method} {request.path}")
            )
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            if reply.silent:
                return False
            keep_alive = request.keep_alive and reply.send_fraction == 1.0
            writer.write(_encode(reply, keep_alive))
            await writer.drain()
            return keep_alive
        finally:
            with self._counters.lock:
                self._counters.in_flight -= 1

    async def _models(self, request: _HTTPRequest) -> _Reply:
        return _json_reply(
            200, {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "sciir-fake"}]}
        )

    async def _stats(self, request: _HTTPRequest) -> _Reply:
        return _json_reply(200, {**dataclasses.asdict(self.stats), "cpu_s": time.process_time()})

    async def _chat_completions(self, request: _HTTPRequest) -> _Reply:
        """Record the request, wait the injected latency, then misbehave or answer via the responder."""
        try:
            body = json.loads(request.body)
        except ValueError:
            body = None
        with self._counters.lock:
            index = self._counters.chat_requests
            self._counters.chat_requests += 1
            fault = self.faults.fault_for(index, self._rng) if isinstance(body, dict) else None
            if fault is not None:
                self._counters.faults[fault.value] = self._counters.faults.get(fault.value, 0) + 1
            self._history.append(RecordedRequest(index, time.monotonic(), request.headers, body, fault))
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error_reply(400, "the body must be a JSON object with a 'messages' list")
        await asyncio.sleep(self.faults.latency_for(self._rng))
        if fault is not None:
            return self._fault_replies[fault](request, body, index)
        if (refusal := strict_schema_refusal(body)) is not None:
            return _error_reply(400, refusal)
        try:
            answer = self.responder(body)
        except Exception as err:  # a responder's refusal or bug reaches the client as a clear 400
            return _error_reply(400, f"the responder could not answer: {type(err).__name__}: {err}")
        return _json_reply(200, _completion(body, answer, index, self.model))

    def _status_fault(self, status: int, request: _HTTPRequest, body: dict[str, Any], index: int) -> _Reply:
        if status == 401:
            presented = request.headers.get("authorization", "").removeprefix("Bearer ")
            return _error_reply(401, f"Incorrect API key provided: {presented}")
        if status == 429:
            retry_after = f"{self.faults.retry_after_s:g}"
            return _error_reply(429, "rate limit reached (injected)", (("Retry-After", retry_after),))
        return _error_reply(status, f"injected HTTP {status}")

    def _schema_invalid(self, request: _HTTPRequest, body: dict[str, Any], index: int) -> _Reply:
        content = json.dumps({"unexpected": "the fake server left out the keys the schema requires"})
        return _json_reply(200, _completion(body, content, index, self.model))

    def _truncated(self, request: _HTTPRequest, body: dict[str, Any], index: int) -> _Reply:
        # The content never arrives whole, so it need not come from the responder.
        complete = _json_reply(200, _completion(body, json.dumps({"cut": "short"}), index, self.model))
        return _Reply(complete.status, complete.body, complete.headers, send_fraction=0.5)


def _parse_fault_probability(text: str) -> tuple[Fault, float]:
    """``KIND=P`` from the command line."""
    kind, _, probability = text.partition("=")
    return as_fault(kind), float(probability)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until interrupted: ``python -m sciir.testing.fake_openai_server --port N``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--model", default="fake-vlm")
    parser.add_argument("--latency-s", type=float, default=0.0)
    parser.add_argument("--retry-after-s", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        type=_parse_fault_probability,
        metavar="KIND=P",
        help=f"inject a fault with probability P; kinds: {', '.join(f.value for f in Fault)}",
    )
    args = parser.parse_args(argv)
    plan = FaultPlan(
        probabilities=dict(args.fault),
        latency_s=args.latency_s,
        retry_after_s=args.retry_after_s,
        seed=args.seed,
    )
    with FakeOpenAIServer(faults=plan, host=args.host, port=args.port, model=args.model) as server:
        print(f"fake OpenAI server listening at {server.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
