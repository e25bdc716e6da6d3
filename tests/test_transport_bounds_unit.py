"""The client's bounds, tested where the transport applies them (kube/transport.py, kube/httpclient.py): a body over
the bound, a head over 1 MiB in fewer than 1,000 lines, a Retry-After of several seconds, and a retry budget that
ends however long a server keeps answering 429. Each test fails if its bound is removed from the read path (the
framing pieces have tests of their own in test_http_unit.py; these go through Transport.open and Transport.read).

client-go is the reference for the retries: k8s.io/client-go rest/request.go (Request.request, checkWait: a GET
answered 429, or 5xx with Retry-After, waits the whole seconds it says and is sent again, 10 times at most)."""

from __future__ import annotations

import gzip
import io
import socket
import threading
import time
from pathlib import Path

import pytest

from fake_apiserver import EMPTY_LIST, http_answer
from kubectl_pvleft.errors import ApiError, ConnectionFailed
from kubectl_pvleft.kube import transport as transport_module
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from kubectl_pvleft.kube.transport import MAX_RETRIES, Transport, set_verbosity
from test_credentials_unit import kubeconfig

PVCS = "/api/v1/persistentvolumeclaims"
BOUND = 64 * 1024  # MAX_BODY_BYTES for these tests: 256 MiB would make each one slow


def transport_for(url: str, tmp_path: Path, timeout: float | None = None) -> Transport:
    return Transport(load_connection(Selection(kubeconfig=kubeconfig(tmp_path / "kc", url, {}))), timeout)


def get(transport: Transport) -> bytes:
    try:
        return transport.read(transport.open(PVCS, {}, "application/json", "list"))
    finally:
        transport.close()


def chunked(body: bytes, piece: int = 8192, encoding: str = "") -> bytes:
    head = ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            f"{encoding}Connection: close\r\n\r\n").encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + piece]), body[i:i + piece]) for i in range(0, len(body), piece))
    return head + chunks + b"0\r\n\r\n"


def a_list_of(size: int) -> bytes:
    filler = b" " * (size - len(EMPTY_LIST))
    return EMPTY_LIST[:-1] + filler + EMPTY_LIST[-1:]  # a valid list, padded with blanks


@pytest.mark.parametrize("framing", ["content-length", "chunked", "gzip"])
def test_a_body_over_the_bound_is_an_error_through_the_transport(fault_server, tmp_path: Path, monkeypatch, framing) -> None:
    running, faults = fault_server
    monkeypatch.setattr(transport_module, "MAX_BODY_BYTES", BOUND)
    big = a_list_of(4 * BOUND)
    faults["big"] = lambda conn: conn.sendall({
        "content-length": http_answer(200, big),
        "chunked": chunked(big),
        "gzip": chunked(gzip.compress(big), encoding="Content-Encoding: gzip\r\n"),  # 256 KiB from a few hundred bytes
    }[framing])
    faults["fits"] = lambda conn: conn.sendall(chunked(a_list_of(BOUND // 2)))
    with pytest.raises(ConnectionFailed, match=r"more than 0 MiB|bytes \(more than"):
        get(transport_for(running.url_for("big"), tmp_path))
    assert len(get(transport_for(running.url_for("fits"), tmp_path))) == BOUND // 2


def test_a_head_over_1_mib_in_fewer_than_1000_lines_is_an_error(fault_server, tmp_path: Path) -> None:
    running, faults = fault_server
    line = "X-Padding: " + "p" * 2000 + "\r\n"  # 2 KiB a line, far under the one-line bound of 256 KiB
    over = "".join(line for _ in range(600))  # 1.2 MiB in 600 lines: only the head's total is over
    under = "".join(line for _ in range(400))  # 0.8 MiB: read
    faults["over"] = lambda conn: conn.sendall(http_answer(200, EMPTY_LIST, extra=over))
    faults["under"] = lambda conn: conn.sendall(http_answer(200, EMPTY_LIST, extra=under))
    with pytest.raises(ConnectionFailed, match="headers over 1000 lines or 1024 KiB"):
        get(transport_for(running.url_for("over"), tmp_path))
    assert get(transport_for(running.url_for("under"), tmp_path)) == EMPTY_LIST


def test_a_retry_after_of_several_seconds_is_waited(fault_server, tmp_path: Path) -> None:
    """client-go waits the whole seconds a 429 says (checkWait), and then sends the request again."""
    running, faults = fault_server
    answers = iter([http_answer(429, b'{"kind":"Status","code":429}', extra="Retry-After: 2\r\n")])
    faults["busy"] = lambda conn: conn.sendall(next(answers, http_answer(200, EMPTY_LIST)))
    log = io.StringIO()
    set_verbosity(6, log)
    try:
        started = time.monotonic()
        body = get(transport_for(running.url_for("busy"), tmp_path))
        waited = time.monotonic() - started
    finally:
        set_verbosity(0)
    assert body == EMPTY_LIST and len(running.seen("busy")) == 2
    assert waited >= 2.0, waited  # the server's word is kept, not shortened
    assert 'after="2s"' in log.getvalue()


def test_the_retry_budget_ends_a_server_that_answers_429_forever(fault_server, tmp_path: Path) -> None:
    """Ten retries in all, then the server's 429 is the error. The server stops asking for retries after 50
    requests, so a client without a budget fails this test at once instead of at the suite's timeout."""
    running, faults = fault_server
    lock, sent = threading.Lock(), [0]

    def busy(conn: socket.socket) -> None:
        with lock:
            sent[0] += 1
            endless = sent[0] <= 50
        retry = "Retry-After: 0\r\n" if endless else ""
        conn.sendall(http_answer(429, b'{"kind":"Status","code":429,"reason":"TooManyRequests"}', extra=retry))

    faults["busy"] = busy
    with pytest.raises(ApiError) as caught:
        get(transport_for(running.url_for("busy"), tmp_path))
    assert caught.value.status == 429
    assert len(running.seen("busy")) == 1 + MAX_RETRIES
