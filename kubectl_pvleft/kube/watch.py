"""One watch runtime for every subcommand, in the shape of client-go's reflector.

``reflect`` lists a kind, then watches it from the list's resourceVersion with bookmarks, forever: a
410 relists (and resyncs the store), a dropped connection re-watches after a capped, jittered backoff,
and a stream down for long gets a warning while it keeps trying. The first list is not retried: it
succeeds or fails like any other command. Only after it, an outage is waited out (a restarted
apiserver answers 403 until its RBAC cache syncs, 5xx while starting).

``follow`` runs one reflector per stream in threads, keeps what they showed in ``Stores``, re-runs the
subcommand's pure analysis after each burst of changes, and yields what changed in its rows. A stream
that ends is reopened; it never looks like "all is well".

The reflector reads through a ``ListerWatcher`` (``list`` and ``watch``), as client-go's does: ``KubeAPI`` meets
it, so do serve's one-list-at-a-time gate and the tests' scripted servers.
"""

from __future__ import annotations

import os
import queue
import random
import threading
import time
from collections.abc import Callable, Generator, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Generic, Optional, Protocol, TypeVar, Union, cast

from msgspec import Struct

from kubectl_pvleft.errors import ApiError, ConnectionFailed, Expired, Forbidden, NotFound
from kubectl_pvleft.kube.api import Kind, KubeAPI, Object, StreamClosed, Unchanged, WatchEvent

Row = TypeVar("Row")
R = TypeVar("R", bound=Object)
R_co = TypeVar("R_co", bound=Object, covariant=True)


class Pages(Protocol[R_co]):
    """One list as the reflector reads it (``kube.api.Listing``): its objects page by page, or with ``changed``
    the ones the caller already holds at their version as ``Unchanged(uid)``; the list's resourceVersion once
    its pages are read."""

    @property
    def resource_version(self) -> Optional[str]: ...

    def __iter__(self) -> Iterator[R_co]: ...

    def changed(self, held: Callable[[str, str], bool]) -> Iterator[Union[R_co, Unchanged]]: ...


class ListerWatcher(Protocol):
    """What the reflector reads through: client-go's ListerWatcher (tools/cache/listwatch.go)."""

    def list(self, kind: Kind[R], namespace: Optional[str] = None, *, field_selector: Optional[str] = None,
             label_selector: Optional[str] = None) -> Pages[R]: ...

    def watch(self, kind: Kind[R], namespace: Optional[str], resource_version: str, *,
              field_selector: Optional[str] = None, label_selector: Optional[str] = None,
              timeout_seconds: int = 300, opened: Optional[Callable[[], None]] = None) -> Iterator[WatchEvent[R]]: ...


class WatchSettings(Struct, frozen=True):
    """Timing knobs; tests shorten them through the environment (PVLEFT_WATCH_*)."""

    timeout_seconds: int = 300  # server-side end of each watch request; then it is re-opened
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    warn_after: float = 30.0  # a stream down this long gets a warning on stderr (and keeps retrying)
    settle: float = 0.3  # changes this close together are judged once

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None) -> WatchSettings:
        env = os.environ if env is None else env
        default = cls()

        def number(name: str, value: float) -> float:
            text = env.get(name, "").strip()
            try:
                return float(text) if text else value
            except ValueError:
                return value

        # Floors keep a zero or negative value from turning the retry loop into a busy loop.
        initial = max(0.01, number("PVLEFT_WATCH_BACKOFF_INITIAL_SECONDS", default.backoff_initial))
        return cls(
            timeout_seconds=max(1, int(number("PVLEFT_WATCH_TIMEOUT_SECONDS", default.timeout_seconds))),
            backoff_initial=initial,
            backoff_max=max(initial, number("PVLEFT_WATCH_BACKOFF_MAX_SECONDS", default.backoff_max)),
            warn_after=max(0.0, number("PVLEFT_WATCH_WARN_AFTER_SECONDS", default.warn_after)),
            settle=max(0.0, number("PVLEFT_WATCH_SETTLE_SECONDS", default.settle)),
        )


