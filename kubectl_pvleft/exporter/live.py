"""Every analysis live at once, on shared streams, with each stream's health and the cloud censuses on a timer.

An analysis is judged only once every stream it reads has listed (rows from half the evidence would be wrong);
before that it has no rows at all, never zero rows. A stream that goes down keeps its last objects, so the
analysis keeps its last rows, and ``Analysis.up`` says they are stale.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Optional

from kubectl_pvleft.errors import NotFound
from kubectl_pvleft.exporter.heap import few_heaps, release_free_memory
from kubectl_pvleft.kube.api import KubeAPI, Unchanged
from kubectl_pvleft.kube.watch import Changed, Follow, Notice, Observer, Stores, Stream, Synced, WatchSettings, reflect, uid_of
from kubectl_pvleft.text import one_line, shown

Describe = Callable[[BaseException], str]


def stream_key(stream: Stream) -> Hashable:
    """Two analyses' streams are one stream when they ask the server the same question."""
    kind = stream.kind
    return (kind.prefix, kind.plural, kind.metadata_only, stream.namespace, stream.field_selector,
            stream.label_selector)


def stream_label(stream: Stream) -> str:
    """The stream's name in metrics: its resource, and how it is read when that differs (names and uids only)."""
    return stream.kind.plural + ("/metadata" if stream.kind.metadata_only else "")


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
        self.up, self.down_since = True, None

    def down_for(self, now: float) -> float:
        return 0.0 if self.down_since is None else now - self.down_since


class Shared:
    """One stream as the server sees it, and the analyses that read it, each under its own store name."""

    def __init__(self, stream: Stream, lock: threading.Lock) -> None:
        self.stream = stream
        self.label = stream_label(stream)
        self.health = Health(lock)
        self.readers: list[tuple[Analysis, str]] = []


class Analysis:
    """One analysis's stores and its last judgment. ``rows`` None: not judged yet (some stream has not listed)."""

    def __init__(self, name: str, spec: Follow[Any]) -> None:
        self.name, self.spec = name, spec
        self.stores = Stores([s.name for s in spec.streams], spec.primary, spec.keep, spec.departure)
        self.unsynced = {s.name for s in spec.streams}
        self.shared: list[Shared] = []
        self.rows: Optional[list[Any]] = None
        self.assessed: Optional[float] = None  # wall clock of the last judgment
        self.dirty = False

    @property
    def up(self) -> bool:
        """Judged, and every stream it reads is live now: its rows are current, not the last known."""
        return self.rows is not None and all(s.health.up or not s.health.readable for s in self.shared)

    @property
    def served(self) -> bool:
        """Every kind it reads is served by this cluster (the snapshot CRDs may come and go while it runs)."""
        return all(s.health.served for s in self.shared)


class CensusState:
    """The cloud censuses: their last findings and how the last runs went."""

    def __init__(self, clouds: Mapping[str, str]) -> None:
        self.names = dict(clouds)  # the census's NAME (what its outcome calls it) -> the metrics' cloud label
        self.clouds = tuple(clouds.values())
        self.findings: Optional[list[Any]] = None  # None until a census answered
        # With --cost, from the same run as ``findings``: each PV's disk (found, missing or unknown) by PV name, to
        # price the leftover PVs a scrape names, and the prices (clouds/pricing.py's Costing); None without --cost.
        self.disks: Mapping[str, Any] = {}
        self.costing: Optional[Any] = None
        # With --cost, the snapshots the snapshot contents with findings name, by content, and their prices
        # (clouds/snapshot_census.py's outcome), from the last lookup that a cloud answered.
        self.snapshots: Mapping[str, Any] = {}
        self.snapshot_costing: Optional[Any] = None
        self.last_success: dict[str, float] = {}
        self.failures: dict[str, int] = dict.fromkeys(self.clouds, 0)
        self.duration: Optional[float] = None
        self.errors: list[str] = []


class OneListAtATime:
    """The API, with its lists read one at a time across every stream. After an outage every stream relists at
    once, and each list holds a page or two in flight: one list at a time keeps that to one stream's pages (the
    soak's RSS rose by the sum of them at each outage). Watches are not gated."""

    def __init__(self, api: KubeAPI) -> None:
        self.api = api
        self.gate = threading.Lock()

    def list(self, *args: Any, **kwargs: Any) -> Any:
        return _GatedListing(self.api.list(*args, **kwargs), self.gate)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.api, name)


