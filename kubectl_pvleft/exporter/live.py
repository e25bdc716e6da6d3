"""Every analysis live at once, on shared streams, with each stream's health and the cloud censuses on a timer.

An analysis is judged only once every stream it reads has listed (rows from half the evidence would be wrong);
before that it has no rows at all, never zero rows. A stream that goes down keeps its last objects, so the
analysis keeps its last rows, and ``Analysis.up`` says they are stale.
"""

from __future__ import annotations

import functools
import random
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Generic, Optional, Protocol, TypeVar, Union

from kubectl_pvleft import invocation
from kubectl_pvleft.errors import NotFound, Oversized
from kubectl_pvleft.exporter.heap import few_heaps, release_free_memory
from kubectl_pvleft.invocation import Options, Row
from kubectl_pvleft.kube.api import PERSISTENT_VOLUMES, Kind, KubeAPI, Object, Unchanged, WatchEvent
from kubectl_pvleft.kube.watch import (
    Changed,
    Follow,
    Notice,
    Observer,
    Pages,
    SomeStream,
    Stores,
    Stream,
    StreamItem,
    Synced,
    WatchSettings,
    reflect,
    stream_of,
    uid_of,
)
from kubectl_pvleft.text import one_line, shown

if TYPE_CHECKING:  # the clouds only under their flags
    from kubectl_pvleft.clouds.base import CloudDisk, CloudFinding, CloudSnapshot
    from kubectl_pvleft.clouds.census import CensusOutcome
    from kubectl_pvleft.clouds.pricing import Costing
    from kubectl_pvleft.clouds.snapshot_census import SnapshotOutcome
    from kubectl_pvleft.output.series import Series
    from kubectl_pvleft.records import Absent, PersistentVolume

R = TypeVar("R", bound=Object)

Describe = Callable[[BaseException], str]

# A (re)list not read whole by then is given up and asked again later (counted as the stream's error), what it had
# put in the stores taken out: a server that pages without end (a new continue token each time) must not hold a
# stream, the list gate and a growing store forever. A real list of 100,000 objects reads in well under a minute.
LIST_SECONDS = 300.0
# What one stream may hold (and one list read): above every kind's documented scale (150,000 Pods a cluster) and
# twice the 100,000 PVs measured. A server that lists or watches past it (continue tokens without end, ADDED events
# of new names without end) is refused there, instead of growing serve to what the host has.
# PVLEFT_SERVE_MAX_OBJECTS sets it.
MAX_STREAM_OBJECTS = 200_000
# A stream refused at a bound is asked again after a backoff that doubles up to this many times backoff_max: a
# hostile server answers the same at once, and each try reads up to the bound.
BOUND_BACKOFF_FACTOR = 10
BOUND_RUN_SECONDS = 3600.0  # refusals at a bound less than this apart are one run: said once, the backoff kept


class ListTooLong(Oversized):
    """A relist past LIST_SECONDS."""


def stream_key(stream: SomeStream) -> Hashable:
    """Streams of one kind, view and namespace are one stream: the server is asked once, whatever the selectors
    (each reader keeps what its own selectors select, ``Stream.selects``)."""
    kind = stream.kind
    return (kind.prefix, kind.plural, kind.metadata_only, stream.namespace)


def selectors(stream: SomeStream) -> tuple[Optional[str], Optional[str]]:
    return stream.field_selector, stream.label_selector


def stream_label(stream: SomeStream) -> str:
    """The stream's name in metrics: its resource, and how it is read when that differs (names and uids only)."""
    return stream.kind.plural + ("/metadata" if stream.kind.metadata_only else "")


def shared_streams(asked: Sequence[SomeStream]) -> list[tuple[SomeStream, list[SomeStream]]]:
    """The streams to open for the streams of one kind the analyses ask for, each with the readers it feeds. One when
    they ask the same selectors, or when each reader that asks fewer objects can tell its own (``selects``): the
    shared one then asks for every object. Otherwise one per selector, labelled with it, never two streams under
    one label (Prometheus would keep one of two series and drop the other)."""
    first = asked[0]
    asked_for = {selectors(s) for s in asked}
    if len(asked_for) == 1:
        return [(first, list(asked))]
    if all(s.selects is not None or selectors(s) == (None, None) for s in asked):
        return [(Stream(first.name, first.kind, first.namespace), list(asked))]
    return [(next(s for s in asked if selectors(s) == pair), [s for s in asked if selectors(s) == pair])
            for pair in sorted(asked_for, key=str)]