class Stream(Struct, Generic[R_co], frozen=True):
    """One kind to list and watch, in a namespace or all (None); its objects decode as ``R_co``, and the store it
    fills is read through it: ``stores[stream]`` is a ``list[R_co]``.

    Covariant, so that streams of several kinds sit side by side as ``Stream[Object]`` (``SomeStream``). Its
    callbacks (``selects``, ``keep``, ``departure``) take ``R_co`` all the same: whoever holds it as a
    ``Stream[Object]`` (the reflector, ``Stores``, serve's shared streams) calls them only with objects of the
    stream's own kind, the ones its store holds."""

    name: str  # the store it fills: pods, claims, events, classes, csidrivers, volumes...
    kind: Kind[R_co]
    namespace: Optional[str] = None
    field_selector: Optional[str] = None
    label_selector: Optional[str] = None
    required: bool = False  # a 403 on a required stream is an error; on the others, unknown evidence
    unreadable: str = ""  # the warning for a 403 on an optional stream ({reason}: the server's words)
    # The warning for a 404 on an optional stream whose kind a cluster may not serve yet (an API newer than it): that
    # evidence is then unknown, as after a 403, and the others are judged. "": a 404 ends the stream (serve: its
    # analyses report nothing while the kind is not served).
    unserved: str = ""
    # What the selectors select, judged here: a reader that asks for fewer objects than another one of the same kind
    # can then share its stream (serve lists and watches each kind once) and keep only these. None: not known here.
    selects: Optional[Callable[[R_co], bool]] = None
    # On the stream the rows are about (Follow.primary): whether an object it shows stays in its store (a Pod no
    # longer Pending leaves a watch on Pending Pods), and how one left it, for "resolved" lines. None: every object
    # stays; one that left was deleted.
    keep: Optional[Callable[[R_co], bool]] = None
    departure: Optional[Callable[[R_co], str]] = None


# Streams of several kinds side by side (an analysis's streams, serve's shared ones): each reads one record type,
# which only the stream itself names.
SomeStream = Stream[Object]


class Synced(Struct, frozen=True):
    """A (re)list: the complete current state of one stream, to replace what was known. ``objects`` is a tuple,
    or with ``reflect(lazy_lists=True)`` an iterator over the list's pages that the consumer must exhaust before
    asking the reflector for its next item (``resource_version`` is then known only after: "")."""

    stream: str
    objects: Iterable[Union[Object, Unchanged]]  # Unchanged only from a lazy list with ``held``
    resource_version: str


class Changed(Struct, frozen=True):
    stream: str
    type: str  # ADDED | MODIFIED | DELETED
    object: Object


class Notice(Struct, frozen=True):
    """Something the user should read on stderr: unreadable evidence, a stream down, back up."""

    stream: str
    message: str
    unavailable: bool = False  # the stream cannot be read at all (403): its evidence is unknown


StreamItem = Union[Synced, Changed, Notice]


def transient(exc: ApiError) -> bool:
    # An apiserver that is starting or shutting down answers 429/5xx; that is an outage, not an answer.
    return exc.status == 429 or exc.status >= 500


class Observer:
    """Told of every failure and every sign of life of one stream, as they happen (the exporter's health series);
    the items a reflector yields say neither: a failure is a Notice only after ``warn_after``. A sign of life is a
    list that answered, a watch the server answered 200 (established, before any event), or an event."""

    def failed(self, reason: str) -> None:
        pass

    def alive(self) -> None:
        pass


def reflect(api: ListerWatcher, stream: SomeStream, settings: WatchSettings, stop: Optional[threading.Event] = None,
            observer: Optional[Observer] = None, lazy_lists: bool = False,
            held: Optional[Callable[[str, str], bool]] = None) -> Generator[StreamItem, None, None]:
    """list, then watch from the list's resourceVersion, until ``stop``; see the module's docstring.

    ``lazy_lists``: each (re)list is handed over page by page as it is read (``Synced.objects`` an iterator), for
    a consumer in the same thread that replaces its objects one by one: a relist of 10,000 objects then never
    holds the old and the new copies at once. The first object is read here, so a list refused at once (403,
    410, the server down) is handled as always; a failure on a later page is raised in the consumer.

    ``held(uid, resourceVersion)``, with ``lazy_lists``: true when the consumer already holds that object at that
    version; a relist then hands it over as ``Unchanged(uid)``, not decoded (``Listing.changed``)."""
    return _Reflector(api, stream, settings, stop or threading.Event(), observer or Observer(), lazy_lists,
                      held).run()


