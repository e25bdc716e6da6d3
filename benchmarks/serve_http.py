"""Which HTTP server answers serve's /metrics: scrape latency under 200 parallel scrapes, RSS and start-up.

Each candidate runs in a child process of its own on 127.0.0.1, serving one prometheus_client registry that holds
what a busy exporter shows (--max-finding-series 1000 finding series, each with its two timestamps, plus the
counts), and /healthz. The parent opens 200 connections at once, each asking /metrics (gzip accepted, as Prometheus
asks), and times each answer; then 20 half-open connections (a request line and nothing more) are left open
while 200 scrapes run again. Run: python benchmarks/serve_http.py [--rounds 3]

  stdlib      the exporter's server before this work: http.server.ThreadingHTTPServer, a thread per connection
  wsgiref     prometheus_client.start_http_server (wsgiref's server with a thread per connection)
  waitress    waitress 3 with prometheus_client.make_wsgi_app (one I/O thread, 4 workers, connection limit,
              channel timeout, backlog 1024)
  serve       what serve runs: waitress as above, through cli/serve.py's _server (its adjustments, and scrapes
              that ask the same within a second sharing one exposition)
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import statistics
import subprocess
import sys
import threading
import time

CHILD = r"""
import sys, time
started = time.perf_counter()
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
class Findings:
    def collect(self):
        labels = ("analysis", "kind", "namespace", "name", "state")
        info = GaugeMetricFamily("pvleft_finding_info", "findings", labels=labels)
        created = GaugeMetricFamily("pvleft_finding_created_timestamp_seconds", "created", labels=labels)
        for i in range(1000):
            key = ("leftovers", "PersistentVolume", "", f"pvc-{i:08d}-0000-0000-0000-000000000000", "Released")
            info.add_metric(key, 1)
            created.add_metric(key, 1.7e9 + i)
        yield info
        yield created
registry = CollectorRegistry()
registry.register(Findings())
kind = sys.argv[1]
if kind == "stdlib":
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = generate_latest(registry) if self.path == "/metrics" else b"ok\n"
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a): pass
    class Server(ThreadingHTTPServer):
        daemon_threads = True
        def handle_error(self, *a): pass
    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    run = server.serve_forever
elif kind == "wsgiref":
    from prometheus_client import start_http_server
    server, _thread = start_http_server(0, "127.0.0.1", registry)
    port = server.server_address[1]
    run = lambda: time.sleep(3600)
elif kind == "serve":
    import types
    from kubectl_pvleft.cli.serve import _port, _server
    live = types.SimpleNamespace(healthy=lambda stale_after: (True, "ok"))
    server = _server(("127.0.0.1", 0), registry, live, 60.0)
    port = _port(server)
    run = server.run
else:
    from prometheus_client import make_wsgi_app
    from waitress.server import create_server
    server = create_server(make_wsgi_app(registry), host="127.0.0.1", port=0, threads=4, connection_limit=256,
                           channel_timeout=10, backlog=1024, ident="bench")
    port = server.effective_port
    run = server.run
print(port, round((time.perf_counter() - started) * 1000, 1), flush=True)
run()
"""


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def scrape(port: int, timeout: float) -> float:
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise OSError(f"status {response.status}")
    finally:
        connection.close()
    return time.perf_counter() - started


def burst(port: int, n: int = 200, timeout: float = 10.0) -> tuple[list[float], int, int]:
    """Latencies of the answered scrapes, the scrapes refused or reset, and those unanswered after ``timeout``."""
    times: list[float] = []
    failures = [0, 0]
    gate = threading.Barrier(n)

    def one() -> None:
        gate.wait()
        try:
            times.append(scrape(port, timeout))
        except TimeoutError:
            failures[1] += 1
        except OSError:
            failures[0] += 1

    threads = [threading.Thread(target=one) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(times), failures[0], failures[1]


def measure(kind: str) -> dict[str, object]:
    child = subprocess.Popen([sys.executable, "-c", CHILD, kind], stdout=subprocess.PIPE, text=True)
    try:
        port_text, startup_ms = child.stdout.readline().split()  # type: ignore[union-attr]
        port = int(port_text)
        scrape(port, 10)
        idle = rss_kib(child.pid)
        times, failures, late = burst(port)
        half_open = []
        for _ in range(20):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"GET /metrics HTTP/1.1\r\n")  # and never the rest
            half_open.append(sock)
        held_times, held_failures, held_late = burst(port)
        for sock in half_open:
            sock.close()
        peak = rss_kib(child.pid)
    finally:
        child.kill()
        child.wait()

    def pct(values: list[float], p: float) -> float:
        return round(values[min(len(values) - 1, int(len(values) * p))] * 1000, 1) if values else float("nan")

    return {"server": kind, "startup_ms": float(startup_ms), "p50_ms": pct(times, 0.5), "p99_ms": pct(times, 0.99),
            "refused": failures, "late": late, "half_open_p50_ms": pct(held_times, 0.5), "half_open_p99_ms": pct(held_times, 0.99),
            "half_open_refused": held_failures, "half_open_late": held_late, "rss_idle_mib": round(idle / 1024, 1),
            "rss_after_mib": round(peak / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--servers", default="stdlib,wsgiref,waitress,serve")
    args = parser.parse_args()
    for kind in args.servers.split(","):
        rounds = [measure(kind) for _ in range(args.rounds)]
        median = {key: (statistics.median([r[key] for r in rounds]) if isinstance(rounds[0][key], (int, float))
                        else rounds[0][key]) for key in rounds[0]}
        print(json.dumps(median), flush=True)


if __name__ == "__main__":
    main()
