"""A small HTTP/1.1 client for GET requests to one server: keep-alive connections, chunked bodies, timeouts.
(One POST exists, ``Pool.post``: an OIDC refresh grant to an identity provider, never to an API server.)

Why not urllib3 or http.client: importing urllib3 cost more start-up than everything else the plugin does on
a small cluster, and both decode a chunked body chunk by chunk in Python (the API server streams a list in
chunks of a few KiB: ~9,000 of them for 10,000 claims). Here a body is read in large blocks and its chunks
are cut out of the buffer. Only what a Kubernetes API server speaks is handled: GET, status line, headers,
``Content-Length``, ``Transfer-Encoding: chunked`` or a body that ends with the connection.

Errors are this module's own (``ConnectFailed``, ``TLSFailed``, ``TimedOut``, ``Cut``); transport.py turns
them into kubectl's words.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any, Optional
from urllib.parse import urlsplit

from kubectl_pvleft.deadline import Deadline
from kubectl_pvleft.kube.httpframing import (
    MAX_HEADER_BYTES,
    MAX_HEADER_LINES,
    RESETS,
    Closed,
    ConnectFailed,
    Cut,
    HTTPFailure,
    Malformed,
    TimedOut,
    TLSFailed,
    TooLarge,
    chunk_size,
    framing,
    no_answer,
    read_head,
)
from kubectl_pvleft.kube.proxy import Proxy

BLOCK = 256 * 1024  # one read from the socket
IDLE_KEPT = 16  # keep-alive connections kept for reuse


class Timeouts:
    """``connect`` and ``read`` bound each wait; ``total`` (``--request-timeout``) bounds the whole exchange."""

    def __init__(self, connect: float = 30.0, read: Optional[float] = None, total: Optional[float] = None) -> None:
        self.connect, self.read, self.total = connect, read, total


class Server:
    """Where requests go: scheme, host, port and the URL's path prefix (a server URL may carry one)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.tls = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.tls else 80)
        self.prefix = parts.path.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 literal
        default = 443 if self.tls else 80
        self.host_header = host if parts.port in (None, default) else f"{host}:{self.port}"