class _Unavailable(Exception):
    """An optional stream the user may not read: its evidence is unknown, and the stream ends."""


class _Reflector:
    def __init__(self, api: ListerWatcher, stream: SomeStream, settings: WatchSettings, stop: threading.Event,
                 observer: Observer, lazy_lists: bool = False,
                 held: Optional[Callable[[str, str], bool]] = None) -> None:
        self.api, self.stream, self.settings, self.stop, self.observer = api, stream, settings, stop, observer
        self.lazy_lists, self.held = lazy_lists, held
        self.resource_version: Optional[str] = None
        self.delay = settings.backoff_initial
        self.down_since: Optional[float] = None
        self.warned = False
        self.expired_in_a_row = 0
        self.listed_once = False

    def run(self) -> Generator[StreamItem, None, None]:
        while not self.stop.is_set():
            try:
                failure = yield from self._once()
            except _Unavailable as exc:
                yield Notice(self.stream.name, str(exc), unavailable=True)
                return
            if failure is None:
                continue
            if self.stop.is_set():
                return
            yield from self._back_off(failure)

    def _once(self) -> Generator[StreamItem, None, Optional[str]]:
        """One list (when needed) and one watch; returns None to go again at once, or what went wrong."""
        s = self.stream
        try:
            if self.resource_version is None:
                listing = self.api.list(s.kind, s.namespace, field_selector=s.field_selector,
                                        label_selector=s.label_selector)
                if self.lazy_lists:
                    pages: Iterator[Union[Object, Unchanged]] = (
                        iter(listing) if self.held is None else listing.changed(self.held))
                    first = next(pages, None)  # a list refused at once fails here, as an eager one would
                    self.listed_once = True
                    yield from self._up()
                    yield Synced(s.name, pages if first is None else _handed_over(first, pages), "")
                    self.resource_version = listing.resource_version or ""  # known once the pages are read
                else:
                    objects = tuple(listing)
                    self.resource_version = listing.resource_version or ""
                    self.listed_once = True
                    yield from self._up()
                    yield Synced(s.name, objects, self.resource_version)
                # A relist that worked ends a run of 410s: the next 410 is a new one, not a repeat.
                self.expired_in_a_row = 0
            return (yield from self._watch())
        except Expired:
            # The history we would resume from is gone: ask for the current state again.
            self.resource_version = None
            self.expired_in_a_row += 1
            return None if self.expired_in_a_row == 1 else "the server keeps answering 410 Gone"
        except (ApiError, StreamClosed, ConnectionFailed) as exc:
            return self._failure(exc)

    def _watch(self) -> Generator[StreamItem, None, Optional[str]]:
        s = self.stream
        opened, seen = time.monotonic(), 0
        # client-go's reflector draws each watch's length from [min, 2 x min): many watchers do not all reconnect
        # in the same second.
        timeout = int(self.settings.timeout_seconds * (1.0 + random.random()))
        for event in self.api.watch(s.kind, s.namespace, self.resource_version or "", field_selector=s.field_selector,
                                    label_selector=s.label_selector, timeout_seconds=timeout,
                                    opened=self._established):
            self.resource_version = event.resource_version or self.resource_version
            self.expired_in_a_row, seen = 0, seen + 1
            yield from self._up()
            if event.type in ("ADDED", "MODIFIED", "DELETED"):
                yield Changed(s.name, event.type, event.object)
        if seen or time.monotonic() - opened >= min(1.0, self.settings.timeout_seconds / 2):
            yield from self._up()  # the server ended the watch (timeoutSeconds): open the next one at once
            return None
        # An empty stream that ended at once is something closing connections, not the server's timeout.
        return "the watch ended as soon as it opened"

    def _failure(self, exc: Exception) -> str:
        """What an error means: an outage to wait out (returned), or the end (raised)."""
        if isinstance(exc, NotFound) and not self.listed_once and self.stream.unserved and not self.stream.required:
            raise _Unavailable(self.stream.unserved.format(name=self.stream.name))
        if isinstance(exc, Forbidden) and not self.listed_once:
            if self.stream.required:
                raise exc
            reason = exc.api_message or "forbidden"
            raise _Unavailable((self.stream.unreadable or "cannot list/watch {name} ({reason}); that evidence is "
                                "unknown while watching.").format(name=self.stream.name, reason=reason))
        if isinstance(exc, Forbidden):
            # Allowed before: a restarted apiserver answers 403 until its RBAC cache has synced.
            return exc.api_message or "forbidden"
        if not self.listed_once or (isinstance(exc, ApiError) and not transient(exc)):
            raise exc  # the first list fails like any command: one error, exit 1
        return str(exc) or "the connection closed"

    def _established(self) -> None:
        """The server answered the watch 200: the stream is live again now, not at its first event (a quiet kind
        sends none for minutes, and its bookmarks come about once a minute)."""
        self.observer.alive()
        self.delay = self.settings.backoff_initial

    def _up(self) -> Iterator[StreamItem]:
        self.observer.alive()
        if self.warned and self.down_since is not None:
            yield Notice(self.stream.name,
                         f"the watch on {self.stream.name} is back after {time.monotonic() - self.down_since:.0f}s")
        self.down_since, self.warned, self.delay = None, False, self.settings.backoff_initial

    def _back_off(self, failure: str) -> Iterator[StreamItem]:
        self.observer.failed(failure)
        now = time.monotonic()
        self.down_since = self.down_since if self.down_since is not None else now
        if not self.warned and now - self.down_since >= self.settings.warn_after:
            self.warned = True
            yield Notice(self.stream.name, f"cannot re-establish the watch on {self.stream.name} for "
                                           f"{now - self.down_since:.0f}s ({failure}); still trying")
        self.stop.wait(self.delay * random.uniform(0.8, 1.2))  # jitter: many watchers should not retry in step
        self.delay = min(self.delay * 2, self.settings.backoff_max)


