"""A fuzz test of the HTTP framing: random and mutated status lines, headers and chunk streams from a loopback
server. Whatever comes, the client answers with a body or with one of its own HTTPFailure errors (which the
transport turns into one error line): never another exception, never more memory than the bounds allow, never
past its deadline. A fixed budget (examples and a seed per run from hypothesis' database-less settings) keeps it a
few seconds of CI."""

from __future__ import annotations

import socket
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_pvleft.kube.httpclient import Pool, Server, Timeouts
from kubectl_pvleft.kube.httpframing import HTTPFailure
from loopback import TcpFake, read_head

LIMIT = 1024 * 1024  # the body bound the test reads with (the product's is larger; the mechanism is the same)


class OneShot(TcpFake):
    """Serves one answer (bytes) to each connection, then closes it."""

    answer = b""

    def connection(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(2)
                read_head(conn)
                conn.sendall(self.answer)
            except OSError:
                pass


@pytest.fixture(scope="module")
def server():
    with OneShot() as one:
        yield one


HEX = st.text("0123456789abcdefABCDEF", min_size=1, max_size=20)
NOISE = st.binary(max_size=64)
SIZE_LINE = st.one_of(HEX.map(str.encode), NOISE, st.sampled_from([b"-6", b"+6", b" 6", b"6 6", b"0x6", b"", b";x",
                                                                   b"\xd9\xa6", b"ffffffffffffffffff"]))


@st.composite
def chunked_body(draw) -> bytes:
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        data = draw(st.binary(max_size=300))
        size = b"%x" % len(data) if draw(st.booleans()) else draw(SIZE_LINE)
        parts.append(size + draw(st.sampled_from([b"", b";ext=1"])) + b"\r\n" + data +
                     draw(st.sampled_from([b"\r\n", b"\n", b"", b"XX"])))
    parts.append(draw(st.sampled_from([b"0\r\n\r\n", b"0\r\nTrailer: x\r\n\r\n", b"", b"0\r\n"])))
    return b"".join(parts)


HEADER = st.one_of(
    st.sampled_from([b"Transfer-Encoding: chunked", b"Transfer-Encoding: gzip, chunked", b"Content-Length: 5",
                     b"Content-Length: -1", b"Content-Length: \xc2\xb2", b"Content-Length: 99999999999999999999",
                     b"Content-Encoding: gzip", b"Connection: close", b"X: y", b"broken", b"Name : v"]),
    st.binary(max_size=80).filter(lambda b: b"\r\n" not in b),
)
STATUS = st.one_of(st.sampled_from([b"HTTP/1.1 200 OK", b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK",
                                    b"HTTP/1.0 204 No Content", b"HTTP/1.1 2000 OK", b"SSH-2.0-x", b"HTTP/1.1 20 OK"]),
                   st.binary(max_size=40).filter(lambda b: b"\r\n" not in b))


@st.composite
def answer(draw) -> bytes:
    head = draw(STATUS) + b"\r\n" + b"".join(h + b"\r\n" for h in draw(st.lists(HEADER, max_size=6))) + b"\r\n"
    body = draw(st.one_of(chunked_body(), st.binary(max_size=600)))
    raw = head + body
    if draw(st.booleans()):  # a mutation: a byte changed, cut, or doubled somewhere
        at = draw(st.integers(0, max(0, len(raw) - 1)))
        how = draw(st.sampled_from(["flip", "cut", "dup"]))
        raw = (raw[:at] + bytes([raw[at] ^ 0x20]) + raw[at + 1:] if how == "flip" and raw else
               raw[:at] if how == "cut" else raw[:at] + raw[at:at + 50] * 2 + raw[at + 50:])
    return raw


@settings(max_examples=300, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(raw=answer())
def test_any_answer_is_a_body_or_one_of_the_clients_own_errors(server: OneShot, raw: bytes) -> None:
    server.answer = raw
    pool = Pool(Server(f"http://127.0.0.1:{server.port}"), None, None)
    started = time.monotonic()
    try:
        body = pool.get("/x", [], Timeouts(connect=2, read=1, total=3)).read(limit=LIMIT)
        assert len(body) <= LIMIT
    except HTTPFailure:
        pass  # the transport's one line; any other exception fails the test
    finally:
        pool.clear()
    assert time.monotonic() - started < 5  # within the request's deadline (3 s), with room for a loaded machine
