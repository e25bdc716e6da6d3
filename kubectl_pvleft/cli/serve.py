"""`kubectl-pvleft serve`: the exporter's process. Connects as every command does (kubeconfig, or in-cluster with
the projected token re-read as it rotates), keeps every analysis live (exporter/live.py), serves /metrics,
/healthz and /livez, and ends within a second of SIGTERM or Ctrl-C.

prometheus_client and waitress are the ``serve`` extra: imported here only, so the plugin itself never needs them.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Optional, Protocol, Union, runtime_checkable

from kubectl_pvleft.analyses import ANALYSES
from kubectl_pvleft.cli.durations import go_duration
from kubectl_pvleft.cli.session import connect, describe_api_error
from kubectl_pvleft.errors import ApiError, PvleftError, needs_extra
from kubectl_pvleft.invocation import Analysis, Invocation, Options, Row, WithAnalysis
from kubectl_pvleft.text import one_line, shown

if TYPE_CHECKING:  # types only: typeshed's WSGI, the registry; and --cost alone imports the pricing
    from _typeshed import OptExcInfo
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from prometheus_client import CollectorRegistry

    from kubectl_pvleft.clouds.census import CensusOutcome
    from kubectl_pvleft.clouds.cost import PriceFile
    from kubectl_pvleft.clouds.snapshot_census import SnapshotOutcome
    from kubectl_pvleft.exporter import live
    from kubectl_pvleft.exporter.live import Live
    from kubectl_pvleft.records import PersistentVolume

DEFAULT_LISTEN = ":9479"
DEFAULT_CENSUS_INTERVAL = "1h"
DEFAULT_STALE_AFTER = "2m"
DEFAULT_MAX_FINDING_SERIES = 1000
DEFAULT_JUDGE_SECONDS = 5.0


def judge_every() -> float:
    """Seconds between judgments under churn: 5, a tenth of a typical scrape interval (findings are at most that
    stale) and a fifth of the CPU of judging every second. PVLEFT_SERVE_JUDGE_SECONDS shortens it for tests."""
    try:
        return max(0.0, float(os.environ.get("PVLEFT_SERVE_JUDGE_SECONDS", "") or DEFAULT_JUDGE_SECONDS))
    except ValueError:
        return DEFAULT_JUDGE_SECONDS


def max_objects() -> int:
    """What one stream may hold (exporter/live.py's MAX_STREAM_OBJECTS); PVLEFT_SERVE_MAX_OBJECTS sets it, for a
    cluster larger than that or a test that reaches it sooner."""
    from kubectl_pvleft.exporter.live import MAX_STREAM_OBJECTS

    try:
        return max(1, int(os.environ.get("PVLEFT_SERVE_MAX_OBJECTS", "") or MAX_STREAM_OBJECTS))
    except ValueError:
        return MAX_STREAM_OBJECTS


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


def followed(options: Options) -> list[live.Analysis]:
    """Every analysis of the registry (``analyses.ANALYSES``, which a run, a fleet and --watch read too), kept live
    under its command's name, whatever the cluster serves now: a kind it does not serve (the snapshot CRDs) is
    asked for again now and then, and pvleft_analysis_served says which (exporter/live.py)."""
    from kubectl_pvleft.exporter.live import kept_live

    def kept_as(name: str) -> WithAnalysis[live.Analysis]:
        def kept(analysis: Analysis[Row]) -> live.Analysis:
            return kept_live(name, analysis, options)

        return kept

    return [entry.load(options).apply(kept_as(entry.name)) for entry in ANALYSES]


def serve(invocation: Invocation) -> int:
    try:
        import waitress  # noqa: F401  (the HTTP server, asked for here so a missing one is this one line)
        from prometheus_client import CollectorRegistry
        from prometheus_client.process_collector import ProcessCollector
    except ImportError:
        raise PvleftError(needs_extra("serve", "the prometheus_client and waitress packages", "serve")) from None
    from kubectl_pvleft.exporter.live import Live
    from kubectl_pvleft.exporter.metrics import ServeCollector
    from kubectl_pvleft.kube.watch import WatchSettings

    flags = invocation.flags
    prices = None
    if invocation.clouds:  # a bad --price-file: exit 2, before connecting
        from kubectl_pvleft.clouds.census import price_file

        prices = price_file(invocation.values)
    api, namespace = connect(invocation.selection, invocation.request_timeout, invocation.request_timeout is not None,
                             interactive=False)  # a daemon never waits for a human at a terminal
    stopping = threading.Event()
    _on_signals(stopping.set)
    try:
        options = invocation.options(namespace)
        census, clouds = _census(options, prices)
        live = Live(api, followed(options), WatchSettings.from_env(), describe, census=census, clouds=clouds,
                    census_interval=seconds(flags.census_interval or DEFAULT_CENSUS_INTERVAL),
                    judge_every=judge_every(), snapshot_census=_snapshot_census(options, prices),
                    max_objects=max_objects())
        registry = CollectorRegistry()
        ProcessCollector(registry=registry)  # process_resident_memory_bytes, process_cpu_seconds_total
        registry.register(ServeCollector(live, int(flags.max_finding_series or DEFAULT_MAX_FINDING_SERIES)))
        stale_after = seconds(flags.stale_after or DEFAULT_STALE_AFTER)
        where = address(flags.listen or DEFAULT_LISTEN)
        server = _server(where, registry, live, stale_after)
        live.start()
        # A daemon thread: the process ends with the main one, the listening sockets with it.
        threading.Thread(target=server.run, name="pvleft-serve-http", daemon=True).start()
        print(f"serving /metrics and /healthz on {_shown_address(where[0], _port(server))}", file=sys.stderr,
              flush=True)
        while not stopping.wait(0.2):
            pass
        live.stop()
    finally:
        api.close()
    return 0


def _census(options: Options, prices: Optional[PriceFile]
            ) -> tuple[Optional[Callable[[list[PersistentVolume]], CensusOutcome]], dict[str, str]]:
    """The cloud censuses the flags ask for, as one function of the PVs, and their names -> the metrics' label
    (the short name findings carry as their source); none when no flag asks. With --cost, each run prices the
    disks it shows too (pvleft_monthly_cost)."""
    from kubectl_pvleft.clouds.census import asked

    clouds = asked(options)
    if not clouds:
        return None, {}
    from kubectl_pvleft.clouds import census

    return (lambda volumes: census.take(options, volumes, prices)), {cloud.NAME: cloud.SOURCE for cloud in clouds}


def _snapshot_census(options: Options, prices: Optional[PriceFile]
                     ) -> Optional[Callable[[Sequence[object]], SnapshotOutcome]]:
    """With --cost and a cloud's flag: the snapshots behind the snapshot contents with findings, looked up and
    priced on each census interval (as `snapshots --cost` does once), as one function of the analysis's rows."""
    from kubectl_pvleft.clouds import CensusFlags

    if not (CensusFlags.of(options.flags).cost and options.clouds):
        return None
    from kubectl_pvleft.analyses.snapshots import ContentRow, wanted_of
    from kubectl_pvleft.clouds import snapshot_census

    def take(rows: Sequence[object]) -> SnapshotOutcome:
        contents = [row for row in rows if isinstance(row, ContentRow) and row.counted]
        return snapshot_census.take(options, [wanted_of(row) for row in contents], prices)

    return take


def _on_signals(stop: Callable[[], None]) -> None:
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), lambda signum, frame: stop())


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def _shown_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host or '*'}:{port}"