class Health(Observer):
    """One stream's health, as the metrics show it. Written by its reflector's thread under ``lock``."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.listed = False  # the first list answered (or the stream is unreadable or not served)
        self.readable = True
        self.served = True  # False while the server answers 404: its API (a CRD) is not installed
        self.up = False
        self.down_since: Optional[float] = time.monotonic()  # monotonic; None while up
        self.last_list: Optional[float] = None  # wall clock, for *_timestamp_seconds
        self.last_event: Optional[float] = None
        self.last_success: Optional[float] = None  # wall clock: the last list, established watch or event
        self.relists = 0
        self.errors = 0
        self.last_error = ""

    def failed(self, reason: str) -> None:
        with self.lock:
            self.errors += 1
            self.last_error = reason
            if self.up or self.down_since is None:
                self.down_since = time.monotonic()
            self.up = False

    def alive(self) -> None:
        with self.lock:
            self._alive()

    def _alive(self) -> None:  # with the lock held
        self.up, self.down_since, self.last_success = True, None, time.time()

    def down_for(self, now: float) -> float:
        return 0.0 if self.down_since is None else now - self.down_since


class Reader:
    """One analysis reading a shared stream: its store's name, whether it can be judged without it (a 403 there
    leaves it with no rows when it cannot), and what its own selectors select when the stream asks for more."""

    __slots__ = ("analysis", "name", "required", "selects", "unserved_ok")

    def __init__(self, analysis: Analysis, stream: SomeStream, shared: SomeStream) -> None:
        self.analysis, self.name, self.required = analysis, stream.name, stream.required
        # A kind newer than some clusters (Stream.unserved): while it is not served, judged without it.
        self.unserved_ok = bool(stream.unserved) and not stream.required
        self.selects = stream.selects if selectors(stream) != selectors(shared) else None

    def wants(self, obj: Object) -> bool:
        return self.selects is None or self.selects(obj)


class Shared:
    """One stream as the server sees it, and the analyses that read it, each under its own store name."""

    def __init__(self, stream: SomeStream, lock: threading.Lock, label: str) -> None:
        self.label = label
        self.health = Health(lock)
        self.readers: list[Reader] = []
        self.stream = stream
        # The uids its watch added since its last list, taken out again when it passes its bound (with the stream's
        # thread's lock held; the stream's thread alone writes it).
        self.added: set[str] = set()
        self.bound_said = ""  # the last bound it was refused at, said once (a run of them is one line)
        self.bound_at = -BOUND_RUN_SECONDS  # monotonic: when it was last refused at a bound

    def open_as(self) -> SomeStream:
        """The stream the reflector opens: never required (a 403 is the readers' to judge, each as it needs it),
        with a warning that says which analyses lose what."""
        blocked = [r.analysis.name for r in self.readers if r.required]
        partial = [r.analysis.name for r in self.readers if not r.required]
        effects = ([f"{' and '.join(blocked)} {_verb(blocked, 'reports')} nothing while it may not be read"]
                   if blocked else []) + \
                  ([f"{' and '.join(partial)} {_verb(partial, 'judges')} without it (that evidence is unknown)"]
                   if partial else [])
        unreadable = f"cannot list/watch {self.label} ({{reason}}): " + "; ".join(effects)
        stream = self.stream
        return Stream(self.label, stream.kind, stream.namespace, stream.field_selector, stream.label_selector,
                      unreadable=unreadable)  # kinds and analyses are named without braces: format() keeps them


class Judgment(Generic[Row]):
    """One judgment of an analysis: what it tells /metrics (``series``), built once from every row judged and the
    findings among them (by the analysis's verdict: a row set aside, kept, is in no series), and how many of each.
    The rows themselves are kept only when something reads them between judgments (``keep_rows``: a cloud census
    prices the findings' rows); otherwise each goes as soon as the series has read it: an analysis that judges
    one row at a time (the claims') never has them all alive at once. Kept, every analysis's rows were alive at
    once between judgments (20,000 at 10,000 PVs and claims, the soak's first judgment), and then the whole of
    the one being judged, a transient the heap kept."""

    __slots__ = ("_series", "count", "findings", "found", "judged")

    def __init__(self, judged: Iterable[Row], finding: Callable[[Row], bool], analysis: invocation.Analysis[Row],
                 keep_rows: bool = True) -> None:
        self.count = self.found = 0
        kept: list[Row] = []
        kept_findings: list[Row] = []

        def counted(rows: Iterable[Row]) -> Iterator[Row]:
            for row in rows:
                self.count += 1
                if finding(row):
                    self.found += 1
                    if keep_rows:
                        kept_findings.append(row)
                if keep_rows:
                    kept.append(row)
                yield row

        self._series = analysis.metrics(counted(judged), finding)  # the metrics read the rows, never the time: once
        self.judged: Sequence[Row] = kept
        self.findings: Sequence[Row] = kept_findings

    def series(self) -> Series:
        return self._series


class Judged(Protocol):
    """A judgment, its row type its own: what a scrape and the census read of it. ``count`` and ``found``: how many
    rows were judged and how many are findings; ``judged`` and ``findings``: those rows, as objects (the census
    narrows them to the rows it prices, by type), when the judgment keeps them (else empty)."""

    @property
    def count(self) -> int: ...

    @property
    def found(self) -> int: ...

    @property
    def judged(self) -> Sequence[object]: ...

    @property
    def findings(self) -> Sequence[object]: ...

    def series(self) -> Series: ...


class Analysis:
    """One analysis's stores and its last judgment. ``judgment`` None: not judged yet (some stream has not listed).
    ``judge``: the analysis over the stores (``kept_live`` builds it with the analysis's own rows), keeping the
    rows when ``keep_rows`` (a cloud census reads them: ``Live`` says so), else only what /metrics shows."""

    def __init__(self, name: str, spec: Follow[Row], judge: Callable[[Stores, bool], Judged]) -> None:
        self.name, self.streams, self.judge = name, spec.streams, judge
        self.keep_rows = False
        self.stores = spec.stores()
        self.unsynced = {s.name for s in spec.streams}
        self.refused: set[str] = set()  # the streams it cannot do without that may not be read (403), by label
        self.shared: list[Shared] = []
        self.judgment: Optional[Judged] = None
        self.assessed: Optional[float] = None  # wall clock of the last judgment
        self.dirty = False

    @property
    def rows(self) -> Optional[Sequence[object]]:
        """Every row of the last judgment when it keeps them (``keep_rows``; else empty), None before the first."""
        return None if self.judgment is None else self.judgment.judged

    @property
    def up(self) -> bool:
        """Judged, and every stream it reads is live now: its rows are current, not the last known."""
        return self.judgment is not None and all(s.health.up or not s.health.readable or not s.health.served
                                                 for s in self.shared)

    @property
    def served(self) -> bool:
        """Every kind it reads is served by this cluster (the snapshot CRDs may come and go while it runs), but for
        the kinds it can judge without (Stream.unserved)."""
        return all(s.health.served or self._judged_without(s) for s in self.shared)

    def _judged_without(self, shared: Shared) -> bool:
        return any(r.analysis is self and r.unserved_ok for r in shared.readers)


def kept_live(name: str, analysis: invocation.Analysis[Row], options: Options) -> Analysis:
    """``analysis`` kept live under ``name`` (its command's): its streams, and a judge that keeps its own rows when
    asked (``Analysis.keep_rows``), else its series alone."""
    spec = analysis.follow(options)

    def judge(stores: Stores, keep_rows: bool) -> Judged:
        return Judgment(spec.assess(stores), spec.finding, analysis, keep_rows)

    return Analysis(name, spec, judge)


class CensusState:
    """The cloud censuses: their last findings and how the last runs went."""

    def __init__(self, clouds: Mapping[str, str]) -> None:
        self.names = dict(clouds)  # the census's NAME (what its outcome calls it) -> the metrics' cloud label
        self.clouds = tuple(clouds.values())
        self.findings: Optional[list[CloudFinding]] = None  # None until a census answered
        # With --cost, from the same run as ``findings``: each PV's disk (found, missing or unknown) by PV name, to
        # price the leftover PVs a scrape names, and the prices (clouds/pricing.py's Costing); None without --cost.
        self.disks: Mapping[str, Union[CloudDisk, Absent]] = {}
        self.costing: Optional[Costing] = None
        # With --cost, the snapshots the snapshot contents with findings name, by (None, content), and their prices
        # (clouds/snapshot_census.py's outcome), from the last lookup that a cloud answered.
        self.snapshots: Mapping[tuple[Optional[str], str], Union[CloudSnapshot, Absent]] = {}
        self.snapshot_costing: Optional[Costing] = None
        self.last_success: dict[str, float] = {}
        self.failures: dict[str, int] = dict.fromkeys(self.clouds, 0)
        self.duration: Optional[float] = None
        self.errors: list[str] = []


class OneListAtATime:
    """The API, with its lists read one at a time across every stream. After an outage every stream relists at
    once, and each list holds a page or two in flight: one list at a time keeps that to one stream's pages (the
    soak's RSS rose by the sum of them at each outage). Watches are not gated."""

    def __init__(self, api: KubeAPI, max_items: Optional[int] = None) -> None:
        self.api, self.max_items = api, max_items
        self.gate = threading.Lock()

    def list(self, kind: Kind[R], namespace: Optional[str] = None, *, field_selector: Optional[str] = None,
             label_selector: Optional[str] = None) -> Pages[R]:
        return _GatedListing(self.api.list(kind, namespace, field_selector=field_selector,
                                           label_selector=label_selector, max_items=self.max_items), self.gate)

    def watch(self, kind: Kind[R], namespace: Optional[str], resource_version: str, *,
              field_selector: Optional[str] = None, label_selector: Optional[str] = None,
              timeout_seconds: int = 300, opened: Optional[Callable[[], None]] = None) -> Iterator[WatchEvent[R]]:
        return self.api.watch(kind, namespace, resource_version, field_selector=field_selector,
                              label_selector=label_selector, timeout_seconds=timeout_seconds, opened=opened)


class _GatedListing(Generic[R]):
    def __init__(self, listing: Pages[R], gate: threading.Lock) -> None:
        self.listing, self.gate = listing, gate

    @property
    def resource_version(self) -> Optional[str]:
        return self.listing.resource_version

    def __iter__(self) -> Iterator[R]:
        with self.gate:  # released when the pages are read, or the reading fails or is abandoned
            yield from self.listing

    def changed(self, held: Callable[[str, str], bool]) -> Iterator[Union[R, Unchanged]]:
        with self.gate:
            yield from self.listing.changed(held)


class Live:
    """The shared streams, the analyses fed from them, the judge and the census. ``start`` runs them in daemon
    threads; ``stop`` ends them (and every watch connection)."""

    def __init__(self, api: KubeAPI, analyses: Sequence[Analysis], settings: WatchSettings,
                 describe: Describe, census: Optional[Callable[[list[PersistentVolume]], CensusOutcome]] = None,
                 clouds: Mapping[str, str] = MappingProxyType({}), census_interval: float = 3600.0,
                 judge_every: float = 0.0, list_seconds: float = LIST_SECONDS,
                 snapshot_census: Optional[Callable[[Sequence[object]], SnapshotOutcome]] = None,
                 max_objects: int = MAX_STREAM_OBJECTS) -> None:
        self.api, self.settings, self.describe = api, settings, describe
        self.list_seconds, self.max_objects = list_seconds, max_objects
        self.lister = OneListAtATime(api, max_objects)
        self.judge_every = judge_every  # at most one judgment per this many seconds, however busy the streams
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.changed = threading.Event()
        self.analyses = list(analyses)
        asked: dict[Hashable, list[tuple[Analysis, SomeStream]]] = {}
        for analysis in self.analyses:
            for stream in analysis.streams:
                asked.setdefault(stream_key(stream), []).append((analysis, stream))
        self.streams: dict[Hashable, Shared] = {}
        for key, pairs in asked.items():
            opened = shared_streams([stream for _, stream in pairs])
            for opens, readers in opened:
                label = stream_label(opens)
                if len(opened) > 1 and selectors(opens) != (None, None):  # asked differently: said in its label
                    field, labels = selectors(opens)
                    label += "?" + "&".join(f"{name}={value}" for name, value in
                                           (("fieldSelector", field), ("labelSelector", labels)) if value)
                shared = self.streams[(key, selectors(opens))] = Shared(opens, self.lock, label)
                for analysis, stream in pairs:
                    if any(stream is reader for reader in readers):
                        shared.readers.append(Reader(analysis, stream, opens))
                        analysis.shared.append(shared)
        self.census_run, self.census_interval = census, census_interval
        self.snapshot_run = snapshot_census  # --cost: the clouds' snapshots of the contents with findings, priced
        for analysis in self.analyses:  # the census prices rows (and the snapshot census reads them) between judgments
            analysis.keep_rows = census is not None or snapshot_census is not None
        self.census = CensusState(clouds)
        self.threads: list[threading.Thread] = []

    # -- running -----------------------------------------------------------------------------------------

    def start(self) -> None:
        few_heaps()  # before the threads start: see exporter/heap.py
        targets: list[tuple[Callable[[], None], str]] = [
            (functools.partial(self._pump, shared), f"pvleft-serve-{shared.label}") for shared in self.streams.values()]
        targets.append((self._judge, "pvleft-serve-judge"))
        if self.census_run is not None:
            targets.append((self._census_loop, "pvleft-serve-census"))
        for target, name in targets:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self.threads.append(thread)

    def stop(self, within: float = 0.5) -> None:
        """End every stream: cut the watch connections so blocked reads end now, and wait at most ``within``."""
        self.stopping.set()
        self.changed.set()
        deadline = time.monotonic() + within
        while time.monotonic() < deadline and any(t.is_alive() for t in self.threads):
            self.api.abort_watches()
            for thread in self.threads:
                thread.join(timeout=0.02)

    def _pump(self, shared: Shared) -> None:
        """One reflector, reopened after anything that ends it: a daemon outlives a failed first list (it is
        counted as an error and retried), where a one-shot command would stop."""
        delay = bound_delay = self.settings.backoff_initial
        while not self.stopping.is_set():
            items = reflect(self.lister, shared.open_as(), self.settings, self.stopping, shared.health,
                            lazy_lists=True, held=lambda uid, version: self.held(shared, uid, version))
            try:
                for item in items:
                    self.take(shared, item)
                    delay = self.settings.backoff_initial
                # Stopped, or the stream may not be read (403): its evidence is unknown until it may. Ask again now
                # and then: a restarted server answers 403 until its RBAC cache syncs, and a grant may come later.
                self.stopping.wait(self.settings.backoff_max)
            except Oversized as exc:  # a bound: not an outage, and asking again at once would get the same
                if self.stopping.is_set():
                    return
                items.close()  # its watch connection or list reader goes now, not when the collector gets to it
                bound_delay = self._refused_at_bound(shared, str(exc), bound_delay)
                self.stopping.wait(bound_delay * random.uniform(0.8, 1.2))
                bound_delay = min(bound_delay * 2, self.settings.backoff_max * BOUND_BACKOFF_FACTOR)
            except NotFound:
                if self.stopping.is_set():
                    return
                # Not an outage: this cluster does not serve the kind (its CRD is not installed, or was removed).
                # Ask again now and then: an API installed later is picked up, as kubectl's discovery would.
                self.not_served(shared)
                delay = self.settings.backoff_initial
                self.stopping.wait(self.settings.backoff_max)
            except Exception as exc:
                if self.stopping.is_set():
                    return
                items.close()
                reason = self.describe(exc)
                shared.health.failed(reason)
                _log(f"cannot read {shared.label}: {reason}; retrying in {delay:.0f}s" if delay >= 1 else
                     f"cannot read {shared.label}: {reason}; retrying")
                self.stopping.wait(delay)
                delay = min(delay * 2, self.settings.backoff_max)

    def _refused_at_bound(self, shared: Shared, reason: str, delay: float) -> float:
        """A stream refused at a bound: down (``pvleft_stream_up`` 0, its error counted), said once for a run of
        them, what it held past its last list released; returns the backoff to wait (a new run starts over)."""
        shared.health.failed(reason)
        now = time.monotonic()
        if now - shared.bound_at > BOUND_RUN_SECONDS:  # within bounds that long: a new run
            shared.bound_said, delay = "", self.settings.backoff_initial
        shared.bound_at = now
        if reason != shared.bound_said:
            shared.bound_said = reason
            _log(f"cannot read {shared.label}: {reason}; its findings are stale until it can; asking again with "
                 f"backoff")
        release_free_memory()
        return delay

    def take(self, shared: Shared, item: StreamItem) -> None:
        """What one stream showed, applied to every analysis that reads it. A watch that adds past the stream's
        bound raises Oversized, what it added since the last list taken out first."""
        if isinstance(item, Synced):
            self._refill(shared, item)
            return
        now = time.time()
        with self.lock:
            health = shared.health
            if isinstance(item, Notice):
                if not item.unavailable or health.readable:  # asked again, still refused: said once
                    _log(item.message)
                if item.unavailable:
                    self._refused(shared)
                return
            health.last_event = now
            uid = uid_of(item.object)
            if item.type == "DELETED":
                shared.added.discard(uid)
            elif not any(reader.analysis.stores.holds_uid(reader.name, uid) for reader in shared.readers):
                shared.added.add(uid)
            for reader in shared.readers:
                # An object its selectors no longer select leaves its store, as the server's DELETED would say.
                change = item.type if item.type == "DELETED" or reader.wants(item.object) else "DELETED"
                reader.analysis.stores.apply(Changed(reader.name, change, item.object))
                reader.analysis.dirty = True
            held = max((reader.analysis.stores.size(reader.name) for reader in shared.readers), default=0)
            if held > self.max_objects:
                for reader in shared.readers:  # back to what its last list held (with the changes since)
                    reader.analysis.stores.forget(reader.name, shared.added)
                shared.added = set()
                self.changed.set()
                raise Oversized(f"its watch added past {self.max_objects:,} objects, more than one stream may hold "
                                f"here")
        self.changed.set()

    def _refused(self, shared: Shared) -> None:
        """A 403 (with the lock held): that evidence is unknown. An analysis that can judge without it does; one
        that cannot has no rows (absent, never zero) and ``pvleft_analysis_readable`` 0 until the stream may be
        read. Neither is an outage: the stream is answered, not down."""
        health = shared.health
        health.readable, health.listed, health.up, health.down_since = False, True, False, None
        for reader in shared.readers:
            analysis = reader.analysis
            if reader.required:
                analysis.refused.add(shared.label)
                analysis.stores.data[reader.name] = {}
                analysis.unsynced.add(reader.name)
                analysis.judgment = None
            else:
                analysis.stores.unavailable(reader.name)
                analysis.unsynced.discard(reader.name)
            analysis.dirty = True
        self.changed.set()

    def not_served(self, shared: Shared) -> None:
        """The server answers 404 for the stream's kind: its objects are gone with their API, and the analyses that
        read it have no rows (absent, never zero) while ``pvleft_analysis_served`` says why."""
        with self.lock:
            health = shared.health
            if health.served:
                blocked = [r.analysis.name for r in shared.readers if not r.unserved_ok]
                without = [r.analysis.name for r in shared.readers if r.unserved_ok]
                effects = ([f"{' and '.join(blocked)} {_verb(blocked, 'reports')} nothing until it is"]
                           if blocked else []) + \
                          ([f"{' and '.join(without)} {_verb(without, 'judges')} without it"] if without else [])
                _log(f"{shared.label} is not served by this cluster: {'; '.join(effects)}; asking again every "
                     f"{self.settings.backoff_max:.0f}s")
            # A 404 is an answer past authorization: a 403 said before (a restarted server's RBAC cache) is over.
            health.served, health.listed, health.up, health.down_since = False, True, False, None
            health.readable = True
            for reader in shared.readers:
                analysis = reader.analysis
                analysis.refused.discard(shared.label)
                if reader.unserved_ok:  # that evidence is unknown, as after a 403; the rest is judged
                    analysis.stores.unavailable(reader.name)
                    analysis.unsynced.discard(reader.name)
                    analysis.dirty = True
                    continue
                analysis.stores.data[reader.name] = {}
                analysis.unsynced.add(reader.name)
                analysis.judgment = None
        self.changed.set()

    def held(self, shared: Shared, uid: str, version: str) -> bool:
        """An analysis that reads the stream holds this object at this version: it has not changed, so a relist need
        not decode it (what each reader keeps of it is what it kept before). Every reader's store of one stream is
        filled and emptied together; only the stream's own thread writes them, and it is the one asking."""
        return any(reader.analysis.stores.holds(reader.name, uid, version) for reader in shared.readers)

    def _refill(self, shared: Shared, item: Synced) -> None:
        """A (re)list, read page by page: each object replaces its old copy at once, so memory never holds two
        copies of a store. Its analyses are not judged meanwhile (half old, half new evidence); scrapes go on,
        with their last rows."""
        with self.lock:
            # refused before (403), or not served (404), and answered now: a store that held nothing to fill
            readable_again = not shared.health.readable or not shared.health.served
            shared.health.readable = True
            for reader in shared.readers:
                reader.analysis.unsynced.add(reader.name)
                reader.analysis.refused.discard(shared.label)
                if readable_again:
                    reader.analysis.stores.data[reader.name] = {}
        seen: set[str] = set()
        fresh: list[set[str]] = [set() for _ in shared.readers]  # what this list added, by reader
        deadline = time.monotonic() + self.list_seconds
        try:
            for obj in item.objects:  # a page that fails raises here: the pump counts it and lists again
                if time.monotonic() > deadline:
                    raise ListTooLong(f"the list did not end within {self.list_seconds:g}s")
                if isinstance(obj, Unchanged):  # held already, at this version: nothing to replace
                    seen.add(obj.uid)
                    continue
                uid = uid_of(obj)
                with self.lock:
                    seen.add(uid)
                    for reader, added in zip(shared.readers, fresh, strict=True):
                        store = reader.analysis.stores.data.get(reader.name)
                        if store is not None and uid not in store:
                            added.add(uid)
                        if reader.wants(obj):
                            reader.analysis.stores.refill(reader.name, obj)
                        else:  # selected no more (a Pod that left Pending): out of this reader's store
                            reader.analysis.stores.apply(Changed(reader.name, "DELETED", obj))
        except BaseException:
            close = getattr(item.objects, "close", None)
            if close is not None:  # the list ends now: its page reader and the list gate are released at once
                close()
            with self.lock:  # a list given up: what only it had added goes with it (memory, and half evidence)
                for reader, added in zip(shared.readers, fresh, strict=True):
                    store = reader.analysis.stores.data.get(reader.name)
                    for uid in added if store is not None else ():
                        store.pop(uid, None)  # type: ignore[union-attr]
            raise
        with self.lock:
            shared.added = set()  # the list is the stream's state now: what the watch adds is counted from here
            for reader in shared.readers:
                reader.analysis.stores.refilled(reader.name, seen)
                reader.analysis.unsynced.discard(reader.name)
                reader.analysis.dirty = True
            health = shared.health
            if not health.served:
                _log(f"{shared.label} is served now")
            health.relists += health.listed and health.served  # a kind that appears lists for the first time
            health.listed, health.served, health.last_list = True, True, time.time()
            health._alive()
        self.changed.set()
        release_free_memory()  # the relist's page buffers are freed now; see exporter/heap.py

    def _judge(self) -> None:
        """Re-run each analysis whose evidence changed, once per burst: changes this close together are judged
        once (``settle``), as ``watch.follow`` does."""
        while not self.stopping.is_set():
            self.changed.wait()
            if self.stopping.wait(self.settings.settle):
                return
            self.changed.clear()
            started = time.monotonic()
            self.judge_once()
            release_free_memory()  # the last rows were just dropped: a judgment is 10,000 rows at once
            # Each judgment reads every store whole: under steady churn, judging once a burst is most of the CPU.
            if self.stopping.wait(max(0.0, self.judge_every - (time.monotonic() - started))):
                return

    def judge_once(self) -> None:
        """Judge every analysis whose evidence changed and whose streams have all listed."""
        for analysis in self.analyses:
            with self.lock:
                if not analysis.dirty or analysis.unsynced:
                    continue
                analysis.dirty = False
                # The last rows go before the new ones are built: judged beside them, two sets of rows (10,000
                # each) were alive at every judgment, and the heap kept that high-water mark (the soak's creep).
                # Scrapes wait for the lock meanwhile, and one in progress keeps the judgment it took.
                analysis.judgment = None
                try:
                    judgment = analysis.judge(analysis.stores, analysis.keep_rows)
                except Exception as exc:  # a bug of ours: one line, and no rows (up 0) rather than stale ones
                    _log(f"{analysis.name}: internal error ({type(exc).__name__})")
                    continue
                # Nobody prints "resolved" lines here: forget how objects left, or this grows forever.
                analysis.stores.departed.clear()
                # Under the lock: a stream that stopped being served meanwhile has emptied the rows.
                analysis.judgment, analysis.assessed = judgment, time.time()

    def _census_loop(self) -> None:
        assert self.census_run is not None
        leftovers = next((a for a in self.analyses if a.name == "leftovers"), None)
        from kubectl_pvleft.clouds.bounded import still_running

        while not self.stopping.is_set():
            volumes = self._volumes(leftovers)
            if volumes is None:  # the PVs have not listed yet: a census now would call every disk an orphan
                self.stopping.wait(1.0)
                continue
            if still_running():  # the last run, past its time, still waits on an SDK call: never two at once
                self.stopping.wait(1.0)
                continue
            self._take_census(volumes)
            if self.snapshot_run is not None:
                self._take_snapshot_census()
            self.stopping.wait(self.census_interval)

    def _volumes(self, leftovers: Optional[Analysis]) -> Optional[list[PersistentVolume]]:
        pvs = None if leftovers is None else stream_of(leftovers.streams, PERSISTENT_VOLUMES)
        if leftovers is None or pvs is None:
            return []
        with self.lock:
            return None if pvs.name in leftovers.unsynced else list(leftovers.stores[pvs] or ())

    def _take_census(self, volumes: list[PersistentVolume]) -> None:
        assert self.census_run is not None
        started = time.monotonic()
        crashed = ""
        try:
            outcome: Optional[CensusOutcome] = self.census_run(volumes)
        except Exception as exc:
            outcome, crashed = None, self.describe(exc)
        now = time.time()
        state = self.census
        state.duration = time.monotonic() - started
        failed = set(state.clouds) if outcome is None else set(state.clouds) - {state.names[n] for n in outcome.taken}
        for cloud in state.clouds:
            if cloud in failed:
                state.failures[cloud] += 1
            else:
                state.last_success[cloud] = now
        state.errors = [crashed] if outcome is None else list(outcome.errors)
        for message in state.errors:
            _log(message)
        if outcome is not None and outcome.taken:
            # Only the clouds that answered have findings (a failed one has none: its series go, and its
            # pvleft_census_last_success_timestamp_seconds says why).
            with self.lock:  # one run's findings, disks and prices together: a scrape never mixes two runs
                state.findings = list(outcome.findings)
                state.disks = outcome.disks if outcome.costing is not None else {}
                state.costing = outcome.costing

    def _take_snapshot_census(self) -> None:
        """The snapshots of the contents the snapshot analysis last reported with findings, looked up and priced.
        Nothing to do while it has no rows (not judged yet, or no snapshot CRDs here)."""
        assert self.snapshot_run is not None
        analysis = next((a for a in self.analyses if a.name == "snapshots"), None)
        with self.lock:
            rows = None if analysis is None else analysis.rows
        if rows is None:
            return
        try:
            outcome = self.snapshot_run(rows)
        except Exception as exc:
            _log(f"snapshot census: {self.describe(exc)}")
            return
        for message in outcome.errors:
            _log(message)
        if outcome.taken:
            with self.lock:
                self.census.snapshots, self.census.snapshot_costing = outcome.snapshots, outcome.costing

    # -- what a scrape and /healthz read -----------------------------------------------------------------

    def healthy(self, stale_after: float) -> tuple[bool, str]:
        """Ready (200) once every stream has answered: listed, or refused (403), or not served (404). Not ready
        (503) before, while a stream has been down ``stale_after`` (its findings are stale), and while no analysis
        can be judged at all (every one needs a kind it may not read). A kind it may not read is no reason to stay
        unready while the analyses that can do without it work: the answer names it, and
        ``pvleft_stream_readable`` 0 alerts."""
        now = time.monotonic()
        with self.lock:
            for shared in self.streams.values():
                health = shared.health
                if not health.listed:
                    return False, f"{shared.label}: not listed yet"
                if health.readable and health.served and not health.up and health.down_for(now) >= stale_after:
                    return False, f"{shared.label}: down for {health.down_for(now):.0f}s ({health.last_error})"
            served = [a for a in self.analyses if a.served]
            if served and all(a.refused for a in served):
                refused = sorted({label for a in served for label in a.refused})
                return False, f"no analysis can be judged: it may not read {', '.join(refused)} (403)"
            unreadable = sorted(s.label for s in self.streams.values() if s.health.served and not s.health.readable)
        return True, "ok" + (f" (may not read: {', '.join(unreadable)})" if unreadable else "")


def _verb(subjects: Sequence[str], singular: str) -> str:
    return singular if len(subjects) == 1 else singular[:-1]


def _log(message: str) -> None:
    try:
        print(f"warning: {one_line(shown(message))}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
