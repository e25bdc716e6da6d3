"""A GET whose connection is reset or closed before any byte of the answer is sent again, as client-go does.

client-go (rest/request.go) retries a GET when the error is a connection reset or a probable EOF
(`net.IsConnectionReset`, `net.IsProbableEOF`), up to 10 times, 1 s apart, within the request's context;
once an answer has begun, a broken one is the caller's error, never retried. kubectl against a server that
resets every connection logs `"Got a Retry-After response" delay="1s" attempt=10` and then gives up.
Here the scripted TLS server of fake_apiserver resets (RST) or closes (FIN) connections after reading the
request, so what reaches the transport is exactly that: no status line, no byte.
"""

from __future__ import annotations

import io
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cli_runner import invoke
from fake_apiserver import EMPTY_LIST, close_at_once, http_answer
from kubectl_pvleft.errors import ConnectionFailed
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from kubectl_pvleft.kube.transport import MAX_RETRIES, Transport, set_verbosity
from test_credentials_unit import kubeconfig

PVCS = "/api/v1/persistentvolumeclaims"


def reset(conn: socket.socket) -> None:
    """An RST, not a FIN: the socket is closed with a zero linger time (by the server's `with conn`)."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def scripted(*first: Callable[[socket.socket], None],
             then: Callable[[socket.socket], None]) -> Callable[[socket.socket], None]:
    """A fault that plays `first` on the first connections, one each, then `then` on every later one."""
    steps, lock = list(first), threading.Lock()

    def fault(conn: socket.socket) -> None:
        with lock:
            step = steps.pop(0) if steps else then
        step(conn)
    return fault


def answer_list(conn: socket.socket) -> None:
    conn.sendall(http_answer(200, EMPTY_LIST))


def too_many(conn: socket.socket) -> None:
    conn.sendall(http_answer(429, b'{"kind":"Status","code":429,"reason":"TooManyRequests"}', extra="Retry-After: 0\r\n"))


def test_connections_reset_or_closed_before_any_answer_are_retried_and_the_list_succeeds(fault_server, tmp_path: Path) -> None:
    running, faults = fault_server
    faults["flaky"] = scripted(reset, close_at_once, then=answer_list)
    result = invoke("claims", "-A", "--kubeconfig", kubeconfig(tmp_path / "kc", running.url_for("flaky"), {}), "-v", "6")
    assert result.code == 0, result
    retries = [line for line in result.stderr.splitlines() if '"Retrying"' in line]
    assert [line.split("round_trippers.go] ", 1)[1] for line in retries] == [
        '"Retrying" error="the server reset the connection before answering" after="1s" attempt=1',
        '"Retrying" error="the server closed the connection before answering" after="1s" attempt=2',
    ]
    assert len(running.seen("flaky")) == 4  # two that got no answer, then the CSIDrivers' list and the claims'


def test_after_the_retry_budget_it_is_one_error_line_and_429s_spend_the_same_budget(fault_server, tmp_path: Path) -> None:
    running, faults = fault_server
    # Nine 429s spend nine of the ten retries; the first reset spends the tenth, the second is the error.
    faults["busy-then-down"] = scripted(*[too_many] * (MAX_RETRIES - 1), then=reset)
    url = running.url_for("busy-then-down")
    result = invoke("claims", "-A", "--kubeconfig", kubeconfig(tmp_path / "kc", url, {}))
    assert (result.code, result.stdout, result.stderr) == (1, "", f"error: the server {url} closed the connection "
                                                                  "mid-answer\n")
    assert len(running.seen("busy-then-down")) == 1 + MAX_RETRIES


def transport_for(url: str, tmp_path: Path, timeout: float | None = None) -> Transport:
    return Transport(load_connection(Selection(kubeconfig=kubeconfig(tmp_path / "kc", url, {}))), timeout)


@pytest.mark.parametrize("answer_begins", [
    b"HTTP/1.1 2",  # part of a status line
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n" + EMPTY_LIST[:40],
])
def test_a_reset_after_the_answer_began_is_an_error_never_a_retry(fault_server, tmp_path: Path, answer_begins: bytes) -> None:
    running, faults = fault_server

    def begin_then_reset(conn: socket.socket) -> None:
        conn.sendall(answer_begins)
        time.sleep(0.2)  # read by the client before the RST, which would drop what it had not read yet
        reset(conn)

    faults["half"] = scripted(then=begin_then_reset)
    transport = transport_for(running.url_for("half"), tmp_path)
    with pytest.raises(ConnectionFailed) as caught:
        transport.read(transport.open(PVCS, {}, "application/json", "list"))
    transport.close()
    assert str(caught.value) == f"the server {running.url_for('half')} closed the connection mid-answer"
    assert len(running.seen("half")) == 1  # sent once: a second answer could not be joined to the first


def test_no_retry_whose_wait_would_outlast_the_request_timeout(fault_server, tmp_path: Path) -> None:
    running, faults = fault_server
    faults["down"] = scripted(then=reset)
    log = io.StringIO()
    set_verbosity(6, log)
    try:
        transport = transport_for(running.url_for("down"), tmp_path, timeout=0.5)  # less than client-go's 1 s wait
        with pytest.raises(ConnectionFailed) as caught:
            transport.open(PVCS, {}, "application/json", "list")
        transport.close()
    finally:
        set_verbosity(0)
    assert str(caught.value) == f"the server {running.url_for('down')} closed the connection mid-answer"
    assert len(running.seen("down")) == 1 and '"Retrying"' not in log.getvalue()


def test_a_watch_that_has_delivered_nothing_is_retried_like_a_list(fault_server, tmp_path: Path) -> None:
    running, faults = fault_server
    faults["watch"] = scripted(reset, then=lambda conn: conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n"))
    transport = transport_for(running.url_for("watch"), tmp_path)
    response = transport.open(PVCS, {"watch": "1"}, "application/json", "watch")
    assert response.status == 200 and transport.read(response) == b""
    transport.close()
    assert len(running.seen("watch")) == 2
