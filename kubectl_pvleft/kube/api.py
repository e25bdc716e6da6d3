"""The one module that reads the API server, by kind. It knows three verbs: get, list and watch.

A ``Kind`` says where a resource lives and which record its objects decode into; ``list``, ``get`` and
``watch`` take a kind and give records, decoded straight from the response bytes page by page (memory
stays flat as the cluster grows). Every list is paginated (``limit`` + ``continue``). There is
deliberately no write path here: the plugin reports, a human decides.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Generic, Optional, Protocol, TypeVar, Union, overload

import msgspec

from kubectl_pvleft.errors import BadResponse, Expired, Forbidden, NotFound, Oversized, Refusal
from kubectl_pvleft.kube.httpclient import Response, Timeouts
from kubectl_pvleft.kube.httpframing import HTTPFailure
from kubectl_pvleft.kube.kinds import (
    CLAIM_IDENTITIES,
    CSI_DRIVER_SPECS,
    CSI_DRIVERS,
    CSI_NODES,
    EVENTS,
    JSON,
    KINDS,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    VOLUME_ATTRIBUTES_CLASSES,
    VOLUME_SNAPSHOT_CLASSES,
    VOLUME_SNAPSHOT_CONTENTS,
    VOLUME_SNAPSHOTS,
    WORKLOAD_KINDS,
    Kind,
    ListPage,
    Object,
    R,
    page_decoder,
)
from kubectl_pvleft.kube.kubeconfig import Connection
from kubectl_pvleft.kube.transport import StreamClosed, Transport, error_for, log, verbosity
from kubectl_pvleft.records import ListMeta, Status

DEFAULT_PAGE_SIZE = 500  # kubectl's own chunk size
# One object, watched (one event) or listed: etcd refuses objects over 1.5 MiB (--max-request-bytes); 16 MiB leaves
# room for JSON escaping and is still a bound a hostile stream cannot push memory past.
MAX_OBJECT_BYTES = 16 * 1024 * 1024
MAX_WATCH_EVENT_BYTES = MAX_OBJECT_BYTES


T = TypeVar("T")

if TYPE_CHECKING:  # types only: a Protocol class costs its creation at every start-up

    class _Identified(Protocol):
        @property
        def uid(self) -> str: ...

    class View(Protocol):
        """A narrow view of a kind's objects (``Listing.sifted``): its uid at least, so a list restarted after a 410
        skips what it already gave."""

        @property
        def metadata(self) -> _Identified: ...

    _Handed = Union[tuple[int, bytes], BaseException, "_Mark"]  # a page (status, body), the list's failure, or a mark

V = TypeVar("V", bound="View")

# The kinds are read through this module, so they are named from it too (kinds.py is where they are declared).
__all__ = ["CLAIM_IDENTITIES", "CSI_DRIVERS", "CSI_DRIVER_SPECS", "CSI_NODES", "EVENTS", "KINDS", "NAMESPACES",
           "NODES", "PERSISTENT_VOLUMES", "PERSISTENT_VOLUME_CLAIMS", "PODS", "STORAGE_CLASSES",
           "VOLUME_ATTACHMENTS", "VOLUME_ATTRIBUTES_CLASSES", "VOLUME_SNAPSHOTS", "VOLUME_SNAPSHOT_CLASSES",
           "VOLUME_SNAPSHOT_CONTENTS", "WORKLOAD_KINDS", "Kind", "KubeAPI", "Listing", "Object", "Reader",
           "SiftedPage", "StreamClosed", "Unchanged", "WatchEvent", "WholePage", "begin", "error_for", "optional",
           "sifted"]


class WatchEvent(msgspec.Struct, Generic[T], frozen=True):
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: T
    resource_version: str


class _RawEvent(msgspec.Struct, frozen=True):
    type: str = ""
    object: msgspec.Raw = msgspec.Raw(b"null")


_RAW_EVENT = msgspec.json.Decoder(_RawEvent)


_RAW_PAGE = msgspec.json.Decoder(ListPage[msgspec.Raw])  # items left as views of the page's bytes, for Listing.changed


class _VersionMeta(msgspec.Struct, rename="camel", frozen=True):
    uid: str = ""
    resource_version: str = ""


class _Versioned(msgspec.Struct, frozen=True):
    metadata: _VersionMeta = _VersionMeta()


_VERSIONED = msgspec.json.Decoder(_Versioned)


class Unchanged(msgspec.Struct, frozen=True):
    """An object of a list the caller already holds at this resourceVersion: its uid, left undecoded."""

    uid: str
_STATUS = msgspec.json.Decoder(Status)


class Reader(Protocol):
    """What analyses and the watch runtime need from the API; tests may implement it over fixtures."""

    def list(self, kind: Kind[R], namespace: Optional[str] = None, *, field_selector: Optional[str] = None,
             label_selector: Optional[str] = None) -> Listing[R]: ...

    def get(self, kind: Kind[R], name: str, namespace: Optional[str] = None) -> Optional[R]: ...


class Listing(Generic[R]):
    """One paginated list, read a page ahead of the caller: while one page is decoded and used, the next is
    already on its way (the server encodes it on another core). ``start()`` begins reading before the first
    iteration, so lists of different kinds can be read at the same time.

    A 410 on a continue token (the server compacted past the list's snapshot) restarts the list
    once from the beginning, skipping objects already yielded; a second 410 is an error.
    """

    def __init__(self, api: KubeAPI, kind: Kind[R], namespace: Optional[str], params: dict[str, str],
                 max_items: Optional[int] = None) -> None:
        self._api, self._kind, self._namespace, self._params = api, kind, namespace, params
        self._max_items = max_items  # a list past this many objects is refused (Oversized), page by page
        self._state = _ListState()
        self._reader: Optional[_PageReader] = None

    @property
    def resource_version(self) -> Optional[str]:
        return self._state.resource_version

    @property
    def restarted(self) -> bool:
        return self._state.restarted

    @property
    def paged(self) -> bool:
        """The first page said more follow."""
        return self._state.paged

    def start(self) -> Listing[R]:
        """Begin reading in the background now; an iteration later consumes what was read."""
        if self._reader is None:
            self._reader = _PageReader(self._api, self._kind, self._namespace, self._params, self._state)
            weakref.finalize(self, self._reader.close)  # a listing dropped unread stops its reader
        return self

    def wait_for_snapshot(self) -> None:
        """Return once the server has answered the first page: the list's snapshot is fixed from then on."""
        self.start()
        assert self._reader is not None
        self._reader.first_page.wait()  # a failure stays queued: the iteration raises it

    def __iter__(self) -> Iterator[R]:
        return self._read(None)

    def changed(self, held: Callable[[str, str], bool]) -> Iterator[Union[R, Unchanged]]:
        """The list's objects, except that one ``held(uid, resourceVersion)`` says the caller already holds comes
        as ``Unchanged(uid)``, never decoded. A relist after an outage is mostly objects that did not change:
        decoding a second copy of each only to drop it is what made a long-running watcher's heap creep (the
        few copies that lived on pinned the fresh memory of the rest)."""
        return self._read(held)

    def pages(self) -> Iterator[WholePage[R]]:
        """The list page by page, every object decoded whole."""
        path = self._kind.path(self._namespace)
        seen: set[str] = set()  # uids given: a restarted list skips what it already gave
        for _, _, page in self._pages(self._kind.page_decoder, path):
            fresh = []
            for item in page.items or ():
                uid = item.metadata.uid
                if uid not in seen:
                    seen.add(uid)
                    fresh.append(item)
            yield WholePage(fresh)

    def sifted(self, view: type[V]) -> Iterator[SiftedPage[V, R]]:
        """The list page by page, each object decoded first as ``view`` (a record of the few fields that say
        whether the caller wants it) and whole only when the caller keeps it (``SiftedPage.kept``). Decoding
        every object whole, to drop most of them, was most of the CPU ``leftovers`` spent on 10,000 PVs."""
        path = self._kind.path(self._namespace)
        seen: set[str] = set()  # uids given: a restarted list skips what it already gave
        for status, body, page in self._pages(page_decoder(view), path):
            fresh = []  # (position on the page, view) of the objects not given before
            for position, item in enumerate(page.items or ()):
                uid = item.metadata.uid
                if uid not in seen:
                    seen.add(uid)
                    fresh.append((position, item))
            yield SiftedPage(self._api, self._kind, status, path, body, fresh)

    @overload
    def _read(self, held: None) -> Iterator[R]: ...

    @overload
    def _read(self, held: Callable[[str, str], bool]) -> Iterator[Union[R, Unchanged]]: ...

    def _read(self, held: Optional[Callable[[str, str], bool]]) -> Iterator[Union[R, Unchanged]]:
        path = self._kind.path(self._namespace)
        seen: set[str] = set()  # uids yielded: a restarted list skips what it already gave
        if held is None:
            for _, _, page in self._pages(self._kind.page_decoder, path):
                for item in page.items or ():
                    if item.metadata.uid not in seen:
                        seen.add(item.metadata.uid)
                        yield item
            return
        for status, _, raw_page in self._pages(_RAW_PAGE, path):
            for raw in raw_page.items or ():
                found = self._unless_held(raw, held, status, path)
                uid = found.uid if isinstance(found, Unchanged) else found.metadata.uid
                if uid not in seen:
                    seen.add(uid)
                    yield found

    def _pages(self, decoder: msgspec.json.Decoder[ListPage[T]], path: str) -> Iterator[tuple[int, bytes, ListPage[T]]]:
        """(status, body, decoded page) of each page, in order."""
        self.start()
        reader, self._reader = self._reader, None  # one iteration per start
        assert reader is not None
        read = 0  # objects on the pages read so far, repeats included; an empty page counts as one
        try:
            for status, body in reader:
                page = self._api.decode(body, status, decoder, "list", path)
                read += max(1, len(page.items or ()))
                if self._max_items is not None and read > self._max_items:
                    raise Oversized(f"the list of {path} passed {self._max_items:,} objects, more than one list "
                                    f"may hold here")
                yield status, body, page
        finally:
            reader.close()

    def _unless_held(self, raw: msgspec.Raw, held: Callable[[str, str], bool], status: int,
                     path: str) -> Union[R, Unchanged]:
        if len(raw) > MAX_OBJECT_BYTES:  # the page's bound is MAX_BODY_BYTES; one object's is a watch event's
            raise Oversized(f"the list of {path} holds an object of more than "
                            f"{MAX_OBJECT_BYTES // (1024 * 1024)} MiB: not an API server's")
        meta = self._api.decode(raw, status, _VERSIONED, "list", path).metadata
        if meta.resource_version and held(meta.uid, meta.resource_version):
            return Unchanged(meta.uid)
        return self._api.decode(raw, status, self._kind.decoder, "list", path)


class SiftedPage(Generic[V, R]):
    """One page of a sifted list: its objects as views, and whole only those the caller keeps."""

    def __init__(self, api: KubeAPI, kind: Kind[R], status: int, path: str, body: bytes,
                 views: list[tuple[int, V]]) -> None:
        self._api, self._kind, self._status, self._path, self._body = api, kind, status, path, body
        self._views = views

    def kept(self, keep: Callable[[V], bool]) -> list[R]:
        """The objects whose view ``keep`` wants, decoded whole, in the list's order."""
        picked = [position for position, view in self._views if keep(view)]
        if not picked:
            return []
        items = self._api.decode(self._body, self._status, _RAW_PAGE, "list", self._path).items or ()
        decoder = self._kind.decoder
        return [self._api.decode(items[position], self._status, decoder, "list", self._path) for position in picked]


class WholePage(Generic[R]):
    """A page of objects decoded whole: their views are themselves."""

    def __init__(self, objects: Iterable[R]) -> None:
        self._objects = objects

    def kept(self, keep: Callable[[R], bool]) -> list[R]:
        return [obj for obj in self._objects if keep(obj)]


def sifted(listing: Iterable[R], view: Optional[type[V]]) -> Iterator[Union[SiftedPage[V, R], WholePage[R]]]:
    """A list page by page: ``Listing.sifted(view)``, or with no view ``Listing.pages()``; any other iterable (a
    test's) is one page of whole objects."""
    if not isinstance(listing, Listing):
        return iter([WholePage(listing)])
    return listing.pages() if view is None else listing.sifted(view)


class _ListState:
    def __init__(self) -> None:
        self.resource_version: Optional[str] = None
        self.restarted = False
        self.paged = False


class _ListHead(msgspec.Struct, frozen=True):
    metadata: ListMeta = ListMeta()


_LIST_HEAD = msgspec.json.Decoder(_ListHead)


class _Mark:
    """What the page reader's slot holds when it holds no page: nothing yet (``_EMPTY``), or the list's end
    (``_END``)."""

    __slots__ = ()


_END, _EMPTY = _Mark(), _Mark()


def list_head(body: bytes) -> ListMeta:
    """A list's metadata (continue token, resourceVersion) without decoding its items: the API server writes
    ``metadata`` before ``items``, so the head is cut there; any other shape is decoded whole."""
    cut = body.find(b'"items":', 0, 4096)
    if cut > 0 and body[:cut].rstrip().endswith(b","):
        try:
            return _LIST_HEAD.decode(body[:cut] + b'"items":null}').metadata
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
    return _LIST_HEAD.decode(body).metadata


class _PageReader:
    """Reads a list's pages in a thread, at most one page ahead of its consumer; errors reach the consumer.

    A one-slot hand-over under a Condition: the queue module would cost its import (and heapq's) at start-up.
    """

    def __init__(self, api: KubeAPI, kind: Kind[Object], namespace: Optional[str], params: dict[str, str],
                 state: _ListState) -> None:
        self._slot: _Handed = _EMPTY
        self._ready = threading.Condition()
        self._closed = False
        self.first_page = threading.Event()  # set when the first page is in, or the list has failed before it
        thread = threading.Thread(target=self._run, args=(api, kind, namespace, params, state), daemon=True,
                                  name=f"list {kind.plural}")
        thread.start()

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        while True:
            with self._ready:
                while self._slot is _EMPTY:
                    self._ready.wait()
                item, self._slot = self._slot, _EMPTY
                self._ready.notify_all()
            if isinstance(item, _Mark):  # _END: an empty slot is waited out above
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        with self._ready:
            self._closed, self._slot = True, _EMPTY  # a reader waiting for the slot sees the close
            self._ready.notify_all()

    def _put(self, item: _Handed) -> bool:
        with self._ready:
            while self._slot is not _EMPTY and not self._closed:
                self._ready.wait()
            if self._closed:
                return False
            self._slot = item
            self._ready.notify_all()
            return True

    def _run(self, api: KubeAPI, kind: Kind[Object], namespace: Optional[str], params: dict[str, str],
             state: _ListState) -> None:
        try:
            for page in _page_bodies(api, kind, namespace, params, state):
                self.first_page.set()
                if not self._put(page):
                    return
            self._put(_END)
        except Exception as exc:  # handed to the consumer, raised there
            self._put(exc)
        finally:
            self.first_page.set()


def _page_bodies(api: KubeAPI, kind: Kind[Object], namespace: Optional[str], params: dict[str, str],
                 state: _ListState) -> Iterator[tuple[int, bytes]]:
    """(status, body) of each page, in order; only the head of each is decoded here."""
    path = kind.path(namespace)
    token: Optional[str] = None
    followed: set[str] = set()  # continue tokens already asked with: one given again would page forever
    while True:
        query = dict(params, **({"limit": str(api.page_size)} if api.page_size else {}),  # 0: unpaged, no limit sent
                     **({"continue": token} if token else {}))
        try:
            response = api.transport.open(path, query, kind.accept, "list")
            body = api.transport.read(response)
            head = _head(body, response.status, path)
        except Expired as exc:
            if not token or state.restarted:
                raise Expired(exc.status, exc.reason, f"the list of {path} expired twice while paging; try again",
                              "list", path) from None
            state.restarted, token = True, None
            followed.clear()
            continue
        if token is None:
            state.resource_version, state.paged = head.resource_version, bool(head.continue_)
        yield response.status, body
        followed.add(token or "")
        token = head.continue_ or None
        if token is None:
            return
        if token in followed:
            raise BadResponse(200, "BadResponse", "the server gave a continue token it had already given: the "
                              "list would never end", "list", path)


def _head(body: bytes, status: int, path: str) -> ListMeta:
    try:
        return list_head(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        raise _bad_response(status, "list", path, exc) from None


class KubeAPI:
    """get, list and watch over one Transport."""

    def __init__(self, connection: Connection, request_timeout: Optional[float] = None,
                 page_size: int = DEFAULT_PAGE_SIZE, *, timeout_from_flag: bool = False,
                 interactive: Optional[bool] = None) -> None:
        self.connection = connection
        self.transport = Transport(connection, request_timeout, timeout_from_flag, interactive)
        self.page_size = page_size
        self._watches: set[Response] = set()  # open watch responses, for abort_watches()

    @property
    def server(self) -> str:
        return self.transport.shown_server

    def close(self) -> None:
        self.transport.close()

    def fetch(self, path: str, params: dict[str, str], accept: str, verb: str, decoder: msgspec.json.Decoder[T]) -> T:
        response = self.transport.open(path, params, accept, verb)
        return self.decode(self.transport.read(response), response.status, decoder, verb, path)

    @staticmethod
    def decode(body: Union[bytes, msgspec.Raw], status: int, decoder: msgspec.json.Decoder[T], verb: str, path: str) -> T:
        try:
            return decoder.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
            raise _bad_response(status, verb, path, exc) from None

    # -- the three verbs --------------------------------------------------------------------------

    def list(self, kind: Kind[R], namespace: Optional[str] = None, *, field_selector: Optional[str] = None,
             label_selector: Optional[str] = None, max_items: Optional[int] = None) -> Listing[R]:
        return Listing(self, kind, namespace, _selectors(field_selector, label_selector), max_items)

    def get(self, kind: Kind[R], name: str, namespace: Optional[str] = None) -> Optional[R]:
        """One object, or None when the server says 404. A 403 propagates: it never means "absent"."""
        try:
            return self.fetch(kind.path(namespace, name), {}, JSON, "get", kind.decoder)
        except NotFound:
            return None

    def watch(self, kind: Kind[R], namespace: Optional[str], resource_version: str, *,
              field_selector: Optional[str] = None, label_selector: Optional[str] = None,
              timeout_seconds: int = 300, opened: Optional[Callable[[], None]] = None) -> Iterator[WatchEvent[R]]:
        """One watch connection, event by event, BOOKMARKs included. Raises Expired on 410 (HTTP or ERROR
        event) and StreamClosed when the connection drops; returns when the server ends the watch. ``opened`` is
        called once the server has answered the watch 200: it is established, though a quiet kind may send
        nothing for minutes (client-go's reflector counts a watch as started when its Watch call returns)."""
        path = kind.path(namespace)
        query = dict(_selectors(field_selector, label_selector), watch="true", allowWatchBookmarks="true",
                     timeoutSeconds=str(timeout_seconds))
        if resource_version:
            query["resourceVersion"] = resource_version
        # The server closes the watch after timeout_seconds; a socket silent much longer than that is dead.
        response = self.transport.open(path, query, JSON, "watch", Timeouts(connect=30.0, read=timeout_seconds + 30.0))
        self._watches.add(response)
        try:
            if opened is not None:
                opened()
            buffer = b""
            try:
                for chunk in response.stream():
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if line.strip():
                            yield _watch_event(kind, line, path)
                    if len(buffer) > MAX_WATCH_EVENT_BYTES:
                        raise BadResponse(200, "BadResponse", f"a watch event of more than "
                                          f"{MAX_WATCH_EVENT_BYTES // (1024 * 1024)} MiB: not an API server's",
                                          "watch", path)
            except (HTTPFailure, OSError) as exc:
                # kubectl's words for what happened (never our class names): the stream is reopened.
                raise StreamClosed(str(self.transport.connection_failed(exc))) from None
            if buffer.strip():
                yield _watch_event(kind, buffer, path)
        finally:
            self._watches.discard(response)
            response.close()  # an abandoned watch must not keep its socket

    def abort_watches(self) -> None:
        """Cut every open watch connection, from any thread: a read blocked on one ends at once
        (as StreamClosed in the thread that reads it)."""
        for response in list(self._watches):
            response.abort()


def _watch_event(kind: Kind[R], line: bytes, path: str) -> WatchEvent[R]:
    try:
        raw = _RAW_EVENT.decode(line)
        if raw.type == "ERROR":
            status = _STATUS.decode(raw.object)
            if verbosity() >= 6:  # a 410 comes inside a watch answered 200: only this line shows it happened
                log.info('"Watch error" path="%s" status="%d %s" message="%s"', path, status.code or 500,
                         status.reason or "", status.message or "")
            raise error_for(status.code or 500, status.reason, status.message, "watch", path, status.details or {})
        obj = kind.decoder.decode(raw.object)
        version = obj.metadata.resource_version
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        raise StreamClosed("the watch stream was cut mid-event") from None
    return WatchEvent(raw.type, obj, version)


def _selectors(field_selector: Optional[str], label_selector: Optional[str]) -> dict[str, str]:
    params = {}
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    return params


def _bad_response(status: int, verb: str, path: str, exc: BaseException) -> BadResponse:
    # RecursionError: nesting no Kubernetes object has, from a hostile or broken server.
    detail = "nested too deeply" if isinstance(exc, RecursionError) else _first_line(str(exc))
    return BadResponse(status, "BadResponse", f"the server's answer is not what {verb} expects: {detail}", verb, path)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else "undecodable"


def begin(listing: Iterable[R], *, snapshot: bool = False, alongside: Optional[Iterable[object]] = None) -> Iterable[R]:
    """Start reading a Listing in the background (any other iterable, a test's, is left as it is). With
    ``snapshot``, return only once its first page is in (or it failed: the iteration raises that): a list
    begun after it sees a later state. With
    ``alongside``, only when that list is long (more than one page): short lists are read one after the
    other on one kept connection, where reading them at once would pay a TLS handshake each."""
    if not isinstance(listing, Listing):
        return listing
    if alongside is not None and not (isinstance(alongside, Listing) and alongside.paged):
        return listing
    if snapshot:
        listing.wait_for_snapshot()
    else:
        listing.start()
    return listing


def optional(read: Callable[[], T], warnings: list[str], message: str) -> Optional[T]:
    """An optional read: a 403 makes its value unknown (None) and adds one warning, never a guess.

    ``message`` may hold ``{reason}``, the server's own words for the refusal.
    """
    try:
        return read()
    except Forbidden as exc:
        warnings.append(Refusal.of(exc, message.format(reason=exc.api_message or "forbidden")))
        return None