class _Connection:
    """One socket, its TLS state, and what has been read from it but not yet used.

    TLS runs over memory buffers (``ssl.SSLObject``), not ``SSLSocket``: an SSLSocket read returns one TLS
    record (the API server writes records of ~1 KiB), so reading a 20 MB list took ~20,000 reads and as
    many rounds of Python; here one read from the socket takes everything that has arrived, and the records
    in it are decrypted in a tight loop.
    """

    def __init__(self, sock: socket.socket, tls: Optional[ssl.SSLObject] = None,
                 incoming: Optional[ssl.MemoryBIO] = None, outgoing: Optional[ssl.MemoryBIO] = None) -> None:
        self.sock, self.tls, self.incoming, self.outgoing = sock, tls, incoming, outgoing
        self.buffer = b""
        self.received = 0  # bytes of the answer that came (decrypted), since the request was sent
        self.deadline: Optional[float] = None
        self.read_timeout: Optional[float] = None
        self._timeout_set: Optional[float] = -1.0  # what the socket has: setting it again costs a syscall

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def _recv(self) -> bytes:
        """One read from the socket (b"" at its end), within the read timeout and the deadline."""
        wait = self.read_timeout
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimedOut("the request took longer than allowed")
            wait = left if wait is None else min(wait, left)
        try:
            self.set_timeout(wait)
            return self.sock.recv(BLOCK)
        except TimeoutError:
            raise TimedOut("no answer in time") from None
        except RESETS as exc:
            raise Closed(type(exc).__name__, reset=True) from None
        except OSError as exc:
            raise Cut(type(exc).__name__) from None

    def _fill(self) -> bytes:
        """What the server sent next (b"" at the end), decrypted."""
        if self.tls is None:
            return self._recv()
        tls, incoming = self.tls, self.incoming
        assert incoming is not None
        while True:
            parts: list[bytes] = []
            try:
                while True:
                    data = tls.read(BLOCK)
                    if not data:  # the server closed the TLS session (close_notify)
                        return b"".join(parts)
                    parts.append(data)
            except ssl.SSLWantReadError:
                pass
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):  # closed, with or without close_notify
                return b"".join(parts)
            except ssl.SSLError as exc:
                raise Cut(f"TLS: {exc.reason or exc}") from None
            self._flush()  # a key update the server asked for while we read
            if parts:
                return b"".join(parts)
            data = self._recv()
            if not data:
                incoming.write_eof()
                if not incoming.pending:
                    return b""
            else:
                incoming.write(data)

    def _flush(self) -> None:
        if self.outgoing is not None and self.outgoing.pending:
            self.sock.sendall(self.outgoing.read())

    def send(self, data: bytes) -> None:
        if self.tls is None:
            self.sock.sendall(data)
            return
        self.tls.write(data)
        self._flush()

    def handshake(self) -> None:
        assert self.tls is not None and self.incoming is not None
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush()
                data = self._recv()
                if not data:
                    raise Closed("the connection ended during the TLS handshake") from None
                self.incoming.write(data)
        self._flush()

    def set_timeout(self, wait: Optional[float]) -> None:
        if wait != self._timeout_set:
            self.sock.settimeout(wait)
            self._timeout_set = wait

    def more(self) -> bool:
        data = self._fill()
        if data:
            self.buffer += data
            self.received += len(data)
        return bool(data)

    def line(self) -> bytes:
        start = 0
        while True:
            end = self.buffer.find(b"\r\n", start)
            if end >= 0:
                line, self.buffer = self.buffer[:end], self.buffer[end + 2:]
                return line
            if len(self.buffer) > MAX_HEADER_BYTES:
                raise TooLarge(f"a header line longer than {MAX_HEADER_BYTES // 1024} KiB")
            start = max(0, len(self.buffer) - 1)  # a CR may end this read and its LF begin the next
            if not self.more():
                raise Closed("the connection ended mid-answer")

    def pieces(self, size: int) -> Iterator[bytes]:
        """The next ``size`` bytes, as they arrive; Cut if the connection ends first."""
        while size:
            if not self.buffer and not self.more():
                raise Cut("the connection ended mid-answer")
            piece, self.buffer = self.buffer[:size], self.buffer[size:]
            size -= len(piece)
            yield piece

    def take(self, size: int) -> bytes:
        """Exactly ``size`` bytes."""
        parts = []
        while len(self.buffer) < size:
            if len(self.buffer) >= BLOCK:
                parts.append(self.buffer)
                size -= len(self.buffer)
                self.buffer = b""
            if not self.more():
                raise Cut("the connection ended mid-answer")
        parts.append(self.buffer[:size])
        self.buffer = self.buffer[size:]
        return b"".join(parts)


