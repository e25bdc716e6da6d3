"""HTTPS to the API server: TLS as kubectl decides it, credentials on every request, errors as one line.

Only GET is ever sent. Client keys are loaded into the TLS context from memory (a memfd on Linux, never
a file on disk); elsewhere from a private temporary file that is removed before the first request.
``-v`` logs requests the way kubectl does (6: method, URL, status, time; 8: response bodies, cut; 9: the
curl equivalent), with every credential masked: a header value is never logged.
"""

from __future__ import annotations

import os
import ssl
import sys
import threading
import time
from typing import TYPE_CHECKING, Optional, TextIO, Union
from urllib.parse import urlencode, urlsplit, urlunsplit

from kubectl_pvleft import __version__
from kubectl_pvleft.deadline import Deadline, OutOfTime
from kubectl_pvleft.errors import ApiError, ConfigError, ConnectionFailed, Expired, Forbidden, NotFound
from kubectl_pvleft.kube.credentials import Credentials, Issued, header_safe
from kubectl_pvleft.kube.httpclient import Pool, Response, Server, Timeouts
from kubectl_pvleft.kube.httpframing import ConnectFailed, Cut, HTTPFailure, Malformed, NoAnswer, TimedOut, TLSFailed, TooLarge
from kubectl_pvleft.kube.kubeconfig import TLS, Connection
from kubectl_pvleft.kube.proxy import choose as choose_proxy
from kubectl_pvleft.text import one_line as text_one_line
from kubectl_pvleft.text import shown, warn

if TYPE_CHECKING:
    from collections.abc import Mapping

USER_AGENT = f"kubectl-pvleft/{__version__}"
BODY_LOG_LIMIT = 10 * 1024  # kubectl cuts logged bodies too
DEFAULT_READ_TIMEOUT_SECONDS = 60.0  # see silence_limit()
MAX_RETRIES = 10  # client-go's default for a request answered 429 or 5xx with Retry-After
RETRY_WAIT_CAP = 30.0  # a Retry-After longer than this is waited this long
NO_ANSWER_WAIT = 1.0  # client-go waits 1s before sending again a GET whose connection ended before any answer
# The largest body one answer may have: a List page of 500 objects (kubectl's and our page size) at 512 KiB
# each. A Pod with managedFields is ~5-20 KiB, so this is 25x the largest real pages; etcd refuses objects over
# 1.5 MiB, and a page where every object is near that limit is not a cluster anyone runs. Memory stays bounded
# whatever a server sends (a 2 GiB answer is refused at 256 MiB, never buffered whole).
MAX_BODY_BYTES = 256 * 1024 * 1024


class StreamClosed(Exception):
    """A watch connection ended without an answer: the caller reconnects, it is never "all is well"."""


class RetryBudget:
    """The retries of one request, as client-go counts them: MAX_RETRIES in all, whatever their cause, and
    none whose wait would outlast the request's deadline."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self.used = 0

    def allows(self, wait: float) -> bool:
        left = self.deadline.left()
        return self.used < MAX_RETRIES and (left is None or wait < left)

    def spend(self, wait: float, why: str) -> None:
        self.used += 1
        if verbosity() >= 6:
            log.info('"Retrying" %s after="%gs" attempt=%d', why, wait, self.used)
        time.sleep(wait)


class _RequestLog:
    """kubectl's -v request lines (klog's format) on stderr. Not the logging module: it costs start-up, and
    nothing of ours may go through a root handler someone else installed."""

    def __init__(self) -> None:
        self.level = 0
        self.stream: Optional[TextIO] = None  # None: stderr as it is when a line is written
        self._lock = threading.Lock()  # lists of several kinds log from their own threads

    def info(self, text: str, *args: object) -> None:
        if self.level < 6:
            return
        message = text % args if args else text
        # One record, one line, nothing for the terminal to interpret: a body's line breaks and escape
        # sequences (a proxy's page, a hostile server) are shown escaped.
        message = shown(message)
        now = time.time()
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1_000_000):06d}"
        with self._lock:
            stream = self.stream or sys.stderr
            stream.write(f"I{stamp} {os.getpid():>7} round_trippers.go] {message}\n")
            stream.flush()


log = _RequestLog()


def set_verbosity(level: int, stream: Optional[TextIO] = None) -> None:
    """kubectl's -v: 6 and up log each request on stderr."""
    log.level, log.stream = level, stream


