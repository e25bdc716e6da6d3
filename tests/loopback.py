"""A test server on a free loopback port, run the same way by every fake: the cloud APIs' local servers, the price
lists, the IdP and the scripted API server. Each fake says only how it answers (a ``Request`` in, a ``Reply``
out); this module owns the rest: the port, plain HTTP or TLS with the tests' CA, reading the body, writing the
headers, a quiet log, and a short poll so that stopping does not wait half a second.

``TcpFake`` is the same for the fakes that write HTTP by hand, for what no HTTP server writes (a cut chunk,
silence, a malformed status line): a plain TCP listener whose every connection is handed to the fake."""

from __future__ import annotations

import json
import socket
import ssl
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional, TypeVar
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    target: str  # as sent: the path and its query
    headers: Mapping[str, str]  # names in lower case
    body: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def params(self) -> dict[str, list[str]]:
        """Every value of every query parameter, blank ones kept."""
        return parse_qs(urlsplit(self.target).query, keep_blank_values=True)

    @property
    def query(self) -> dict[str, str]:
        """The query with one value per parameter (the last, as Go's and Google's servers take it)."""
        return {name: values[-1] for name, values in self.params.items()}

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes = b""
    content_type: Optional[str] = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


def json_reply(status: int, doc: Any, content_type: str = "application/json", **headers: str) -> Reply:
    return Reply(status, json.dumps(doc).encode(), content_type, headers)


def free_port() -> int:
    """A loopback port nothing listens on once this returns: for a server to bind, or for a client to be refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


Self = TypeVar("Self", bound="Started")


class Started:
    """What every fake here is: ``start()`` and ``stop()``, or ``with Fake() as fake:`` for both."""

    def start(self: Self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self: Self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


L = TypeVar("L", bound="LoopbackFake")
T = TypeVar("T", bound="TcpFake")


class LoopbackFake(Started):
    """The base of every fake: a subclass says how it answers (``serve``), whether it speaks TLS with the tests'
    own CA (``tls``, see tls_material) and whether it keeps connections open (``http11``, as a real server does
    for Go's and Python's clients); ``with Fake() as fake:`` or start()/stop() runs it on a free loopback port."""

    tls = False
    http11 = False
    _server: Optional[_Server] = None

    def serve(self, request: Request) -> Reply:
        raise NotImplementedError

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def failures(self) -> list[str]:
        """What went wrong on the server's side of a connection (a TLS handshake, a handler's exception), one line
        each, oldest first: what a test that saw a connection fail can show of the other end."""
        assert self._server is not None, "start() first"
        return list(self._server.failures)

    def start(self: L) -> L:
        self._server = _Server(("127.0.0.1", 0), _handler(self.serve, self.http11))
        if self.tls:
            import tls_material

            # The handshake is the connection's own thread's work (_Server.finish_request), not the accepting
            # thread's: one peer slow to send its ClientHello must not hold up every other peer.
            self._server.socket = tls_material.server_context().wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False)
        # shutdown() returns when serve_forever next polls: at its default 0.5 s that was most of a short test.
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _Server(ThreadingHTTPServer):
    """A thread per connection, a listen backlog of a real server's size (socketserver's is 5) and no timeout but
    a bound on a TLS handshake that never ends, which only that connection's thread waits for."""

    request_queue_size = 128
    daemon_threads = True
    HANDSHAKE_SECONDS = 60.0

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.failures: list[str] = []

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(self.HANDSHAKE_SECONDS)
            try:
                request.do_handshake()
            except OSError as exc:  # the peer's trouble (an untrusted certificate, a port scan): its alone
                self.failures.append(f"TLS handshake with {client_address}: {exc!r}")
                return
            request.settimeout(None)
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        self.failures.append(f"serving {client_address}: {sys.exc_info()[1]!r}")
        super().handle_error(request, client_address)  # the traceback, on stderr


def _handler(serve: Callable[[Request], Reply], http11: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if http11 else "HTTP/1.0"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            reply = serve(Request(self.command, self.path, headers, body))
            self.send_response(reply.status)
            if reply.content_type is not None:
                self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, *args: Any) -> None:  # quiet: each fake keeps its own record of what it was asked
            pass

    return Handler


class TcpFake(Started):
    """The base of the fakes below HTTP: a subclass says what it does with a connection (``connection``, run on
    a thread of its own; ``read_head`` reads a request's head); this class owns the listener on a free loopback
    port, the accept loop and the count of ``connections``. ``stop()`` closes the listener (a fake that holds
    connections open ends them itself); ``start(port)`` listens again on the same port, as a server back up."""

    port = 0
    connections = 0
    _listener: Optional[socket.socket] = None

    def connection(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def start(self: T, port: int = 0) -> T:
        listener = socket.create_server(("127.0.0.1", port))  # SO_REUSEADDR: the same port again at once
        listener.settimeout(0.02)  # how soon the accept loop sees the listener closed
        self._listener, self.port = listener, listener.getsockname()[1]
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _accept(self, listener: socket.socket) -> None:
        while listener.fileno() >= 0:
            try:
                conn, _ = listener.accept()
            except OSError:  # a timeout, or the listener closed meanwhile (the loop's test)
                continue
            conn.settimeout(None)
            self.connections += 1
            threading.Thread(target=self.connection, args=(conn,), daemon=True).start()


class Silent(TcpFake):
    """Takes connections and never answers, as a server behind a black-holing firewall; ``stop()`` closes them."""

    def __init__(self) -> None:
        self.held: list[socket.socket] = []

    def connection(self, conn: socket.socket) -> None:
        self.held.append(conn)

    def stop(self) -> None:
        super().stop()
        for conn in self.held:
            conn.close()
        self.held.clear()


def read_head(conn: socket.socket, buffered: bytes = b"") -> Optional[tuple[bytes, bytes]]:
    """A request's head (without its blank line) and the bytes read after it; None if the client closed first."""
    data = buffered
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head, rest