class _GatedListing:
    def __init__(self, listing: Any, gate: threading.Lock) -> None:
        self.listing, self.gate = listing, gate

    @property
    def resource_version(self) -> Optional[str]:
        version: Optional[str] = self.listing.resource_version
        return version

    def __iter__(self) -> Any:
        with self.gate:  # released when the pages are read, or the reading fails or is abandoned
            yield from self.listing

    def changed(self, held: Callable[[str, str], bool]) -> Any:
        with self.gate:
            yield from self.listing.changed(held)


class Live:
    """The shared streams, the analyses fed from them, the judge and the census. ``start`` runs them in daemon
    threads; ``stop`` ends them (and every watch connection)."""

    def __init__(self, api: KubeAPI, analyses: Sequence[tuple[str, Follow[Any]]], settings: WatchSettings,
                 describe: Describe, census: Optional[Callable[[list[Any]], Any]] = None,
                 clouds: Mapping[str, str] = MappingProxyType({}), census_interval: float = 3600.0,
                 judge_every: float = 0.0, snapshot_census: Optional[Callable[[list[Any]], Any]] = None) -> None:
        self.api, self.settings, self.describe = api, settings, describe
        self.lister: Any = OneListAtATime(api)
        self.judge_every = judge_every  # at most one judgment per this many seconds, however busy the streams
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.changed = threading.Event()
        self.analyses = [Analysis(name, spec) for name, spec in analyses]
        self.streams: dict[Hashable, Shared] = {}
        for analysis in self.analyses:
            for stream in analysis.spec.streams:
                shared = self.streams.get(stream_key(stream))
                if shared is None:
                    shared = self.streams[stream_key(stream)] = Shared(stream, self.lock)
                # An analysis that needs a stream makes it required for all: a 403 there is an error, not unknown.
                if stream.required and not shared.stream.required:
                    shared.stream = Stream(**{**{f: getattr(shared.stream, f) for f in shared.stream.__struct_fields__},
                                              "required": True})
                shared.readers.append((analysis, stream.name))
                analysis.shared.append(shared)
        self.census_run, self.census_interval = census, census_interval
        self.snapshot_run = snapshot_census  # --cost: the clouds' snapshots of the contents with findings, priced
        self.census = CensusState(clouds)
        self.threads: list[threading.Thread] = []

    # -- running -----------------------------------------------------------------------------------------

    def start(self) -> None:
        few_heaps()  # before the threads start: see exporter/heap.py
        targets: list[tuple[Callable[..., None], tuple[Any, ...], str]] = [
            (self._pump, (shared,), f"pvleft-serve-{shared.label}") for shared in self.streams.values()]
        targets.append((self._judge, (), "pvleft-serve-judge"))
        if self.census_run is not None:
            targets.append((self._census_loop, (), "pvleft-serve-census"))
        for target, args, name in targets:
            thread = threading.Thread(target=target, args=args, name=name, daemon=True)
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
        delay = self.settings.backoff_initial
        while not self.stopping.is_set():
            try:
                for item in reflect(self.lister, shared.stream, self.settings, self.stopping, shared.health,
                                    lazy_lists=True, held=lambda uid, version: self.held(shared, uid, version)):
                    self.take(shared, item)
                    delay = self.settings.backoff_initial
                # Stopped, or the stream may not be read (403): its evidence is unknown until it may. Ask again now
                # and then: a restarted server answers 403 until its RBAC cache syncs, and a grant may come later.
                self.stopping.wait(self.settings.backoff_max)
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
                reason = self.describe(exc)
                shared.health.failed(reason)
                _log(f"cannot read {shared.label}: {reason}; retrying in {delay:.0f}s" if delay >= 1 else
                     f"cannot read {shared.label}: {reason}; retrying")
                self.stopping.wait(delay)
                delay = min(delay * 2, self.settings.backoff_max)

    def take(self, shared: Shared, item: Any) -> None:
        """What one stream showed, applied to every analysis that reads it."""
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
                    health.readable, health.listed = False, True
                    for analysis, name in shared.readers:
                        analysis.stores.unavailable(name)
                        analysis.unsynced.discard(name)
                        analysis.dirty = True
                    self.changed.set()
                return
            health.last_event = now
            for analysis, name in shared.readers:
                analysis.stores.apply(Changed(name, item.type, item.object))
                analysis.dirty = True
        self.changed.set()

    def not_served(self, shared: Shared) -> None:
        """The server answers 404 for the stream's kind: its objects are gone with their API, and the analyses that
        read it have no rows (absent, never zero) while ``pvleft_analysis_served`` says why."""
        with self.lock:
            health = shared.health
            if health.served:
                _log(f"{shared.label} is not served by this cluster (no CRD): its analyses report nothing until "
                     f"it is; asking again every {self.settings.backoff_max:.0f}s")
            health.served, health.listed, health.up, health.down_since = False, True, False, None
            for analysis, name in shared.readers:
                analysis.stores.data[name] = {}
                analysis.unsynced.add(name)
                analysis.rows = None
        self.changed.set()

    def held(self, shared: Shared, uid: str, version: str) -> bool:
        """Every analysis that reads the stream holds this object at this version: a relist need not decode it.
        Only the stream's own thread writes its stores, and it is the one asking."""
        return all(analysis.stores.holds(name, uid, version) for analysis, name in shared.readers)

    def _refill(self, shared: Shared, item: Synced) -> None:
        """A (re)list, read page by page: each object replaces its old copy at once, so memory never holds two
        copies of a store. Its analyses are not judged meanwhile (half old, half new evidence); scrapes go on,
        with their last rows."""
        with self.lock:
            readable_again = not shared.health.readable  # refused before (403), answered now
            shared.health.readable = True
            for analysis, name in shared.readers:
                analysis.unsynced.add(name)
                if readable_again:
                    analysis.stores.data[name] = {}
        seen: set[str] = set()
        for obj in item.objects:  # a page that fails raises here: the pump counts it and lists again
            if isinstance(obj, Unchanged):  # held already, at this version: nothing to replace
                seen.add(obj.uid)
                continue
            with self.lock:
                seen.add(uid_of(obj))
                for analysis, name in shared.readers:
                    analysis.stores.refill(name, obj)
        with self.lock:
            for analysis, name in shared.readers:
                analysis.stores.refilled(name, seen)
                analysis.unsynced.discard(name)
                analysis.dirty = True
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
                try:
                    rows = analysis.spec.assess(analysis.stores)
                except Exception as exc:  # a bug of ours: one line, the analysis keeps its last rows (stale)
                    _log(f"{analysis.name}: internal error ({type(exc).__name__})")
                    continue
                # Nobody prints "resolved" lines here: forget how objects left, or this grows forever.
                analysis.stores.departed.clear()
                # Under the lock: a stream that stopped being served meanwhile has emptied the rows.
                analysis.rows, analysis.assessed = rows, time.time()

    def _census_loop(self) -> None:
        assert self.census_run is not None
        leftovers = next((a for a in self.analyses if a.name == "leftovers"), None)
        while not self.stopping.is_set():
            volumes = self._volumes(leftovers)
            if volumes is None:  # the PVs have not listed yet: a census now would call every disk an orphan
                self.stopping.wait(1.0)
                continue
            self._take_census(volumes)
            if self.snapshot_run is not None:
                self._take_snapshot_census()
            self.stopping.wait(self.census_interval)

    def _volumes(self, leftovers: Optional[Analysis]) -> Optional[list[Any]]:
        if leftovers is None:
            return []
        with self.lock:
            return None if "volumes" in leftovers.unsynced else list(leftovers.stores["volumes"] or ())

    def _take_census(self, volumes: list[Any]) -> None:
        assert self.census_run is not None
        started = time.monotonic()
        try:
            outcome = self.census_run(volumes)
        except Exception as exc:
            outcome, crashed = None, self.describe(exc)
        else:
            crashed = ""
        now = time.time()
        state = self.census
        state.duration = time.monotonic() - started
        failed = set(state.clouds) if outcome is None else set(state.clouds) - {state.names[n] for n in outcome.taken}
        for cloud in state.clouds:
            if cloud in failed:
                state.failures[cloud] += 1
            else:
                state.last_success[cloud] = now
        state.errors = [crashed] if crashed else list(outcome.errors)
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
        """200 once every stream has listed; 503 before, and while any stream has been down ``stale_after``."""
        now = time.monotonic()
        with self.lock:
            for shared in self.streams.values():
                health = shared.health
                if not health.listed:
                    return False, f"{shared.label}: not listed yet"
                if health.readable and health.served and not health.up and health.down_for(now) >= stale_after:
                    return False, f"{shared.label}: down for {health.down_for(now):.0f}s ({health.last_error})"
        return True, "ok"


def _log(message: str) -> None:
    try:
        print(f"warning: {one_line(shown(message))}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