def verbosity() -> int:
    return log.level


def display_url(url: str) -> str:
    """A URL for messages: user:password in the authority is never shown."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        parts = parts._replace(netloc="<redacted>@" + parts.netloc.rsplit("@", 1)[1])
    return urlunsplit(parts)


def tls_context(tls: TLS, cert: Optional[bytes] = None, key: Optional[bytes] = None) -> ssl.SSLContext:
    if tls.insecure:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif tls.ca_data is not None:
        # The cluster's own CA only: loading the system's whole trust store as well costs start-up time.
        try:
            context = ssl.create_default_context(cadata=_ca_text(tls.ca_data))
        except ssl.SSLError as exc:  # an OSError: it must not read as a failed handshake
            raise ConfigError(f"the certificate authority cannot be loaded ({exc.reason or 'not a PEM certificate'})") from None
    else:
        context = ssl.create_default_context()  # no CA named: the system's trust store, as kubectl does
    # An empty file is still a certificate the user asked for: refused, never silently dropped.
    cert = cert if cert is not None else tls.cert_data
    key = key if key is not None else tls.key_data
    if cert is not None or key is not None:
        load_client_certificate(context, cert or b"", key or b"")
    return context


def _ca_text(data: bytes) -> str:
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise ConfigError("the certificate authority is not PEM text") from None
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise ConfigError("the certificate authority holds no PEM certificate")
    return text


def load_client_certificate(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """Hand the PEM pair to OpenSSL without the key ever reaching a disk."""
    try:
        if hasattr(os, "memfd_create"):
            fds = [os.memfd_create("pvleft-tls", getattr(os, "MFD_CLOEXEC", 0)) for _ in (cert, key)]
            try:
                for fd, data in zip(fds, (cert, key), strict=True):
                    _write_all(fd, data)
                context.load_cert_chain(f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}")
            finally:
                for fd in fds:
                    os.close(fd)
            return
        import shutil  # no memfd (not Linux): rare, so imported only here
        import tempfile

        folder = tempfile.mkdtemp(prefix="pvleft-")  # 0700; removed before any request is sent
        try:
            paths = [os.path.join(folder, n) for n in ("cert.pem", "key.pem")]
            for path, data in zip(paths, (cert, key), strict=True):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
            context.load_cert_chain(paths[0], paths[1])
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    except ssl.SSLError as exc:  # its text is OpenSSL's reason, never the material
        raise ConfigError(f"the client certificate and key cannot be loaded ({exc.reason or 'not a matching PEM pair'})") from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Transport:
    """GET requests to one API server with one identity; safe to share between threads."""

    def __init__(self, connection: Connection, request_timeout: Optional[float] = None,
                 timeout_from_flag: bool = False, interactive: Optional[bool] = None) -> None:
        self.connection = connection
        self.server = connection.server
        self.shown_server = display_url(connection.server)
        self.request_timeout = request_timeout
        self.timeout_from_flag = timeout_from_flag
        self.requests = 0  # sent so far (fleet summaries, benchmarks)
        self._credentials = Credentials(connection, interactive, log.info)  # log: an oidc refresh's requests
        self._lock = threading.Lock()
        self._pool: Optional[Pool] = None
        self._pool_cert: Optional[bytes] = None
        self._static_headers = self._impersonation()
        for note in connection.notes:
            warn(note)
        if connection.withheld_from:  # kubectl is silent here; a request that goes out as nobody must not be
            warn(f"{self.shown_server} is not a TLS server: the credentials of {connection.withheld_from} "
                 "are not sent to it (as kubectl does), so requests go out anonymous")

    def _impersonation(self) -> dict[str, Union[str, list[str]]]:
        c = self.connection
        headers: dict[str, Union[str, list[str]]] = {}
        if c.impersonate_user:
            headers["Impersonate-User"] = header_safe(c.impersonate_user, "--as")
        if c.impersonate_uid:
            headers["Impersonate-Uid"] = header_safe(c.impersonate_uid, "--as-uid")
        groups = [header_safe(g, "--as-group") for g in c.impersonate_groups]
        if groups:
            headers["Impersonate-Group"] = groups
        for key, values in c.impersonate_extra:  # one header line per value, as client-go sends them
            headers["Impersonate-Extra-" + extra_key(key)] = [header_safe(v, "as-user-extra") for v in values]
        return headers

    def _pool_for(self, issued: Issued) -> Pool:
        with self._lock:
            if self._pool is None or issued.cert_data != self._pool_cert:
                if self._pool is not None:
                    self._pool.clear()
                server = Server(self.server)
                context = tls_context(self.connection.tls, issued.cert_data, issued.key_data) if server.tls else None
                proxy = choose_proxy(self.server, self.connection.proxy_url, os.environ)
                if proxy is not None:
                    if not server.tls and proxy.forwards_plain_http() and proxy.username is not None:
                        raise ConfigError(f"the plain-HTTP server {self.shown_server} would be reached through the "
                                          f"proxy {proxy.display} ({proxy.origin}) with its credentials, "
                                          "which this plugin does not send to a forwarding proxy")
                    if verbosity() >= 6:
                        log.info('"Proxy" url="%s" from="%s" server="%s"', proxy.display, proxy.origin,
                                 self.shown_server)
                self._pool = Pool(server, context, self.connection.tls.server_name, proxy)
                self._pool_cert = issued.cert_data
            return self._pool

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.clear()

    def _headers(self, accept: str, issued: Issued, streamed: bool = False) -> list[tuple[str, str]]:
        headers = [("Accept", accept), ("User-Agent", USER_AGENT)]
        # gzip as kubectl asks for it, unless the cluster says disable-compression. Not for a watch: its events
        # are small lines that must arrive as they happen, and a custom resource's gzipped watch stream was seen
        # here to hold its events back (tests/test_snapshots_cluster.py), so the stream stays plain.
        if not self.connection.disable_compression and not streamed:
            headers.append(("Accept-Encoding", "gzip"))
        if issued.authorization:
            headers.append(("Authorization", issued.authorization))
        for name, value in self._static_headers.items():
            # one header line per group, as the server expects
            headers.extend((name, one) for one in (value if isinstance(value, list) else [value]))
        return headers

    def open(self, path: str, params: dict[str, str], accept: str, verb: str,
             timeouts: Optional[Timeouts] = None) -> Response:
        """Send one GET; a response with status >= 400 is raised as an ApiError (its body read and closed)."""
        target = path + ("?" + urlencode(params) if params else "")
        # One deadline for the whole request (--request-timeout): the exec plugin's run, connecting, TLS, every
        # read and the waits between retries all take their time from it, so together they cannot outlast it.
        deadline = Deadline(self.request_timeout)
        try:
            return self._open(target, path, accept, verb, timeouts, deadline)
        except OutOfTime:
            raise self.connection_failed(TimedOut("the request took longer than allowed")) from None

    def _open(self, target: str, path: str, accept: str, verb: str, timeouts: Optional[Timeouts],
              deadline: Deadline) -> Response:
        issued = self._credentials.issue(deadline=deadline)
        timeouts = timeouts or self._timeouts(deadline)
        budget = RetryBudget(deadline)
        response = self._answered(target, accept, issued, timeouts, verb == "watch", budget)
        if response.status == 401 and (issued.expires is not None or self.connection.auth.exec is not None):
            # An exec credential or rotated token that the server no longer takes: fetch a fresh one, once.
            self._drain(response)
            response = self._answered(target, accept, self._credentials.issue(force=True, deadline=deadline),
                                      self._timeouts(deadline) if deadline.bounded else timeouts, verb == "watch",
                                      budget)
        while (wait := self._retry_after(response, deadline)) is not None and budget.allows(wait):
            # client-go retries a GET that is answered 429, or 5xx with Retry-After, up to 10 times, waiting what the
            # server asks (here at most RETRY_WAIT_CAP, and never past --request-timeout).
            self._drain(response)
            budget.spend(wait, f'status="{response.status}"')
            response = self._answered(target, accept, self._credentials.issue(deadline=deadline),
                                      self._timeouts(deadline) if deadline.bounded else timeouts, verb == "watch",
                                      budget)
        if response.status >= 400:
            body = self._drain(response)
            raise api_error(response.status, body, verb, path)
        return response

    def _retry_after(self, response: Response, deadline: Deadline) -> Optional[float]:
        """How long to wait before sending again, or None when the answer is not one to retry."""
        if response.status != 429 and response.status < 500:
            return None
        text = (response.headers.get("retry-after") or "").strip()
        if not text.isascii() or not text.isdigit():  # client-go reads whole seconds only
            return None
        wait = min(float(text), RETRY_WAIT_CAP)
        left = deadline.left()
        if left is not None and wait >= left:
            return None  # the wait would outlast the request: the server's answer is the error
        return wait

    def _answered(self, target: str, accept: str, issued: Issued, timeouts: Timeouts, streamed: bool,
                  budget: RetryBudget) -> Response:
        """_send, sent again while the connection is reset or closed before any byte of the answer, as client-go
        sends a GET again (a watch too: it has delivered nothing yet). A connection that ends later, mid-answer, is
        never retried here: the caller has part of an answer, and a retry could make it a wrong one."""
        while True:
            try:
                return self._send(target, accept, issued, timeouts, streamed)
            except NoAnswer as exc:
                if not budget.allows(NO_ANSWER_WAIT):
                    raise self.connection_failed(exc) from None
                budget.spend(NO_ANSWER_WAIT, f'error="{exc}"')
                issued = self._credentials.issue(deadline=budget.deadline)
                timeouts = self._timeouts(budget.deadline) if budget.deadline.bounded else timeouts

    @staticmethod
    def _drain(response: Response) -> bytes:
        try:
            return response.read(1024 * 1024)  # an error's Status: only its message is shown
        except HTTPFailure:
            return b""

    def _send(self, target: str, accept: str, issued: Issued, timeouts: Timeouts,
              streamed: bool = False) -> Response:
        headers = self._headers(accept, issued, streamed)
        url = self.server + target
        started = time.monotonic()
        if verbosity() >= 9:
            import json  # -v 9 only

            log.info("curl -v -XGET %s '%s'", " ".join(f"-H {json.dumps(f'{k}: {_masked(k, v)}')}"
                                                      for k, v in headers), display_url(url))
        try:
            response = self._pool_for(issued).get(target, headers, timeouts)
        except NoAnswer:
            raise  # _answered may send it again
        except HTTPFailure as exc:
            raise self.connection_failed(exc) from None
        with self._lock:  # lists of several kinds are read at once, from their own threads
            self.requests += 1
        if verbosity() >= 6:
            log.info('"Response" verb="GET" url="%s" status="%d %s" milliseconds=%d', display_url(url),
                     response.status, response.reason or "", (time.monotonic() - started) * 1000)
        return response

    def read(self, response: Response) -> bytes:
        try:
            body = response.read(MAX_BODY_BYTES)
        except HTTPFailure as exc:
            raise self.connection_failed(exc) from None
        if verbosity() >= 8:
            shown = body[:BODY_LOG_LIMIT].decode("utf-8", "replace")
            log.info('"Response Body" body=%s%s', shown, " [truncated]" if len(body) > BODY_LOG_LIMIT else "")
        return body

    def _timeouts(self, deadline: Deadline) -> Timeouts:
        if deadline.bounded:
            left = deadline.wait()  # what the exec plugin and earlier tries left of --request-timeout
            assert left is not None  # a bounded deadline's wait is never None
            return Timeouts(connect=left, total=left)
        return Timeouts(connect=30.0, read=silence_limit())

    def connection_failed(self, exc: BaseException) -> ConnectionFailed:
        if isinstance(exc, TLSFailed):
            return ConnectionFailed(f"TLS handshake with {self.shown_server} failed: {_short(exc.reason)}")
        if isinstance(exc, ConnectFailed):
            return ConnectionFailed(
                f"the connection to the server {self.shown_server} was refused or unreachable - "
                "did you specify the right host or port?")
        if isinstance(exc, TimedOut):
            hint = " (--request-timeout)" if self.timeout_from_flag else ""
            return ConnectionFailed(f"the server {self.shown_server} did not answer in time{hint}")
        if isinstance(exc, Cut):
            return ConnectionFailed(f"the server {self.shown_server} closed the connection mid-answer")
        if isinstance(exc, Malformed):
            return ConnectionFailed(f"the server {self.shown_server} sent a broken HTTP answer: {exc}")
        if isinstance(exc, TooLarge):
            return ConnectionFailed(f"the server {self.shown_server} sent {exc}, more than any API server sends")
        return ConnectionFailed(f"cannot talk to the server {self.shown_server}: {type(exc).__name__}")


# RFC 7230 token characters but '%': what client-go leaves as it is in an Impersonate-Extra- header name.
_LEGAL_HEADER_KEY = frozenset(b"!#$&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def extra_key(key: str) -> str:
    """client-go's headerKeyEscape: every byte of the UTF-8 key that may not stand in a header name is %XX."""
    return "".join(chr(b) if b in _LEGAL_HEADER_KEY else f"%{b:02X}" for b in key.encode("utf-8"))


