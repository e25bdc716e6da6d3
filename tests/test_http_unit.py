"""The HTTP/1.1 client (kubectl_pvleft/kube/httpclient.py) on the framings and faults a real API server shows
only sometimes or never: chunks split across reads, one chunk larger than a read, a kept connection the
server closed meanwhile, a cut answer, a silent server, an abort from another thread. The happy path against
the real API server is every cluster test.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from kubectl_pvleft.kube.httpclient import BLOCK, Pool, Server, Timeouts
from kubectl_pvleft.kube.httpframing import Cut, HTTPFailure, Malformed, TimedOut, TooLarge
from loopback import TcpFake, free_port, read_head

Handler = Callable[[socket.socket, bytes], None]


class ScriptedServer(TcpFake):
    """Plain TCP on loopback; each accepted connection runs the next handler, per request read."""

    def __init__(self, *handlers: Handler) -> None:
        self.handlers = list(handlers)
        self.requests: list[bytes] = []
        self.start()

    def connection(self, conn: socket.socket) -> None:
        try:
            self._exchange(conn)
        except OSError:  # the client dropped the connection (an abort, a timeout): its side is the test
            pass

    def _exchange(self, conn: socket.socket) -> None:
        buffer = b""
        with conn:
            while self.handlers:
                read = read_head(conn, buffer)
                if read is None:
                    return
                request, buffer = read
                self.requests.append(request)
                handler = self.handlers.pop(0)
                if handler(conn, request) is False:
                    return

    def pool(self, prefix: str = "") -> Pool:
        return Pool(Server(f"http://127.0.0.1:{self.port}{prefix}"), None, None)

    def close(self) -> None:
        self.stop()


def chunked(*pieces: bytes, head: bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") -> bytes:
    return head + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def send(data: bytes, keep: bool = True, step: int = 0) -> Handler:
    def handler(conn: socket.socket, _request: bytes) -> bool:
        if step:
            for i in range(0, len(data), step):
                conn.sendall(data[i:i + step])
                time.sleep(0.0005)
        else:
            conn.sendall(data)
        return keep
    return handler


@pytest.fixture
def serve():
    servers: list[ScriptedServer] = []

    def start(*handlers: Handler) -> ScriptedServer:
        servers.append(ScriptedServer(*handlers))
        return servers[-1]
    yield start
    for server in servers:
        server.close()


def test_many_small_chunks_split_across_reads_make_the_body(serve) -> None:
    pieces = [(b"%05d," % i) * 40 for i in range(2000)]
    server = serve(send(chunked(*pieces), step=3001))
    assert server.pool().get("/x", [], Timeouts(read=5)).read() == b"".join(pieces)


def test_a_chunk_larger_than_a_read_and_chunk_extensions(serve) -> None:
    big = bytes(range(256)) * (3 * BLOCK // 256 + 7)
    body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"%x;ext=1\r\n%s\r\n" % (len(big), big)
    body += b"3\r\nend\r\n0\r\nTrailer: x\r\n\r\n"
    server = serve(send(body))
    assert server.pool().get("/x", [], Timeouts(read=5)).read() == big + b"end"


def test_content_length_and_close_delimited_bodies(serve) -> None:
    server = serve(send(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
                   send(b"HTTP/1.1 200 OK\r\n\r\nuntil the end", keep=False))
    pool = server.pool()
    assert pool.get("/a", [], Timeouts(read=5)).read() == b"hello"
    assert pool.get("/b", [], Timeouts(read=5)).read() == b"until the end"
    assert server.connections == 1  # the first answer left the connection open for the second request


def test_a_request_line_carries_the_servers_path_prefix_and_headers(serve) -> None:
    server = serve(send(b"HTTP/1.1 204 No Content\r\n\r\n"))
    response = server.pool("/k8s/clusters/c-1").get("/api/v1/pods?limit=500", [("Accept", "application/json")],
                                                     Timeouts(read=5))
    assert response.status == 204 and response.read() == b""
    request = server.requests[0].decode()
    assert request.startswith("GET /k8s/clusters/c-1/api/v1/pods?limit=500 HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{server.port}" in request and "Accept: application/json" in request


def test_repeated_headers_are_joined_and_a_100_continue_is_skipped(serve) -> None:
    server = serve(send(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 403 Forbidden\r\nWarning: a\r\nwarning: b\r\n"
                        b"Content-Length: 2\r\n\r\n{}"))
    response = server.pool().get("/x", [], Timeouts(read=5))
    assert (response.status, response.reason, response.headers["warning"]) == (403, "Forbidden", "a, b")
    assert response.read() == b"{}"


def test_a_kept_connection_the_server_closed_is_replaced_once(serve) -> None:
    # The first connection answers, then the server drops it without a word (an idle timeout).
    server = serve(send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", keep=False),
                   send(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain"))
    pool = server.pool()
    assert pool.get("/a", [], Timeouts(read=5)).read() == b"ok"
    time.sleep(0.05)
    assert pool.get("/b", [], Timeouts(read=5)).read() == b"again"
    assert server.connections == 2


@pytest.mark.parametrize("answer", [
    chunked(b"abc")[:-9],  # the connection ends before the last chunk
    b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
])
def test_a_cut_answer_is_cut_never_a_short_body(serve, answer: bytes) -> None:
    server = serve(send(answer, keep=False))
    with pytest.raises(Cut):
        server.pool().get("/x", [], Timeouts(read=5)).read()


OK_CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize("answer, words", [
    (OK_CHUNKED + b"zz\r\nnot hex\r\n", "a malformed chunk size"),
    # A negative size moved the parser backwards without reading the socket: an endless loop eating memory.
    (OK_CHUNKED + b"-6\r\nabcdef\r\n0\r\n\r\n", "a malformed chunk size"),
    (OK_CHUNKED + b"+6\r\nabcdef\r\n0\r\n\r\n", "a malformed chunk size"),
    (OK_CHUNKED + b"0x6\r\nabcdef\r\n0\r\n\r\n", "a malformed chunk size"),
    (OK_CHUNKED + b"6 6\r\nabcdef\r\n0\r\n\r\n", "a malformed chunk size"),
    (OK_CHUNKED + b"\r\nabcdef\r\n0\r\n\r\n", "a malformed chunk size"),
    (OK_CHUNKED + b"1" * 17 + b"\r\n", "a malformed chunk size"),
    (OK_CHUNKED + b"\xd9\xa6\r\nabcdef\r\n0\r\n\r\n", "a malformed chunk size"),  # a non-ASCII digit
    (OK_CHUNKED + b"3\r\nabcdef\r\n0\r\n\r\n", "a chunk longer than its size"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: \xc2\xb2\r\n\r\nab", "a malformed Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nab", "a malformed Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nab", "a malformed Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", "a malformed Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nab", "a malformed Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "Transfer-Encoding"),
    (b"HTTP/1.1 200 OK\r\nbroken header\r\n\r\n", "a malformed header line"),
    (b"HTTP/1.1 200 OK\r\nName : x\r\n\r\n", "a malformed header line"),
    (b"HTTP/1.1 2000 OK\r\n\r\n", "not an HTTP/1.1 answer"),
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not an HTTP/1.1 answer"),
])
def test_a_malformed_answer_says_what_is_malformed(serve, answer: bytes, words: str) -> None:
    server = serve(send(answer, keep=False))
    started = time.monotonic()
    with pytest.raises(Malformed, match=words):
        server.pool().get("/x", [], Timeouts(read=5)).read()
    assert time.monotonic() - started < 3  # refused at once, never waited out


def test_identical_repeated_content_lengths_are_one_length(serve) -> None:
    server = serve(send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"))
    assert server.pool().get("/x", [], Timeouts(read=5)).read() == b"ok"


def endless(unit: bytes, head: bytes = b"HTTP/1.1 200 OK\r\n") -> Handler:
    def handler(conn: socket.socket, _request: bytes) -> bool:
        conn.sendall(head)
        try:
            for _ in range(20000):  # bounded: 20,000 units, far past every limit
                conn.sendall(unit)
        except OSError:
            pass
        return False
    return handler


@pytest.mark.parametrize("unit", [b"X-Header: " + b"v" * 1000 + b"\r\n", b"x" * 65536],
                         ids=["endless-headers", "endless-header-line"])
def test_endless_headers_are_refused_at_their_bound(serve, unit: bytes) -> None:
    server = serve(endless(unit))
    with pytest.raises(TooLarge):
        server.pool().get("/x", [], Timeouts(read=5))


def test_a_body_over_the_limit_is_refused_while_it_streams(serve) -> None:
    server = serve(endless(b"%x\r\n%s\r\n" % (65536, b"y" * 65536), head=OK_CHUNKED),
                   send(b"HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n", keep=False))
    with pytest.raises(TooLarge):
        server.pool().get("/x", [], Timeouts(read=5)).read(limit=4 * 1024 * 1024)
    with pytest.raises(TooLarge):  # a declared length over the limit: refused before reading any of it
        server.pool().get("/x", [], Timeouts(read=5)).read(limit=4 * 1024 * 1024)


def test_every_failure_is_of_the_clients_own_family(serve) -> None:
    for failure in (Cut, Malformed, TooLarge, TimedOut):
        assert issubclass(failure, HTTPFailure)


def test_a_silent_server_times_out_per_read_and_in_total(serve) -> None:
    def silent(conn: socket.socket, _request: bytes) -> None:
        time.sleep(3)
    server = serve(silent, silent)
    started = time.monotonic()
    with pytest.raises(TimedOut):
        server.pool().get("/x", [], Timeouts(read=0.2))
    with pytest.raises(TimedOut):
        server.pool().get("/x", [], Timeouts(read=10, total=0.3))
    assert time.monotonic() - started < 2.5


def test_a_body_that_trickles_past_the_total_deadline_times_out(serve) -> None:
    server = serve(send(chunked(*[b"x" * 10] * 2000), step=20))  # >= 0.75 s of sleeps
    response = server.pool().get("/x", [], Timeouts(read=5, total=0.2))
    with pytest.raises(TimedOut):
        response.read()


def test_abort_from_another_thread_ends_a_blocked_stream(serve) -> None:
    def hold(conn: socket.socket, _request: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        time.sleep(5)
    server = serve(hold)
    response = server.pool().get("/watch", [], Timeouts(read=30))
    stream = response.stream()
    assert next(stream) == b"first"
    threading.Timer(0.2, response.abort).start()
    started = time.monotonic()
    with pytest.raises(Cut):
        next(stream)
    assert time.monotonic() - started < 3


def test_a_refused_port_is_connect_failed(serve) -> None:
    from kubectl_pvleft.kube.httpframing import ConnectFailed
    with pytest.raises(ConnectFailed):
        Pool(Server(f"http://127.0.0.1:{free_port()}"), None, None).get("/x", [], Timeouts(connect=2, read=2))


def test_ipv6_literal_host_header() -> None:
    assert Server("https://[::1]:6443").host_header == "[::1]:6443"
    assert Server("https://[::1]").host_header == "[::1]"
    assert Server("https://example.com:443/prefix/").prefix == "/prefix"


def gzipped(body: bytes, cut: int = 0) -> bytes:
    import gzip

    data = gzip.compress(body)
    data = data[:-cut] if cut else data
    return b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data)


def test_a_gzip_body_is_inflated_as_it_streams(serve) -> None:
    body = b"".join(b'{"metadata":{"name":"pv-%06d"}},' % i for i in range(100_000))
    server = serve(send(gzipped(body), step=65536))
    response = server.pool().get("/x", [], Timeouts(read=5))
    pieces = list(response.stream())
    assert b"".join(pieces) == body and len(pieces) > 1 and max(map(len, pieces)) <= 1024 * 1024


def test_a_gzip_bomb_meets_the_size_bound_after_one_piece(serve) -> None:
    server = serve(send(gzipped(b"\0" * (512 * 1024 * 1024))))  # 512 MiB of zeros in ~0.5 MB on the wire
    with pytest.raises(TooLarge):
        server.pool().get("/x", [], Timeouts(read=5)).read(limit=8 * 1024 * 1024)


@pytest.mark.parametrize("answer, words", [
    (gzipped(b'{"items":[]}' * 100, cut=6), "a gzip body cut short"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 9\r\n\r\nnot gzip!", "a broken gzip body"),
])
def test_a_broken_gzip_body_says_so(serve, answer: bytes, words: str) -> None:
    server = serve(send(answer))
    with pytest.raises(Malformed, match=words):
        server.pool().get("/x", [], Timeouts(read=5)).read()
