"""The one module that talks to the API server. It knows three verbs: get, list and watch.

Every list is paginated (``limit`` + ``continue``) and streamed page by page; responses are read as
wire JSON (no generated-model deserialization) and turned into the records of ``records.py``.
There is deliberately no write path here: the plugin reports, a human decides.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, TypeVar
from urllib.parse import quote, urlencode

import urllib3
from kubernetes.client.rest import RESTClientObject
from urllib3.exceptions import (
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
    TimeoutError as Urllib3Timeout,
)

from kubectl_pvleft import __version__
from kubectl_pvleft.errors import ApiError, ConnectionFailed, Expired, Forbidden
from kubectl_pvleft.kubeconfig import Connection
from kubectl_pvleft.records import (
    ClaimIdentity,
    Event,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)

DEFAULT_PAGE_SIZE = 500  # kubectl's own chunk size
JSON = "application/json"
# Ask for metadata only where the server can (every supported server can); plain JSON is the fallback.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

T = TypeVar("T")


class StreamClosed(Exception):
    """A watch connection ended without an answer: the caller reconnects, it is never "all is well"."""


@dataclass(frozen=True)
class Resource:
    """Where a kind lives: ``/api/v1`` or ``/apis/GROUP/VERSION``, and its plural."""

    prefix: str
    plural: str
    namespaced: bool

    def path(self, namespace: Optional[str] = None, name: Optional[str] = None) -> str:
        base = self.prefix
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        return base + (f"/{quote(name, safe='')}" if name else "")


PERSISTENT_VOLUMES = Resource("/api/v1", "persistentvolumes", namespaced=False)
PERSISTENT_VOLUME_CLAIMS = Resource("/api/v1", "persistentvolumeclaims", namespaced=True)
PODS = Resource("/api/v1", "pods", namespaced=True)
EVENTS = Resource("/api/v1", "events", namespaced=True)
STORAGE_CLASSES = Resource("/apis/storage.k8s.io/v1", "storageclasses", namespaced=False)
CSI_DRIVERS = Resource("/apis/storage.k8s.io/v1", "csidrivers", namespaced=False)


class Listing(Iterable[dict]):
    """One paginated list, fetched page by page as it is iterated.

    A 410 on a continue token (the server compacted past the list's snapshot) restarts the list
    once from the beginning, skipping objects already yielded; a second 410 is an error.
    """

    def __init__(self, api: "KubeAPI", path: str, params: dict[str, str], accept: str, page_size: int) -> None:
        self._api = api
        self._path = path
        self._params = params
        self._accept = accept
        self._page_size = page_size
        self.resource_version: Optional[str] = None
        self.restarted = False

    def __iter__(self) -> Iterator[dict]:
        seen: set[str] = set()
        token: Optional[str] = None
        while True:
            params = dict(self._params, limit=str(self._page_size))
            if token:
                params["continue"] = token
            try:
                page = self._api.get_json(self._path, params, accept=self._accept, verb="list")
            except Expired as exc:
                if not token or self.restarted:
                    raise Expired(exc.status, exc.reason,
                                  f"the list of {self._path} expired twice while paging; try again",
                                  "list", self._path) from None
                self.restarted, token = True, None
                continue
            meta = page.get("metadata") or {}
            if token is None:
                self.resource_version = meta.get("resourceVersion")
            for item in page.get("items") or ():
                uid = (item.get("metadata") or {}).get("uid", "")
                if uid in seen:
                    continue
                seen.add(uid)
                yield item
            token = meta.get("continue") or None
            if not token:
                return


class KubeAPI:
    """get, list and watch over HTTPS, with the client library's TLS and credential handling."""

    def __init__(self, connection: Connection, request_timeout: Optional[float] = None,
                 page_size: int = DEFAULT_PAGE_SIZE) -> None:
        self.connection = connection
        self.server = connection.server.rstrip("/")
        self.request_timeout = request_timeout
        self.page_size = page_size
        configuration = connection.configuration
        # One quick retry of a refused connect; never retry a read (it was a read of a server that answered).
        configuration.retries = urllib3.Retry(total=1, connect=1, read=0, status=0, redirect=0, other=0)
        self._configuration = configuration
        self._rest = RESTClientObject(configuration)
        self._watches: set[urllib3.BaseHTTPResponse] = set()  # open watch responses, for abort_watches()

    def close(self) -> None:
        self._rest.close()

    # -- the HTTP exchange ------------------------------------------------------------------

    def _headers(self, accept: str) -> urllib3.HTTPHeaderDict:
        headers = urllib3.HTTPHeaderDict({"Accept": accept, "User-Agent": f"kubectl-pvleft/{__version__}"})
        for auth in self._configuration.auth_settings().values():
            if auth.get("in") == "header" and auth.get("value"):
                headers[auth["key"]] = auth["value"]
        if self.connection.impersonate_user:
            headers["Impersonate-User"] = self.connection.impersonate_user
        for group in self.connection.impersonate_groups:
            headers.add("Impersonate-Group", group)  # one header line per group, as the server expects
        return headers

    def _open(self, path: str, params: dict[str, str], accept: str, verb: str,
              timeout: Optional[urllib3.Timeout]) -> urllib3.BaseHTTPResponse:
        url = self.server + path + ("?" + urlencode(params) if params else "")
        try:
            response = self._rest.pool_manager.request(
                "GET", url, headers=self._headers(accept), preload_content=False,
                timeout=timeout if timeout is not None else self._timeout(),
            )
        except (MaxRetryError, HTTPError, OSError) as exc:
            raise self._connection_failed(exc) from None
        if response.status >= 400:
            try:
                body = response.read()
            finally:
                response.release_conn()
            raise self._api_error(response.status, body, verb, path)
        return response

    def _timeout(self) -> urllib3.Timeout:
        if self.request_timeout:
            return urllib3.Timeout(total=self.request_timeout)
        return urllib3.Timeout(connect=30.0, read=None)

    def _connection_failed(self, exc: BaseException) -> ConnectionFailed:
        cause = exc.reason if isinstance(exc, MaxRetryError) and exc.reason else exc
        if isinstance(cause, SSLError):
            detail = str(cause.args[0]) if cause.args else str(cause)
            return ConnectionFailed(f"TLS handshake with {self.server} failed: {_short(detail)}")
        # NewConnectionError subclasses urllib3's timeout error, so it is asked first.
        if isinstance(cause, NewConnectionError):
            return ConnectionFailed(
                f"the connection to the server {self.server} was refused or unreachable - "
                f"did you specify the right host or port? ({_short(str(cause))})")
        if isinstance(cause, (ReadTimeoutError, Urllib3Timeout, socket.timeout)):
            return ConnectionFailed(f"the server {self.server} did not answer in time (--request-timeout)")
        return ConnectionFailed(f"cannot talk to the server {self.server}: {_short(str(cause))}")

    def _api_error(self, status: int, body: bytes, verb: str, path: str) -> ApiError:
        reason, message, details = "", "", {}
        try:
            doc = json.loads(body)
            if isinstance(doc, dict):
                reason, message, details = doc.get("reason", ""), doc.get("message", ""), doc.get("details") or {}
        except ValueError:
            message = body.decode("utf-8", "replace").strip()
        return error_for(status, reason, message, verb, path, details)

    # -- the three verbs --------------------------------------------------------------------

    def get_json(self, path: str, params: Optional[dict[str, str]] = None, *, accept: str = JSON,
                 verb: str = "get") -> dict[str, Any]:
        response = self._open(path, params or {}, accept, verb, None)
        try:
            body = response.read()
        except (HTTPError, OSError) as exc:
            raise self._connection_failed(exc) from None
        finally:
            response.release_conn()
        try:
            return json.loads(body)
        except ValueError:
            raise ApiError(response.status, "BadResponse", "the server answered with something that is not JSON",
                           verb, path) from None

    def list(self, path: str, params: Optional[dict[str, str]] = None, *, accept: str = JSON) -> Listing:
        return Listing(self, path, dict(params or {}), accept, self.page_size)

    def watch(self, path: str, params: dict[str, str], resource_version: str,
              timeout_seconds: int = 300) -> Iterator[dict[str, Any]]:
        """One watch connection, event by event. Raises Expired on 410 (HTTP or ERROR event) and
        StreamClosed when the connection drops; returns when the server ends the watch normally."""
        query = dict(params, watch="true", allowWatchBookmarks="true", timeoutSeconds=str(timeout_seconds))
        if resource_version:
            query["resourceVersion"] = resource_version
        # The server closes the watch after timeout_seconds; a socket silent much longer than that is dead.
        read_timeout = timeout_seconds + 30.0
        response = self._open(path, query, JSON, "watch", urllib3.Timeout(connect=30.0, read=read_timeout))
        self._watches.add(response)
        try:
            buffer = b""
            try:
                for chunk in response.stream(64 * 1024, decode_content=True):
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if line.strip():
                            yield self._watch_event(line, path)
            except (ProtocolError, ReadTimeoutError, HTTPError, OSError) as exc:
                raise StreamClosed(str(exc)) from None
            if buffer.strip():
                yield self._watch_event(buffer, path)
        finally:
            self._watches.discard(response)
            response.close()  # an abandoned watch must not keep its socket
            response.release_conn()

    def abort_watches(self) -> None:
        """Cut every open watch connection, from any thread: a read blocked on one ends at once
        (as StreamClosed in the thread that reads it)."""
        for response in list(self._watches):
            try:
                shutdown = getattr(response, "shutdown", None)
                if shutdown is not None:
                    shutdown()
                else:
                    response.close()
            except OSError:
                pass

    def _watch_event(self, line: bytes, path: str) -> dict[str, Any]:
        try:
            event = json.loads(line)
        except ValueError:
            raise StreamClosed("the watch stream was cut mid-event") from None
        if event.get("type") == "ERROR":
            status = event.get("object") or {}
            raise error_for(int(status.get("code") or 500), status.get("reason", ""), status.get("message", ""),
                            "watch", path, status.get("details") or {})
        return event

    # -- the kinds the plugin reads ----------------------------------------------------------

    def persistent_volumes(self) -> Iterator[PersistentVolume]:
        return _records(self.list(PERSISTENT_VOLUMES.path()), PersistentVolume.from_wire)

    def claim_identities(self, namespace: Optional[str] = None) -> Iterator[ClaimIdentity]:
        """Every PVC's namespace, name and uid (in one namespace, or cluster-wide), as metadata only."""
        return _records(self.list(PERSISTENT_VOLUME_CLAIMS.path(namespace), accept=METADATA_ONLY),
                        ClaimIdentity.from_wire)

    def persistent_volume_claims(self, namespace: Optional[str] = None) -> Iterator[PersistentVolumeClaim]:
        return _records(self.list(PERSISTENT_VOLUME_CLAIMS.path(namespace)), PersistentVolumeClaim.from_wire)

    def storage_classes(self) -> Iterator[StorageClass]:
        return _records(self.list(STORAGE_CLASSES.path()), StorageClass.from_wire)

    def csi_driver_names(self) -> set[str]:
        return {(d.get("metadata") or {}).get("name", "") for d in self.list(CSI_DRIVERS.path(), accept=METADATA_ONLY)}

    def pods(self, namespace: Optional[str] = None, field_selector: Optional[str] = None) -> Listing:
        return self.list(PODS.path(namespace), _selector(field_selector))

    def events(self, namespace: Optional[str] = None, field_selector: Optional[str] = None) -> Iterator[Event]:
        return _records(self.list(EVENTS.path(namespace), _selector(field_selector)), Event.from_wire)


def _selector(field_selector: Optional[str]) -> dict[str, str]:
    return {"fieldSelector": field_selector} if field_selector else {}


def _records(items: Iterable[dict], parse: Callable[[dict], T]) -> Iterator[T]:
    for item in items:
        yield parse(item)


def _short(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else "no detail"


def error_for(status: int, reason: str, message: str, verb: str, path: str,
              details: Optional[dict] = None) -> ApiError:
    kind = {403: Forbidden, 410: Expired}.get(status, ApiError)
    return kind(status, reason, message, verb, path, details)
