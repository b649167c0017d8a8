"""The loopback servers' shared lifecycle and handler (sciir.testing.loopback)."""

from __future__ import annotations

import socket
import urllib.request

from sciir.testing.loopback import QuietHandler, ThreadedLoopbackServer


class _NodelayHandler(QuietHandler):
    """Answers with whether its own connection sends each write at once (TCP_NODELAY)."""

    def do_GET(self) -> None:
        nodelay = self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        self.send_whole(200, [("Content-Type", "text/plain")], str(bool(nodelay)).encode())


class _NodelayServer(ThreadedLoopbackServer):
    def handler_class(self) -> type[QuietHandler]:
        return _NodelayHandler


def test_a_reply_is_sent_without_waiting_for_the_clients_acknowledgement():
    # A reply is two writes (headers, body): with Nagle's algorithm on, the body would wait for the client's
    # delayed acknowledgement of the headers (40 ms a reply on Linux).
    with _NodelayServer() as server:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/", timeout=10) as reply:
            assert reply.read() == b"True"
