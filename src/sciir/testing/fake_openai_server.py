"""A real OpenAI-compatible HTTP server on loopback, with scripted answers and fault injection.

Built on asyncio streams in one background thread rather than ``http.server``: every request is a
coroutine, so injected latency and hung replies cost no thread, and a few hundred requests per second
with latency stay cheap. It speaks the part of HTTP/1.1 that OpenAI clients use: Content-Length bodies
and keep-alive. Responders run on the server's event loop, so they must answer quickly. Like the hosted
API, it refuses (HTTP 400, every problem named with its path) a ``response_format`` whose schema is sent
with ``strict: true`` but is not valid for strict structured outputs. What it answers is in
:mod:`sciir.testing.chat_answers`, the faults it injects in :mod:`sciir.testing.fault_plan`, and the HTTP
it speaks in :mod:`sciir.testing.http_wire`.

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
import random
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sciir.testing.chat_answers import Responder, answer_checklist_yes, chat_completion, strict_schema_refusal
from sciir.testing.fault_plan import FaultPlan, ServerFault, as_fault
from sciir.testing.http_wire import (
    RawRequest,
    ServerReply,
    encode_reply,
    error_reply,
    json_reply,
    read_request,
)
from sciir.testing.schema_replies import answer_from_schema

_MALFORMED_BODY = b'{"choices": [{"message": {"content": oops'


@dataclass(frozen=True)
class RecordedRequest:
    """One chat-completions request as the server received it."""

    index: int
    received_at: float  # time.monotonic() on arrival
    headers: dict[str, str]
    body: dict[str, Any] | None  # None when the body was not JSON
    fault: ServerFault | None


@dataclass(frozen=True)
class ServerStats:
    """Counts since the server started."""

    requests: int  # every HTTP request, any path
    chat_requests: int
    faults: dict[str, int]  # injected faults by kind
    in_flight: int
    max_in_flight: int


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
        self._routes: dict[tuple[str, str], Callable[[RawRequest], Awaitable[ServerReply]]] = {
            ("POST", "/v1/chat/completions"): self._chat_completions,
            ("GET", "/v1/models"): self._models,
            ("GET", "/stats"): self._stats,
        }
        self._fault_replies: dict[ServerFault, Callable[[RawRequest, dict[str, Any], int], ServerReply]] = {
            ServerFault.RATE_LIMITED: functools.partial(self._status_fault, 429),
            ServerFault.SERVER_ERROR: functools.partial(self._status_fault, 500),
            ServerFault.UNAVAILABLE: functools.partial(self._status_fault, 503),
            ServerFault.BAD_REQUEST: functools.partial(self._status_fault, 400),
            ServerFault.UNAUTHORIZED: functools.partial(self._status_fault, 401),
            ServerFault.TIMEOUT: lambda *_: ServerReply(silent=True, delay_s=self.faults.hang_s),
            ServerFault.DROP: lambda *_: ServerReply(silent=True),
            ServerFault.MALFORMED_JSON: lambda *_: ServerReply(
                200, _MALFORMED_BODY, (("Content-Type", "application/json"),)
            ),
            ServerFault.SCHEMA_INVALID: self._schema_invalid,
            ServerFault.TRUNCATED: self._truncated,
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
            while (request := await read_request(reader)) is not None:
                if not await self._answer(request, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # the client went away or sent something that is not HTTP: drop the connection
        except asyncio.CancelledError:
            pass  # stop() ends hung replies; asyncio would report a cancelled handler as an error
        finally:
            self._connections.discard(task)
            writer.close()

    async def _answer(self, request: RawRequest, writer: asyncio.StreamWriter) -> bool:
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
                else error_reply(404, f"no route {request.method} {request.path}")
            )
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            if reply.silent:
                return False
            keep_alive = request.keep_alive and reply.send_fraction == 1.0
            writer.write(encode_reply(reply, keep_alive))
            await writer.drain()
            return keep_alive
        finally:
            with self._counters.lock:
                self._counters.in_flight -= 1

    async def _models(self, request: RawRequest) -> ServerReply:
        return json_reply(
            200, {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "sciir-fake"}]}
        )

    async def _stats(self, request: RawRequest) -> ServerReply:
        return json_reply(200, {**dataclasses.asdict(self.stats), "cpu_s": time.process_time()})

    async def _chat_completions(self, request: RawRequest) -> ServerReply:
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
            return error_reply(400, "the body must be a JSON object with a 'messages' list")
        await asyncio.sleep(self.faults.latency_for(self._rng))
        if fault is not None:
            return self._fault_replies[fault](request, body, index)
        if (refusal := strict_schema_refusal(body)) is not None:
            return error_reply(400, refusal)
        try:
            answer = self.responder(body)
        except Exception as err:  # a responder's refusal or bug reaches the client as a clear 400
            return error_reply(400, f"the responder could not answer: {type(err).__name__}: {err}")
        return json_reply(200, chat_completion(body, answer, index, self.model))

    def _status_fault(
        self, status: int, request: RawRequest, body: dict[str, Any], index: int
    ) -> ServerReply:
        if status == 401:
            presented = request.headers.get("authorization", "").removeprefix("Bearer ")
            return error_reply(401, f"Incorrect API key provided: {presented}")
        if status == 429:
            retry_after = f"{self.faults.retry_after_s:g}"
            return error_reply(429, "rate limit reached (injected)", (("Retry-After", retry_after),))
        return error_reply(status, f"injected HTTP {status}")

    def _schema_invalid(self, request: RawRequest, body: dict[str, Any], index: int) -> ServerReply:
        content = json.dumps({"unexpected": "the fake server left out the keys the schema requires"})
        return json_reply(200, chat_completion(body, content, index, self.model))

    def _truncated(self, request: RawRequest, body: dict[str, Any], index: int) -> ServerReply:
        # The content never arrives whole, so it need not come from the responder.
        complete = json_reply(200, chat_completion(body, json.dumps({"cut": "short"}), index, self.model))
        return ServerReply(complete.status, complete.body, complete.headers, send_fraction=0.5)


def _parse_fault_probability(text: str) -> tuple[ServerFault, float]:
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
    parser.add_argument(
        "--latency-lognormal",
        type=float,
        nargs=2,
        metavar=("MEDIAN", "P95"),
        help="log-normal latency, seconds",
    )
    parser.add_argument(
        "--replies",
        choices=["checklist-yes", "schema"],
        default="checklist-yes",
        help="schema: a reply of realistic size for any task, from the request's JSON schema",
    )
    parser.add_argument("--retry-after-s", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        type=_parse_fault_probability,
        metavar="KIND=P",
        help=f"inject a fault with probability P; kinds: {', '.join(f.value for f in ServerFault)}",
    )
    args = parser.parse_args(argv)
    plan = FaultPlan(
        probabilities=dict(args.fault),
        latency_s=args.latency_s,
        latency_lognormal=tuple(args.latency_lognormal) if args.latency_lognormal else None,
        retry_after_s=args.retry_after_s,
        seed=args.seed,
    )
    responder = answer_from_schema if args.replies == "schema" else answer_checklist_yes
    with FakeOpenAIServer(responder, plan, host=args.host, port=args.port, model=args.model) as server:
        print(f"fake OpenAI server listening at {server.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