def _handed_over(first: Union[Object, Unchanged],
                 pages: Iterator[Union[Object, Unchanged]]) -> Iterator[Union[Object, Unchanged]]:
    """The list's objects, the first one already read; closing this closes the list (its page reader, its gate),
    which a consumer that gives a list up must be able to do at once, not when the collector gets to it."""
    try:
        yield first
        yield from pages
    finally:
        close = getattr(pages, "close", None)
        if close is not None:
            close()


def stream_of(streams: Iterable[SomeStream], kind: Kind[R]) -> Optional[Stream[R]]:
    """The first of these streams that reads this kind, as a stream of its records."""
    found = next((stream for stream in streams if stream.kind is kind), None)
    # It reads this very kind (``is``): its objects are this kind's records.
    return None if found is None else cast("Stream[R]", found)


def uid_of(obj: Object) -> str:
    return obj.metadata.uid


def _version(obj: Object) -> str:
    return obj.metadata.resource_version or ""


class Stores:
    """What the streams have shown so far, by stream name and uid; ``None`` for a stream that cannot be read.
    Read through the stream that fills a store: ``stores[stream]`` is a ``list[R]`` for a ``Stream[R]``.

    ``departed`` remembers how objects of the primary stream left it (uid -> text), for "resolved" lines.
    """

    def __init__(self, names: Iterable[str], primary: str, keep: Callable[[Object], bool] = lambda obj: True,
                 departure: Callable[[Object], str] = lambda obj: "deleted") -> None:
        self.data: dict[str, Optional[dict[str, Object]]] = {name: {} for name in names}
        self.primary, self._keep, self._departure = primary, keep, departure
        self.departed: dict[str, str] = {}

    def __getitem__(self, stream: Stream[R]) -> Optional[list[R]]:
        store = self.data[stream.name]
        # Only this stream (or serve's shared stream of its kind) fills its store: its objects are R.
        return None if store is None else cast("list[R]", list(store.values()))

    def unavailable(self, name: str) -> None:
        self.data[name] = None

    def apply(self, item: Union[Synced, Changed]) -> None:
        store = self.data.get(item.stream)
        if store is None:
            return
        if isinstance(item, Synced):
            held = dict(store)
            store.clear()
            for obj in item.objects:
                if isinstance(obj, Unchanged):  # held already at this version: the copy held stays
                    if obj.uid in held:
                        store[obj.uid] = held[obj.uid]
                    continue
                self._put(item.stream, store, obj)
            if item.stream == self.primary:
                for uid in held.keys() - store.keys():
                    self.departed.setdefault(uid, "gone when the watch resynced")
        elif item.type == "DELETED":
            if store.pop(uid_of(item.object), None) is not None and item.stream == self.primary:
                self.departed[uid_of(item.object)] = self._departure(item.object)
        else:
            self._put(item.stream, store, item.object)

    def holds_uid(self, name: str, uid: str) -> bool:
        store = self.data.get(name)
        return store is not None and uid in store

    def size(self, name: str) -> int:
        store = self.data.get(name)
        return 0 if store is None else len(store)

    def forget(self, name: str, uids: Iterable[str]) -> None:
        """Take these objects out, as if never shown (no departure is recorded: they were never evidence)."""
        store = self.data.get(name)
        if store is not None:
            for uid in uids:
                store.pop(uid, None)

    def holds(self, name: str, uid: str, version: str) -> bool:
        """This object is in the store at this resourceVersion."""
        store = self.data.get(name)
        old = store.get(uid) if store is not None else None
        return old is not None and _version(old) == version

    def refill(self, name: str, obj: Object) -> None:
        """One object of a relist read page by page: it replaces its old copy at once (``refilled`` ends it).
        An object the relist shows unchanged (same resourceVersion) keeps the copy already held, so the new one
        is freed with its page: after an outage most objects are unchanged, and memory keeps its layout."""
        store = self.data.get(name)
        if store is None:
            return
        old = store.get(uid_of(obj))
        version = _version(obj)
        if old is not None and version and _version(old) == version:
            return
        self._put(name, store, obj)

    def refilled(self, name: str, seen: set[str]) -> None:
        """The end of a relist read page by page: what it did not show is gone."""
        store = self.data.get(name)
        if store is None:
            return
        for uid in [uid for uid in store if uid not in seen]:
            del store[uid]
            if name == self.primary:
                self.departed.setdefault(uid, "gone when the watch resynced")

    def _put(self, name: str, store: dict[str, Object], obj: Object) -> None:
        uid = uid_of(obj)
        if name != self.primary or self._keep(obj):
            store[uid] = obj
            self.departed.pop(uid, None)
        elif store.pop(uid, None) is not None:
            self.departed[uid] = self._departure(obj)


