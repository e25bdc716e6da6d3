"""A scripted HTTP server on 127.0.0.1 that answers with wire JSON, for error paths a healthy control plane
will not produce on demand (an expired continue token). It speaks HTTP to our real HTTP stack: nothing
in the client is patched."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import yaml

from loopback import LoopbackFake, Reply, Request, TcpFake, json_reply, read_head

Handler = Callable[[str, dict[str, list[str]]], tuple[int, dict]]


class FakeAPIServer(LoopbackFake):
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[str] = []

    def serve(self, request: Request) -> Reply:
        self.requests.append(request.target)
        return json_reply(*self.handler(request.path, request.params))

    def kubeconfig(self, path: Path) -> Path:
        return plain_kubeconfig(path, "fake", self.endpoint)


def plain_kubeconfig(path: Path, name: str, server: str, *more_contexts: str) -> Path:
    """A kubeconfig for a plain-HTTP server: the context ``name`` (the current one, its cluster and user named
    the same), and ``more_contexts`` on that cluster and user; no user credential (kubectl would send none)."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": name, "user": {}}],
        "contexts": [{"name": n, "context": {"cluster": name, "user": name}} for n in (name, *more_contexts)],
    }))
    return path


def status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


# The apiserver's answer when etcd compacted past a continue token's snapshot (storage/etcd3).
CONTINUE_EXPIRED = status(
    410, "Expired",
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list.")


# -- faults below HTTP's status line --------------------------------------------------------------------

class ScriptedServer(TcpFake):
    """A raw-socket HTTP server for answers no apiserver gives on purpose: bodies that are not lists, pages
    of HTML, truncated bodies, a closed connection, silence. One server serves many faults: the first path
    segment picks the fault (point a kubeconfig's server at ``url_for(name)``), so a whole module shares it;
    ``silent`` is always one (``hold``: TLS done, the request read, nothing answered). Every request is recorded
    with its headers, to check what reached the server (and as whom)."""

    def __init__(self, faults: dict[str, Callable[[socket.socket], None]], tls: bool = True) -> None:
        # TLS by default: the plugin sends no credential to a server that is not TLS (as kubectl), and these
        # tests must see what a credential does (tls_material.ca_data() is what a kubeconfig trusts).
        self.tls = tls
        self.faults = faults
        self.requests: list[tuple[str, dict[str, str]]] = []
        self._by_fault: dict[str, list[tuple[str, dict[str, str]]]] = {}  # seen() without a scan of them all
        self._released = threading.Event()  # ends the handlers that hold a connection open

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def url_for(self, fault: str) -> str:
        return f"{self.url}/{fault}"

    def seen(self, fault: str) -> list[tuple[str, dict[str, str]]]:
        return list(self._by_fault.get(fault, ()))

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self._released.set()
        self.stop()

    def hold(self, conn: socket.socket) -> None:
        """Answer nothing, keep the connection open until the server stops."""
        self._released.wait(60)

    def connection(self, conn: socket.socket) -> None:
        if self.tls:
            from tls_material import server_context
            try:
                conn.settimeout(10)
                conn = server_context().wrap_socket(conn, server_side=True)
            except (OSError, ValueError):  # a client that gave up during the handshake
                conn.close()
                return
        with conn:
            conn.settimeout(10)
            try:
                read = read_head(conn)
            except OSError:
                return
            if read is None:
                return
            head = read[0].decode("latin-1").split("\r\n")
            path = head[0].split(" ")[1] if len(head[0].split(" ")) > 1 else ""
            headers = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            self.requests.append((path, headers))
            if path.startswith("/") and "/" in path[1:]:  # the requests seen(fault) names: /<fault>/...
                self._by_fault.setdefault(path[1:].split("/", 1)[0], []).append((path, headers))
            name = path.split("/")[1] if path.count("/") >= 1 else ""
            fault = self.faults.get(name, self.hold if name == "silent" else None)
            try:
                if fault is None:
                    conn.sendall(http_answer(404, b"no such fault", "text/plain"))
                else:
                    fault(conn)
            except OSError:
                pass


def http_answer(status: int, body: bytes, content_type: str = "application/json", *, length: Optional[int] = None,
                extra: str = "") -> bytes:
    """A whole HTTP/1.1 response; ``length`` may claim more bytes than the body has (a truncated answer)."""
    reason = {200: "OK", 302: "Found", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway"}.get(status, "Status")
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n{extra}\r\n"
            ).encode("latin-1") + body


def answer(status: int, body: bytes, content_type: str = "application/json", **kw: Any) -> Callable[[socket.socket], None]:
    data = http_answer(status, body, content_type, **kw)
    return lambda conn: conn.sendall(data)


# A list with nothing in it, as an API server answers it.
EMPTY_LIST = b'{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}'


def close_at_once(conn: socket.socket) -> None:
    conn.shutdown(socket.SHUT_RDWR)


class QuietServer(TcpFake):
    """Lists answered at once (empty, resourceVersion 5); watches answered 200 and then silent until cut."""

    def __init__(self) -> None:
        self.held: list[socket.socket] = []
        self.hold_lists = threading.Event()  # set: lists are answered only once it is cleared
        self.closed = threading.Event()
        self.watches = 0
        self.start()

    def connection(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            read = read_head(conn)
        except OSError:
            read = None
        if read is None:
            conn.close()
            return
        target = read[0].split(b" ", 2)[1].decode()
        if "watch=true" in target:
            self.watches += 1
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
            self.held.append(conn)  # silent until the server goes away
            return
        while self.hold_lists.is_set() and not self.closed.is_set():
            time.sleep(0.02)
        body = json.dumps({"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "5"},
                           "items": []}).encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        conn.close()

    def go_away(self) -> None:
        self.stop()
        for conn in self.held:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        self.held.clear()

    def come_back(self) -> None:
        self.start(self.port)

    def close(self) -> None:
        self.closed.set()
        self.go_away()

    def kubeconfig(self, path: Path) -> Path:
        return plain_kubeconfig(path, "quiet", f"http://127.0.0.1:{self.port}")


class HostileServer(TcpFake):
    """An API server no real one is, for serve's bounds: every kind lists empty and watches silent, but the
    PersistentVolumes, as ``mode`` says: ``pages`` pages without end (a new continue token on each page, 500 new
    names on each), ``added`` watches without end (ADDED events of new names, as fast as they are read), ``huge``
    lists one object of 20 MiB. Plain HTTP on loopback; each answer closes its connection."""

    PVS = "/api/v1/persistentvolumes"

    def __init__(self, mode: str) -> None:
        assert mode in ("pages", "added", "huge")
        self.mode = mode
        self.closed = threading.Event()
        self.served = {"pages": 0, "added": 0, "huge": 0}  # what it sent: pages, events, huge objects
        self.start()

    def connection(self, conn: socket.socket) -> None:
        try:
            read = read_head(conn)
            if read is None:
                return
            target = read[0].split(b" ", 2)[1].decode()
            path, _, query = target.partition("?")
            if "watch=true" in query:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                if path == self.PVS and self.mode == "added":
                    self._added(conn)
                else:  # silent until the client goes
                    while not self.closed.is_set() and conn.recv(1):
                        pass
                return
            items: list[str] = []
            meta = '{"resourceVersion":"5"}'
            if path == self.PVS and self.mode == "pages":
                self.served["pages"] += 1
                n = self.served["pages"]
                items = [self._pv(f"{n}-{i}") for i in range(500)]
                meta = f'{{"resourceVersion":"5","continue":"token-{n}"}}'
            elif path == self.PVS and self.mode == "huge":
                self.served["huge"] += 1
                items = [self._pv("huge", f'"annotations":{{"a":"{"x" * (20 * 1024 * 1024)}"}},')]
            body = f'{{"kind":"List","apiVersion":"v1","metadata":{meta},"items":[{",".join(items)}]}}'.encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body) + body)
        except OSError:
            pass
        finally:
            conn.close()

    def _added(self, conn: socket.socket) -> None:
        while not self.closed.is_set():
            start = self.served["added"]
            self.served["added"] += 500
            events = "".join(f'{{"type":"ADDED","object":{self._pv(f"w{start + i}")}}}\n' for i in range(500))
            data = events.encode()
            conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))

    @staticmethod
    def _pv(name: str, extra: str = "") -> str:
        return (f'{{"metadata":{{"name":"pv-{name}","uid":"uid-{name}","resourceVersion":"7",{extra}'
                '"labels":{"app":"hostile"}},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],'
                f'"persistentVolumeReclaimPolicy":"Retain","claimRef":{{"namespace":"gone","name":"c-{name}",'
                f'"uid":"claim-{name}"}}}},"status":{{"phase":"Released"}}}}')

    def close(self) -> None:
        self.closed.set()
        self.stop()

    def kubeconfig(self, path: Path) -> Path:
        return plain_kubeconfig(path, "hostile", f"http://127.0.0.1:{self.port}")
