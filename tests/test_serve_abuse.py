"""The real exporter on loopback, abused: by its clients (200 parallel scrapes, hundreds of half-open connections,
slow readers, clients that hang up mid-answer) and by a cloud that never stops paging. It answers, stays quiet
about what clients do, and holds its threads and memory. Thread counts and answers are asserted, never timings
(those are in BENCHMARKS.md); the bounds on waiting are generous.

The API server is fake_apiserver.QuietServer (an empty cluster whose watches stay open and silent): what is abused
here is the exporter's own HTTP server and its census, not its reading of Kubernetes (test_serve_cluster.py)."""

from __future__ import annotations

import gzip
import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from fake_apiserver import QuietServer
from loopback import free_port

pytestmark = pytest.mark.integration


class Exporter:
    def __init__(self, tmp: Path, *args: str, env: Optional[dict[str, str]] = None, api: Any = None,
                 ready: bool = True) -> None:
        self.api = api or QuietServer()
        self.port = free_port()
        self.log = tmp / "serve.log"
        command = [sys.executable, "-m", "kubectl_pvleft", "serve", "--kubeconfig",
                   str(self.api.kubeconfig(tmp / "kc")), "--listen", f"127.0.0.1:{self.port}", *args]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self.log.open("w"),
                                        env={**os.environ, "PVLEFT_WATCH_BACKOFF_MAX_SECONDS": "1", **(env or {})})
        deadline = time.monotonic() + 60
        while self.get("/healthz")[0] != (200 if ready else 503):
            assert time.monotonic() < deadline and self.process.poll() is None, self.log.read_text()
            time.sleep(0.1)

    def get(self, path: str, headers: Optional[dict[str, str]] = None, timeout: float = 60.0) -> tuple[int, Any, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request("GET", path, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.headers, response.read()
        except OSError:
            return 0, None, b""
        finally:
            connection.close()

    def status(self, field: str) -> int:
        with open(f"/proc/{self.process.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))

    def stop(self) -> str:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=10)
        self.api.close()
        return self.log.read_text()


@pytest.fixture(scope="module")
def exporter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exporter]:
    exporter = Exporter(tmp_path_factory.mktemp("serve"))
    try:
        yield exporter
    finally:
        if exporter.process.poll() is None:
            exporter.stop()


def test_200_parallel_scrapes_are_all_answered(exporter: Exporter) -> None:
    answers: list[int] = []
    gate = threading.Barrier(200)

    def scrape() -> None:
        gate.wait()
        answers.append(exporter.get("/metrics", {"Accept-Encoding": "gzip"})[0])

    threads = [threading.Thread(target=scrape) for _ in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [200] * 200


def test_half_open_connections_and_slow_readers_do_not_starve_a_scrape(exporter: Exporter) -> None:
    """500 connections that send half a request and wait, 50 that ask for /metrics and never read the answer:
    /metrics and /healthz are answered all the same (one I/O thread holds them all, no worker waits on them)."""
    held: list[socket.socket] = []
    try:
        for _ in range(500):
            sock = socket.create_connection(("127.0.0.1", exporter.port), timeout=10)
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            held.append(sock)
        for _ in range(50):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(("127.0.0.1", exporter.port))
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")  # never read
            held.append(sock)
        status, _, body = exporter.get("/metrics", timeout=30)
        assert status == 200 and b"pvleft_stream_up" in body
        assert exporter.get("/healthz", timeout=30)[0] == 200
    finally:
        for sock in held:
            sock.close()
    assert exporter.status("Threads") < 40  # no thread per connection


def test_clients_that_hang_up_leave_no_line_and_the_answer_is_negotiated(exporter: Exporter) -> None:
    for _ in range(100):
        sock = socket.create_connection(("127.0.0.1", exporter.port), timeout=10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST on close
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.close()
    status, headers, body = exporter.get("/metrics", {"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert b"pvleft_build_info" in gzip.decompress(body)
    status, headers, body = exporter.get("/metrics", {"Accept": "application/openmetrics-text; version=1.0.0"})
    assert status == 200 and headers["Content-Type"].startswith("application/openmetrics-text")
    assert body.endswith(b"# EOF\n")
    status, headers, body = exporter.get("/metrics")
    assert headers["Content-Type"].startswith("text/plain") and "Content-Encoding" not in headers
    assert exporter.get("/nothing")[0] == 404
    time.sleep(0.5)
    log = exporter.log.read_text()
    assert "BrokenPipe" not in log and "Traceback" not in log and "Exception" not in log, log


def test_a_census_against_a_cloud_that_never_stops_paging_keeps_threads_and_memory_bounded(tmp_path: Path) -> None:
    """Each census stops at its time limit (--request-timeout 2s) at the next page, instead of paging on in a
    thread left behind: across many intervals the thread count stays where the first failure left it."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gce_fake import FakeCompute

    compute = FakeCompute(page_size=200).start()
    compute.add_project("pvleft-endless", zones=("europe-west1-b",), regions=("europe-west1",))
    compute.endless = True
    exporter = Exporter(tmp_path, "--project", "pvleft-endless", "--census-interval", "1s", "--request-timeout", "2s",
                        env={"PVLEFT_COMPUTE_ENDPOINT": compute.endpoint})
    try:
        def failures() -> float:
            body = exporter.get("/metrics")[2].decode()
            line = next((x for x in body.splitlines() if x.startswith('pvleft_census_failures_total{cloud="gce"}')),
                        "x 0")
            return float(line.split()[-1])

        threads, rss = [], []
        deadline = time.monotonic() + 240
        while failures() < 8:
            assert time.monotonic() < deadline, exporter.log.read_text()
            if failures() >= 2:
                threads.append(exporter.status("Threads"))
                rss.append(exporter.status("VmRSS"))
            time.sleep(0.5)
        pages = sum(1 for method, _, _ in compute.requests if method == "GET")
    finally:
        log = exporter.stop()
        compute.stop()
    assert pages > 16, pages  # it did page, on and on, each time
    assert threads and max(threads) <= min(threads) + 2, threads  # before: one more thread per interval
    assert max(rss) - min(rss) < 150 * 1024, rss  # KiB; before: 197 -> 1,639 MiB in two minutes
    assert "did not finish within 2s" in log and "Traceback" not in log


def stream_series(body: str, family: str) -> dict[str, float]:
    """{stream label: value} of one pvleft_stream_* family in an exposition."""
    found = {}
    for line in body.splitlines():
        if line.startswith(family + "{"):
            labels, value = line.rsplit(" ", 1)
            found[labels.split('stream="', 1)[1].split('"', 1)[0]] = float(value)
    return found


@pytest.mark.parametrize("mode, reason", [
    ("pages", "passed 50,000 objects"),  # continue tokens without end, 500 new names a page
    ("added", "its watch added past 50,000 objects"),  # ADDED events of new names without end
    ("huge", "an object of more than 16 MiB"),
])
def test_a_hostile_api_server_is_refused_at_each_bound_and_the_other_streams_go_on(tmp_path: Path, mode: str,
                                                                                   reason: str) -> None:
    """serve holds what one stream may hold (PVLEFT_SERVE_MAX_OBJECTS, 50,000 here to be quick; one object at 16
    MiB): a PV stream past it is down, says why once, gives back what it took and is asked again with backoff, while
    every other stream stays up and /metrics answers. Before: a server paging or watching without end pushed serve
    to 2.5 GiB. RSS is asserted against a generous bound (it stays there however long it runs), never timings."""
    from fake_apiserver import HostileServer

    server = HostileServer(mode)
    exporter = Exporter(tmp_path, api=server, ready=mode == "added",
                        env={"PVLEFT_WATCH_BACKOFF_INITIAL_SECONDS": "0.2", "PVLEFT_SERVE_MAX_OBJECTS": "50000"})
    rss, up, listed, others_up = [], [], [], []
    try:
        deadline = time.monotonic() + 300
        while True:
            status, _, body = exporter.get("/metrics")
            assert status == 200, exporter.log.read_text()
            text = body.decode()
            errors = stream_series(text, "pvleft_stream_errors_total").get("persistentvolumes", 0)
            rss.append(exporter.status("VmRSS"))
            up.append(stream_series(text, "pvleft_stream_up")["persistentvolumes"])
            listed.append("persistentvolumes" in stream_series(text, "pvleft_stream_last_list_timestamp_seconds"))
            if errors >= 2:  # the first list of every other stream waited for the gate of one list at a time
                others_up.append(all(v == 1 for k, v in stream_series(text, "pvleft_stream_up").items()
                                     if k != "persistentvolumes" and stream_series(text, "pvleft_stream_served").get(k)))
            if errors >= 5:  # its backoff doubles: the last waits are seconds long, and seen
                break
            assert time.monotonic() < deadline, exporter.log.read_text()
            time.sleep(0.5)
        threads = exporter.status("Threads")
    finally:
        log = exporter.stop()
        server.close()
    assert max(rss) < 400 * 1024, rss  # KiB; before: 2.5 GiB
    assert 0 in up[1:]  # down, once refused (a list whose pages still come is a sign of life, as ever)
    assert mode == "added" or not any(listed)  # never listed on a list it could not hold
    assert others_up and all(others_up), others_up  # the other streams went on
    assert threads < 40, threads
    said = [line for line in log.splitlines() if reason in line]
    assert len(said) == 1, log  # once for the run of refusals
    assert said[0].startswith("warning: cannot read persistentvolumes: ") and "Traceback" not in log
    assert server.served[mode] > (1 if mode == "huge" else 100 if mode == "pages" else 50_000)  # each try sent it all