class RowChange(Struct, Generic[Row], frozen=True):
    change: str  # appeared | changed | resolved
    row: Row
    resolution: Optional[str] = None  # for resolved: how the row stopped being reported


class RowBoard(Generic[Row]):
    """The rows last printed, by key; says what is new, what changed and what resolved."""

    def __init__(self, key: Callable[[Row], Hashable], signature: Callable[[Row], Hashable]) -> None:
        self.key, self.signature = key, signature
        self.shown: dict[Hashable, tuple[Hashable, Row]] = {}

    def update(self, rows: Iterable[Row], departed: Mapping[str, str], gone: str) -> list[RowChange[Row]]:
        changes: list[RowChange[Row]] = []
        current = {self.key(row): row for row in rows}
        for key in [k for k in self.shown if k not in current]:
            _, last = self.shown.pop(key)
            changes.append(RowChange("resolved", last, departed.get(str(key), gone)))
        for key, row in current.items():
            signature = self.signature(row)
            before = self.shown.get(key)
            if before is None:
                changes.append(RowChange("appeared", row))
            elif before[0] != signature:
                changes.append(RowChange("changed", row))
            self.shown[key] = (signature, row)
        return changes


class Follow(Struct, Generic[Row]):
    """How a subcommand is watched: its streams, its pure analysis over the stores, and row identity."""

    streams: Sequence[SomeStream]
    primary: str
    assess: Callable[[Stores], Iterable[Row]]  # read once, as it comes: it may judge one row at a time
    key: Callable[[Row], Hashable]  # the primary object's uid, as a string
    signature: Callable[[Row], Hashable]  # what, when it changes, is worth a line
    # Which rows are findings, by the analysis's verdict (output.report.Verdict.is_finding): the rows serve counts
    # and names. Required, so that no analysis reaches /metrics with every row, or none, a finding by default.
    finding: Callable[[Row], bool]
    gone: str = "no longer reported"
    # Judge again after this many seconds without a change: verdicts that depend on the clock (--older-than)
    # change with no event to say so. None: only changes are judged.
    recheck: Optional[float] = None
    # The rows --watch prints; the others are judged for the exporter's own families only (a claim unused by
    # design, counted in pvleft_unused_by_design_claims).
    reported: Callable[[Row], bool] = lambda row: True

    def stores(self) -> Stores:
        """Empty stores for these streams; the primary stream's ``keep`` and ``departure`` judge its objects."""
        primary = next(s for s in self.streams if s.name == self.primary)
        return Stores([s.name for s in self.streams], self.primary, primary.keep or (lambda obj: True),
                      primary.departure or (lambda obj: "deleted"))