def silence_limit() -> float:
    """Without --request-timeout, how long one read may wait for a byte (per read, not in total) before a
    server that took the connection and says nothing is given up on: a watch's first list against it must
    fail like any command, not hang. kubectl's discovery gives up after 32s. PVLEFT_READ_TIMEOUT_SECONDS
    shortens it (tests)."""
    try:
        return max(0.1, float(os.environ.get("PVLEFT_READ_TIMEOUT_SECONDS", "") or DEFAULT_READ_TIMEOUT_SECONDS))
    except ValueError:
        return DEFAULT_READ_TIMEOUT_SECONDS


def _masked(name: str, value: str) -> str:
    """kubectl's -v=9 masks the credential part of Authorization (and any other secret header)."""
    if name.lower() in ("authorization", "proxy-authorization"):
        scheme = value.split(" ", 1)[0]
        return f"{scheme} <masked>"
    return value


def _short(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else "no detail"


def one_line(text: str, limit: int = 500) -> str:
    """A server's message as one line: a multi-line body must not become several stderr lines."""
    flat = text_one_line(text)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def api_error(status: int, body: bytes, verb: str, path: str) -> ApiError:
    import json  # error answers only

    reason, message = "", ""
    details: dict[str, object] = {}
    try:
        doc = json.loads(body)
        if isinstance(doc, dict):
            reason = doc["reason"] if isinstance(doc.get("reason"), str) else ""
            message = doc["message"] if isinstance(doc.get("message"), str) else ""
            details = doc["details"] if isinstance(doc.get("details"), dict) else {}
    except ValueError:
        message = body.decode("utf-8", "replace")
        if message.lstrip().startswith("<"):  # a proxy's HTML page: its markup says nothing
            message = ""
    if not message.strip() and not reason:  # kubectl's words for an answer without a Status
        message = f"the server responded with the status code {status} but did not return more information"
    return error_for(status, reason, one_line(message), verb, path, details)


def error_for(status: int, reason: str, message: str, verb: str, path: str,
              details: Optional[Mapping[str, object]] = None) -> ApiError:
    kind = {403: Forbidden, 404: NotFound, 410: Expired}.get(status, ApiError)
    return kind(status, reason, one_line(message), verb, path, details)