class Response:
    """A status and headers; the body is read whole (``read``) or as it comes (``stream``)."""

    def __init__(self, pool: Pool, connection: _Connection, status: int, reason: str,
                 headers: dict[str, str]) -> None:
        self.status, self.reason, self.headers = status, reason, headers
        self._pool = pool
        self._connection: Optional[_Connection] = connection
        self._chunked, self._length = framing(status, headers)
        keep = headers.get("connection", "").lower() != "close"
        self._reusable = keep and (self._chunked or self._length is not None)

    def read(self, limit: Optional[int] = None) -> bytes:
        """The whole body; the connection goes back to the pool when the server keeps it open. A body longer
        than ``limit`` raises TooLarge as soon as it is known to be, before it is all held in memory."""
        if limit is not None and self._length is not None and self._length > limit:
            self.close()
            raise TooLarge(f"an answer of {self._length} bytes (more than {limit // (1024 * 1024)} MiB)")
        parts, size = [], 0
        try:
            for piece in self.stream():
                size += len(piece)
                if limit is not None and size > limit:
                    raise TooLarge(f"an answer of more than {limit // (1024 * 1024)} MiB")
                parts.append(piece)
            return b"".join(parts)
        finally:
            self.close()

    def stream(self) -> Iterator[bytes]:
        """The body's bytes as they arrive (de-chunked, and inflated when gzipped); raises Cut if it ends early."""
        if self.headers.get("content-encoding", "").strip().lower() == "gzip":
            from kubectl_pvleft.kube.contentcoding import inflate

            return inflate(self._framed(), Malformed)
        return self._framed()

    def _framed(self) -> Iterator[bytes]:
        connection = self._connection
        if connection is None:
            return
        if self._chunked:
            yield from self._chunks(connection)
        elif self._length is not None:
            yield from connection.pieces(self._length)
        else:  # the body ends with the connection
            while True:
                if connection.buffer:
                    yield connection.buffer
                    connection.buffer = b""
                if not connection.more():
                    break
        self._release()

    @staticmethod
    def _chunks(connection: _Connection) -> Iterator[bytes]:
        """Each block of de-chunked bytes as soon as the buffer holds it: many small chunks come out of one
        socket read as one piece."""
        pending: list[bytes] = []
        while True:
            buffer, pos = connection.buffer, 0
            while True:
                end = buffer.find(b"\r\n", pos)
                if end < 0:
                    break
                size = chunk_size(buffer[pos:end])
                if size == 0:
                    connection.buffer = buffer[pos:]
                    if pending:
                        yield b"".join(pending)
                    Response._trailer(connection)
                    return
                if end + 2 + size + 2 > len(buffer):
                    break
                if buffer[end + 2 + size:end + 2 + size + 2] != b"\r\n":
                    raise Malformed("a chunk longer than its size")
                pending.append(buffer[end + 2:end + 2 + size])
                pos = end + 2 + size + 2
            connection.buffer = buffer[pos:]
            if pending:
                yield b"".join(pending)
                pending = []
            if len(connection.buffer) > MAX_HEADER_BYTES and connection.buffer.find(b"\r\n") < 0:
                raise Malformed("a malformed chunk size")  # no size line ends within what any size line can be
            if len(connection.buffer) > BLOCK and connection.buffer.find(b"\r\n") >= 0:
                # One chunk larger than a block: hand over what has come of it so far.
                yield from Response._big_chunk(connection)
                continue
            if not connection.more():
                raise Cut("the connection ended mid-answer")

    @staticmethod
    def _big_chunk(connection: _Connection) -> Iterator[bytes]:
        left = chunk_size(connection.line())
        if left == 0:  # cannot be: _chunks saw it first
            raise Malformed("a malformed chunk")
        yield from connection.pieces(left)
        if connection.take(2) != b"\r\n":
            raise Malformed("a chunk longer than its size")

    @staticmethod
    def _trailer(connection: _Connection) -> None:
        connection.line()  # "0"
        for _ in range(MAX_HEADER_LINES):
            if not connection.line():
                return
        raise TooLarge(f"more than {MAX_HEADER_LINES} trailer lines")

    def _release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            self._pool.put(connection) if self._reusable else connection.close()

    def close(self) -> None:
        """Drop the connection (unless the body was read to its end, which gave it back)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def abort(self) -> None:
        """From another thread: a read blocked on this response ends at once (as Cut)."""
        connection = self._connection
        if connection is not None:
            try:
                connection.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Pool:
    """Keep-alive connections to one server; safe to share between threads (one request per connection)."""

    def __init__(self, server: Server, context: Optional[ssl.SSLContext], server_hostname: Optional[str],
                 proxy: Optional[Proxy] = None) -> None:
        self.server, self.context, self.proxy = server, context, proxy
        self.server_hostname = _ascii(server_hostname or server.host)
        self._tls_name = server_hostname  # tls-server-name: Go verifies an https proxy by it too, when set
        if proxy is not None and not server.tls and proxy.forwards_plain_http():
            # Go sends a plain-HTTP request to an http(s) proxy itself, with the absolute URI as its target.
            import copy  # only here: copy (and weakref) cost every start-up ~0.5 ms

            self.server = copy.copy(server)
            self.server.prefix = f"http://{server.host_header}{server.prefix}"
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    def put(self, connection: _Connection) -> None:
        connection.deadline = None
        with self._lock:
            if len(self._idle) < IDLE_KEPT:
                self._idle.append(connection)
                return
        connection.close()

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _idle_connection(self) -> Optional[_Connection]:
        with self._lock:
            return self._idle.pop() if self._idle else None

    def _connect(self, timeouts: Timeouts, deadline: Optional[float]) -> _Connection:
        wait = timeouts.connect if deadline is None else max(0.001, min(timeouts.connect, deadline - time.monotonic()))
        if self.proxy is not None:  # the proxy's dial and handshake take their time from the request's deadline
            until = Deadline()
            until.end = deadline
            if self.context is None and self.proxy.forwards_plain_http():
                sock = self.proxy.dial_forward(until, timeouts.connect, None, self._tls_name)
            else:
                sock = self.proxy.dial(self.server.host, self.server.port, until, timeouts.connect, self.context,
                                       self._tls_name)
        else:
            for attempt in (1, 2):  # one quick retry of a refused connect, as kubectl's transport would redial
                try:
                    sock = socket.create_connection((_ascii(self.server.host), self.server.port), timeout=wait)
                    break
                except TimeoutError:
                    raise TimedOut("connect") from None
                except OSError as exc:
                    if attempt == 2 or not isinstance(exc, ConnectionRefusedError):
                        raise ConnectFailed(type(exc).__name__) from None
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.context is None:
            return _Connection(sock)
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        connection = _Connection(sock, self.context.wrap_bio(incoming, outgoing, server_hostname=self.server_hostname),
                                 incoming, outgoing)
        connection.read_timeout = wait
        try:
            connection.handshake()
        except ssl.SSLError as exc:
            connection.close()
            raise TLSFailed(_tls_reason(exc)) from None
        except HTTPFailure:
            connection.close()
            raise
        except OSError as exc:
            connection.close()
            if isinstance(exc, RESETS):
                raise Closed(type(exc).__name__, reset=True) from None
            raise Cut(type(exc).__name__) from None
        return connection

    def get(self, target: str, headers: list[tuple[str, str]], timeouts: Timeouts) -> Response:
        """Send ``GET target`` (path and query, without the server's prefix) and read the status and headers."""
        deadline = time.monotonic() + timeouts.total if timeouts.total else None
        request = _request_bytes(self.server, target, headers)
        while True:
            connection = self._idle_connection()
            reused = connection is not None
            if connection is None:
                try:
                    connection = self._connect(timeouts, deadline)
                except Closed as exc:  # reset or closed during the TLS handshake: nothing was answered
                    raise no_answer(exc) from None
            connection.deadline, connection.read_timeout = deadline, timeouts.read
            connection.received = 0
            try:
                connection.set_timeout(timeouts.read)
                connection.send(request)
                status, reason, response_headers = read_head(connection)
                return Response(self, connection, status, reason, response_headers)
            except (HTTPFailure, OSError) as exc:
                connection.close()
                # A kept connection the server closed meanwhile: GET is safe to send again, on a new one.
                if reused and isinstance(exc, (Cut, OSError)):
                    continue
                if connection.received == 0 and isinstance(exc, (Closed, *RESETS)):
                    # The caller decides whether to send it again (client-go retries a GET here).
                    raise no_answer(exc) from None
                if isinstance(exc, HTTPFailure):
                    raise
                raise Cut(type(exc).__name__) from None


    def post(self, target: str, headers: list[tuple[str, str]], body: bytes, timeouts: Timeouts) -> Response:
        """Send ``POST target`` with a body (an OAuth2 token request: never to an API server) on a new connection,
        and read the status and headers. Never sent twice: a token request may rotate a refresh token."""
        deadline = time.monotonic() + timeouts.total if timeouts.total else None
        try:
            connection = self._connect(timeouts, deadline)
        except Closed as exc:
            raise no_answer(exc) from None
        connection.deadline, connection.read_timeout = deadline, timeouts.read
        try:
            connection.set_timeout(timeouts.read)
            connection.send(_request_bytes(self.server, target, headers, "POST", body))
            status, reason, response_headers = read_head(connection)
            return Response(self, connection, status, reason, response_headers)
        except (HTTPFailure, OSError) as exc:
            connection.close()
            if isinstance(exc, HTTPFailure):
                raise
            raise Cut(type(exc).__name__) from None


def _ascii(name: str) -> Any:
    """socket and ssl encode a str host name with the idna codec, whose import costs start-up; an ASCII
    name (an IP address, most host names) given as bytes is the same name without it."""
    return name.encode("ascii") if name.isascii() else name


def _request_bytes(server: Server, target: str, headers: list[tuple[str, str]], method: str = "GET",
                   body: Optional[bytes] = None) -> bytes:
    lines = [f"{method} {server.prefix}{target} HTTP/1.1", f"Host: {server.host_header}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


def _tls_reason(exc: ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
        return f"{exc.reason or 'CERTIFICATE_VERIFY_FAILED'}: {exc.verify_message}"
    return str(exc.reason or (exc.args[1] if len(exc.args) > 1 else exc))