def recheck_for(older_than: Optional[float]) -> Optional[float]:
    """With --older-than, rows cross the threshold with no event to say so: judge again this often (a twentieth
    of the threshold, between 1 s and a minute)."""
    if older_than is None:
        return None
    return min(60.0, max(1.0, older_than / 20))


def follow(api: KubeAPI, spec: Follow[Row], settings: Optional[WatchSettings] = None,
           stop: Optional[threading.Event] = None) -> Generator[Union[list[RowChange[Row]], Notice], None, None]:
    """Row changes, a batch per judgment, and notices for stderr, as they happen, forever.
    Closing the generator (or setting ``stop``) ends every stream and closes every connection it opened."""
    settings = settings or WatchSettings()
    stop = stop or threading.Event()
    inbox: Inbox = queue.Queue()
    threads = [threading.Thread(target=_pump, args=(api, s, settings, stop, inbox), name=f"pvleft-watch-{s.name}",
                                daemon=True) for s in spec.streams]
    judge = _Judge(spec)
    for thread in threads:
        thread.start()
    try:
        while True:
            yield from judge.take(_burst(inbox, settings, spec.recheck))
    finally:
        stop.set()
        deadline = time.monotonic() + 5.0
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            api.abort_watches()  # a read blocked in another thread ends at once
            for thread in threads:
                thread.join(timeout=0.1)


Inbox = queue.Queue[Union[StreamItem, BaseException]]  # what the streams' threads hand the judge


def _pump(api: KubeAPI, stream: SomeStream, settings: WatchSettings, stop: threading.Event, inbox: Inbox) -> None:
    try:
        for item in reflect(api, stream, settings, stop):
            inbox.put(item)
    except BaseException as exc:  # handed to the main thread, which raises it
        if not stop.is_set():
            inbox.put(exc)


def _burst(inbox: Inbox, settings: WatchSettings,
           recheck: Optional[float] = None) -> list[Union[StreamItem, BaseException]]:
    """What arrives together is judged once; but never starve the output. Nothing within ``recheck`` seconds: an
    empty batch, judged again all the same."""
    try:
        batch = [inbox.get(timeout=recheck)]
    except queue.Empty:
        return []
    deadline = time.monotonic() + max(settings.settle * 5, 1.0)
    while time.monotonic() < deadline:
        try:
            batch.append(inbox.get(timeout=settings.settle))
        except queue.Empty:
            break
    return batch


class _Judge(Generic[Row]):
    """Applies what the streams show to the stores, and re-runs the analysis once every stream has listed."""

    def __init__(self, spec: Follow[Row]) -> None:
        self.spec = spec
        self.stores = spec.stores()
        self.board: RowBoard[Row] = RowBoard(spec.key, spec.signature)
        self.unsynced = {s.name for s in spec.streams}
        self.held: list[Notice] = []  # notices before every stream is listed: a failing first list drops them

    def take(self, batch: list[Union[StreamItem, BaseException]]) -> Iterator[Union[list[RowChange[Row]], Notice]]:
        for item in batch:
            self._apply(item)
        if self.unsynced:
            return  # judging before every stream is listed would print rows from half the evidence
        yield from self.held  # once every stream has answered: an error on a required one says it alone
        self.held.clear()
        rows = [row for row in self.spec.assess(self.stores) if self.spec.reported(row)]
        changes = self.board.update(rows, self.stores.departed, self.spec.gone)
        self.stores.departed.clear()  # every departure is now either reported or was never shown
        if changes:
            yield changes

    def _apply(self, item: Union[StreamItem, BaseException]) -> None:
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Notice):
            if item.unavailable:
                self.stores.unavailable(item.stream)
                self.unsynced.discard(item.stream)
            self.held.append(item)
            return
        self.stores.apply(item)
        if isinstance(item, Synced):
            self.unsynced.discard(item.stream)
