"""`kubectl-pvleft serve`: the exporter's process. Connects as every command does (kubeconfig, or in-cluster with
the projected token re-read as it rotates), keeps every analysis live (exporter/live.py), serves /metrics,
/healthz and /livez, and ends within a second of SIGTERM or Ctrl-C.

prometheus_client is the ``serve`` extra: imported here only, so the plugin itself never needs it.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from kubectl_pvleft.cli.durations import go_duration
from kubectl_pvleft.cli.session import connect, describe_api_error
from kubectl_pvleft.errors import ApiError, PvleftError
from kubectl_pvleft.invocation import COMMANDS_BY_NAME, Invocation

DEFAULT_LISTEN = ":9479"
DEFAULT_CENSUS_INTERVAL = "1h"
DEFAULT_STALE_AFTER = "2m"
DEFAULT_MAX_FINDING_SERIES = 1000
DEFAULT_JUDGE_SECONDS = 5.0
ANALYSES = ("leftovers", "pending", "classes", "claims", "snapshots", "attachments")


def judge_every() -> float:
    """Seconds between judgments under churn: 5, a tenth of a typical scrape interval (findings are at most that
    stale) and a fifth of the CPU of judging every second. PVLEFT_SERVE_JUDGE_SECONDS shortens it for tests."""
    try:
        return max(0.0, float(os.environ.get("PVLEFT_SERVE_JUDGE_SECONDS", "") or DEFAULT_JUDGE_SECONDS))
    except ValueError:
        return DEFAULT_JUDGE_SECONDS


def seconds(text: str) -> float:
    return go_duration(text) / 1e9


def address(listen: str) -> tuple[str, int]:
    """``[HOST]:PORT`` (an IPv6 host in brackets) as a socket address; an empty host is every address."""
    host, _, port = listen.rpartition(":")
    return host.strip("[]"), int(port)


def describe(exc: BaseException) -> str:
    if isinstance(exc, ApiError):
        return describe_api_error(exc)
    if isinstance(exc, PvleftError):
        return str(exc)
    return f"internal error ({type(exc).__name__})"  # never the text: it may hold a value


def serve(invocation: Invocation) -> int:
    try:
        from prometheus_client import CollectorRegistry
        from prometheus_client.process_collector import ProcessCollector
    except ImportError:
        raise PvleftError("serve needs the prometheus_client package: pip install 'kubectl-pvleft[serve]'") from None
    from kubectl_pvleft.exporter.live import Live
    from kubectl_pvleft.exporter.metrics import ServeCollector
    from kubectl_pvleft.kube.watch import WatchSettings

    flags = invocation.flags
    api, namespace = connect(invocation.selection, invocation.request_timeout, invocation.request_timeout is not None,
                             interactive=False)  # a daemon never waits for a human at a terminal
    stopping = threading.Event()
    _on_signals(stopping.set)
    try:
        options = invocation.options(namespace)
        # Every analysis, whatever the cluster serves now: a kind it does not serve (the snapshot CRDs) is asked for
        # again now and then, and pvleft_analysis_served says which (exporter/live.py).
        analyses = [(name, COMMANDS_BY_NAME[name].load().follow(options)) for name in ANALYSES]
        census, clouds = _census(options)
        live = Live(api, analyses, WatchSettings.from_env(), describe, census=census, clouds=clouds,
                    census_interval=seconds(flags.get("census_interval") or DEFAULT_CENSUS_INTERVAL),
                    judge_every=judge_every())
        registry = CollectorRegistry()
        ProcessCollector(registry=registry)  # process_resident_memory_bytes, process_cpu_seconds_total
        registry.register(ServeCollector(live, int(flags.get("max_finding_series") or DEFAULT_MAX_FINDING_SERIES)))
        stale_after = seconds(flags.get("stale_after") or DEFAULT_STALE_AFTER)
        server = _server(address(flags.get("listen") or DEFAULT_LISTEN), registry, live, stale_after)
        live.start()
        worker = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="pvleft-serve-http",
                                  daemon=True)
        worker.start()
        host, port = server.server_address[:2]
        print(f"serving /metrics and /healthz on {_shown_address(str(host), port)}", file=sys.stderr, flush=True)
        while not stopping.wait(0.2):
            pass
        server.shutdown()
        server.server_close()
        live.stop()
    finally:
        api.close()
    return 0


def _census(options: Any) -> tuple[Optional[Callable[[list[Any]], Any]], dict[str, str]]:
    """The cloud censuses the flags ask for, as one function of the PVs, and their names -> the metrics' label
    (the short name findings carry as their source); none when no flag asks."""
    from kubectl_pvleft.clouds.census import asked

    clouds = asked(options)
    if not clouds:
        return None, {}
    from kubectl_pvleft.clouds import census

    return (lambda volumes: census.take(options, volumes)), {cloud.NAME: cloud.SOURCE for cloud in clouds}


def _on_signals(stop: Callable[[], None]) -> None:
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), lambda signum, frame: stop())


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def _shown_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host or '*'}:{port}"


def _server(where: tuple[str, int], registry: Any, live: Any, stale_after: float) -> ThreadingHTTPServer:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    class Handler(BaseHTTPRequestHandler):
        server_version = "kubectl-pvleft"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                try:
                    exposition = generate_latest(registry)
                except Exception as exc:  # a bug of ours: one line here, a 500 there, never a traceback
                    _warn(f"/metrics: internal error ({type(exc).__name__})")
                    self._answer(500, "text/plain; charset=utf-8", b"internal error\n")
                    return
                self._answer(200, CONTENT_TYPE_LATEST, exposition)
            elif path == "/healthz":
                ok, why = live.healthy(stale_after)
                self._answer(200 if ok else 503, "text/plain; charset=utf-8", (why + "\n").encode())
            elif path == "/livez":  # the liveness probe: this server answers; no scrape, no stream's health
                self._answer(200, "text/plain; charset=utf-8", b"ok\n")
            else:
                self._answer(404, "text/plain; charset=utf-8", b"not found: /metrics, /healthz and /livez are served\n")

        def _answer(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # one line per scrape would drown the warnings
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in where[0] else socket.AF_INET

        def handle_error(self, request: Any, client_address: Any) -> None:
            # socketserver prints a traceback for anything a handler raises (a scraper that hung up mid-answer)
            failure = sys.exc_info()[0]
            _warn(f"answering {client_address[0]}: {failure.__name__ if failure is not None else 'error'}")

    try:
        return Server(where, Handler)
    except OSError as exc:
        raise PvleftError(f"cannot listen on {_shown_address(*where)}: {exc.strerror or exc}") from None
