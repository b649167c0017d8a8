"""The lifecycle shared by the threaded loopback test servers: listen on a free port of 127.0.0.1, serve
in a background thread, stop promptly, and work as a context manager."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

# stop() waits up to one poll interval; the default half second adds up over a test suite.
POLL_INTERVAL_S = 0.02


class QuietHandler(BaseHTTPRequestHandler):
    """A keep-alive request handler that writes whole replies and logs nothing (tests read the server's
    own record of requests)."""

    protocol_version = "HTTP/1.1"  # keep-alive, as HTTP clients expect
    # A reply goes out as two writes (headers, then body): with Nagle's algorithm the body waits for the
    # client's delayed acknowledgement of the headers, 40 ms per reply on Linux (a download of the embedded
    # sample, one request at a time, spent 5 of its 6 s so). asyncio's transports (the fake OpenAI server) set it.
    disable_nagle_algorithm = True

    def send_whole(self, status: int, headers: Iterable[tuple[str, str]], body: bytes) -> None:
        """Status line, ``headers``, a Content-Length and ``body``."""
        self.send_response(status, HTTPStatus(status).phrase)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _BackloggedServer(ThreadingHTTPServer):
    # The standard library listens with a backlog of 5: a client opening hundreds of connections at once
    # (a stream's window) would see some reset, as a real server's backlog does not do.
    request_queue_size = 1024


class ThreadedLoopbackServer:
    """A ``ThreadingHTTPServer`` in a background thread; subclasses give its handler class."""

    thread_name = "loopback-server"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self._http: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def start(self) -> Self:
        """Listen and serve in a background thread; returns once the port is bound."""
        self._http = _BackloggedServer((self.host, self.port), self.handler_class())
        self._http.daemon_threads = True  # keep-alive connections and hung replies must not hold stop() up
        self.port = self._http.server_address[1]
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": POLL_INTERVAL_S},
            name=self.thread_name,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._http is None or self._thread is None:
            return
        self.before_stop()
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()
        self._http = self._thread = None

    def before_stop(self) -> None:
        """Release what the handlers may be waiting on (nothing by default)."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