# The HTTP server's bounds (waitress's adjustments; chosen by measurement: BENCHMARKS.md, "The exporter's HTTP
# server"). One I/O thread reads and writes every connection, so a slow reader or a half-open connection holds no
# worker; WORKERS threads build the answers.
WORKERS = 4
# Open connections at most: past this, new ones wait in the backlog until one closes. As many as the open-file limit
# allows less a reserve for the API's connections, files and the backlog (Go raises its soft limit to the hard one
# at start-up, and so does serve): ~1,000 half-open connections once held the default 1,024 and /metrics timed out.
MAX_CONNECTIONS_CAP = 10_000
FILES_RESERVED = 128
BACKLOG = 1024  # the kernel's queue of connections not yet accepted (socketserver's default was 5)
IDLE_SECONDS = 30  # a connection with nothing to say (or a request never finished) is closed after this
MAX_REQUEST_HEADER_BYTES = 64 * 1024  # a scrape's request is a few hundred bytes; there is no request body
# Scrapes that ask the same (Accept, gzip, name[] filters) within this long share one exposition: 200 parallel
# scrapes built it 200 times (25 ms of CPU each at 1,000 findings), and the last answers came seconds late. A
# second is a tenth of the shortest usual scrape interval and well inside a judgment's own pace (judge_every).
SHARE_SECONDS = 1.0
SHARED_ANSWERS = 8  # at most this many kept at once (text, OpenMetrics, each gzipped or not...)


# What serve uses of the server waitress's create_server returns (waitress ships no types): ``run`` serves until the
# process ends, and _port reads the port listened on, which the two kinds of server keep in different places.
@runtime_checkable
class _OneAddress(Protocol):
    """waitress's TcpWSGIServer: listening on one address (or one socket of a _SeveralAddresses)."""

    effective_port: int

    def run(self) -> None: ...


@runtime_checkable
class _SeveralAddresses(Protocol):
    """waitress's MultiSocketServer: listening on several addresses (every address: IPv4 and IPv6), all on one port.
    Its map holds a _OneAddress per socket, and waitress's wake-up triggers, which listen on nothing."""

    map: Mapping[int, object]

    def run(self) -> None: ...


_HTTPServer = Union[_OneAddress, _SeveralAddresses]


def _server(where: tuple[str, int], registry: CollectorRegistry, live: Live, stale_after: float) -> _HTTPServer:
    """waitress serving prometheus_client's WSGI app (gzip when asked, OpenMetrics when Accept asks for it, name[]
    filters) at /metrics, /healthz and /livez; nothing else."""
    import logging

    from prometheus_client import make_wsgi_app
    from waitress.server import create_server

    from kubectl_pvleft.exporter.heap import few_heaps

    # waitress starts its workers when it is created, before Live starts the streams: the heaps are set first, or
    # each worker keeps a heap of its own that the scrapes' expositions fragment (the hour on 902d7dd, 1.16-1.19x).
    few_heaps()
    metrics = _Shared(make_wsgi_app(registry), SHARE_SECONDS)

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            try:
                return metrics(environ, start_response)
            except Exception as exc:  # a bug of ours: one line here, a 500 there, never a traceback
                _warn(f"/metrics: internal error ({type(exc).__name__})")
                return _answer(start_response, "500 Internal Server Error", b"internal error\n")
        if path == "/healthz":
            ok, why = live.healthy(stale_after)
            return _answer(start_response, "200 OK" if ok else "503 Service Unavailable", (why + "\n").encode())
        if path == "/livez":  # the liveness probe: this server answers; no scrape, no stream's health
            return _answer(start_response, "200 OK", b"ok\n")
        return _answer(start_response, "404 Not Found", b"not found: /metrics, /healthz and /livez are served\n")

    quiet = logging.getLogger("waitress")
    quiet.propagate = False  # a client that hangs up, a busy queue: nothing to tell an operator
    quiet.setLevel(logging.ERROR)
    quiet.handlers = [_OneLine()]
    host, port = where
    try:
        server: _HTTPServer = create_server(app, listen=f"[{host}]:{port}" if ":" in host else f"{host or '*'}:{port}",
                             threads=WORKERS, connection_limit=_connection_limit(), backlog=BACKLOG,
                             asyncore_use_poll=True,  # select() stops at descriptor 1,024
                             channel_timeout=IDLE_SECONDS, max_request_header_size=MAX_REQUEST_HEADER_BYTES,
                             max_request_body_size=0, log_socket_errors=False, expose_tracebacks=False,
                             clear_untrusted_proxy_headers=True, ident="kubectl-pvleft")
    except OSError as exc:
        raise PvleftError(f"cannot listen on {_shown_address(*where)}: {exc.strerror or exc}") from None
    return server


def _connection_limit() -> int:
    """Raise the soft open-file limit to the hard one (as Go's runtime does), and keep FILES_RESERVED of it."""
    try:
        import resource
    except ImportError:  # not on this system: waitress's own default
        return 100
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, MAX_CONNECTIONS_CAP + FILES_RESERVED)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return max(16, min(MAX_CONNECTIONS_CAP, soft - FILES_RESERVED))


class _Shared:
    """prometheus_client's WSGI app, its answers shared for ``seconds`` between requests that ask the same, one
    built at a time (the others wait for it: they would only compete for the same CPU)."""

    def __init__(self, app: WSGIApplication, seconds: float) -> None:
        self.app, self.seconds = app, seconds
        self.lock = threading.Lock()
        self.recent: dict[tuple[str, ...], tuple[float, str, list[tuple[str, str]], list[bytes]]] = {}

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        key = (environ.get("REQUEST_METHOD", ""), environ.get("HTTP_ACCEPT", ""),
               environ.get("HTTP_ACCEPT_ENCODING", ""), environ.get("QUERY_STRING", ""))
        with self.lock:
            now = time.monotonic()
            self.recent = {k: v for k, v in self.recent.items() if now - v[0] < self.seconds}
            answer = self.recent.get(key)
            if answer is None:
                built: list[tuple[str, list[tuple[str, str]]]] = []

                def kept(status: str, headers: list[tuple[str, str]], exc_info: Optional[OptExcInfo] = None,
                         /) -> Callable[[bytes], object]:
                    built.append((status, headers))
                    return lambda data: None  # WSGI's write(): prometheus_client's app returns its body instead

                body = self.app(environ, kept)
                answer = (now, built[0][0], list(built[0][1]), list(body))
                if len(self.recent) < SHARED_ANSWERS:  # a client that varies its headers gets no more kept
                    self.recent[key] = answer
        start_response(answer[1], answer[2])
        return answer[3]


def _answer(start_response: StartResponse, status: str, body: bytes) -> list[bytes]:
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))])
    return [body]


class _OneLine(logging.Handler):
    """What the HTTP server has to say when it matters, as one warning line (never a traceback)."""

    def emit(self, record: logging.LogRecord) -> None:
        _warn(f"http server: {one_line(shown(record.getMessage()))}")


def _port(server: _HTTPServer) -> int:
    """The port listened on (the one asked for, or the one the system chose for port 0)."""
    if not isinstance(server, _SeveralAddresses):
        return server.effective_port
    # Several sockets, all on one port; the map also holds waitress's wake-up trigger, which listens on nothing, and
    # its order is the map's, not the sockets'.
    return next(channel.effective_port for channel in server.map.values() if isinstance(channel, _OneAddress))
